package testserver

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PrometheusOption changes the configuration of a test Prometheus.
type PrometheusOption func(*promOptions)

type promOptions struct {
	certs                *Certs
	user, password, hash string
	v3                   bool
	features             []string
}

// PrometheusV3 runs Prometheus v3 (prometheus3, which
// scripts/install-test-deps.sh builds from github.com/prometheus/prometheus
// v0.316.0, Prometheus 3.16) instead of Debian's 2.42: its receiver takes
// Remote-Write 2.0 (io.prometheus.write.v2.Request) beside 1.0.
func PrometheusV3() PrometheusOption { return func(o *promOptions) { o.v3 = true } }

// PrometheusFeatures turns on Prometheus' feature flags
// (--enable-feature), such as v3's metadata-wal-records, without which
// its receiver drops the metadata a 2.0 request carries.
func PrometheusFeatures(names ...string) PrometheusOption {
	return func(o *promOptions) { o.features = append(o.features, names...) }
}

// PrometheusTLS serves HTTPS only, with certs' server certificate (its
// web configuration's tls_server_config); the URL becomes
// https://127.0.0.1:PORT.
func PrometheusTLS(certs *Certs) PrometheusOption { return func(o *promOptions) { o.certs = certs } }

// PrometheusBasicAuth asks every request for basic auth as user, whose
// password's bcrypt hash is hash (basic_auth_users); the readiness check
// sends password.
func PrometheusBasicAuth(user, password, hash string) PrometheusOption {
	return func(o *promOptions) { o.user, o.password, o.hash = user, password, hash }
}

// PrometheusReceiver starts a Prometheus server that takes remote writes
// (--web.enable-remote-write-receiver on /api/v1/write) and deletes
// series (--web.enable-admin-api), and scrapes nothing, with a retention of 100 years so that data sets of any date
// stay. oooWindow > 0 accepts samples up to that much older than the
// newest of their series (storage.tsdb.out_of_order_time_window); 0
// refuses them, as Prometheus does by default. Its URL is
// http://127.0.0.1:PORT.
//
// Options serve it over TLS (PrometheusTLS) and behind basic auth
// (PrometheusBasicAuth), through its web configuration file, and run
// Prometheus v3 instead (PrometheusV3).
func PrometheusReceiver(t testing.TB, oooWindow time.Duration, opts ...PrometheusOption) *Server {
	t.Helper()
	var o promOptions
	for _, opt := range opts {
		opt(&o)
	}
	bin := FindBinary("prometheus", "/usr/bin", "/usr/local/bin")
	if o.v3 {
		bin = FindBinary("prometheus3", GoBinDirs()...)
	}
	switch {
	case bin == "" && o.v3:
		Unavailable(t, "no prometheus3 binary (scripts/install-test-deps.sh builds it: go install github.com/prometheus/prometheus/cmd/prometheus@v0.316.0, renamed)")
	case bin == "":
		Unavailable(t, "no prometheus binary (apt-get install prometheus)")
	}
	dir := TempDir(t, "")
	conf := "global: {}\n"
	if oooWindow > 0 {
		conf += fmt.Sprintf("storage:\n  tsdb:\n    out_of_order_time_window: %s\n", promDuration(oooWindow))
	}
	cf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config.file=" + cf, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--storage.tsdb.retention.time=100y", "--web.enable-remote-write-receiver", "--web.enable-admin-api", "--log.level=warn"}
	if o.v3 {
		args = append(args, "--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest",
			"--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request")
	}
	if len(o.features) > 0 {
		args = append(args, "--enable-feature="+strings.Join(o.features, ","))
	}
	web := ""
	if o.certs != nil {
		web += fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", o.certs.ServerCert, o.certs.ServerKey)
	}
	if o.user != "" {
		web += fmt.Sprintf("basic_auth_users:\n  %s: %s\n", o.user, o.hash)
	}
	if web != "" {
		wf := filepath.Join(dir, "web.yml")
		if err := os.WriteFile(wf, []byte(web), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--web.config.file="+wf)
	}
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		url := "http://" + addr
		tr := &http.Transport{DisableKeepAlives: true}
		if o.certs != nil {
			tc, err := tlsClientConfig(o.certs)
			if err != nil {
				t.Fatal(err)
			}
			tr.TLSClientConfig, url = tc, "https://"+addr
		}
		hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		c := Command{
			Name:  "prometheus",
			Path:  bin,
			Args:  append(args, "--web.listen-address="+addr),
			Dir:   dir,
			Ready: httpReady(hc, url+"/-/ready", o.user, o.password),
		}
		return c, url
	})
}

// promDuration writes d in Prometheus' duration grammar (whole seconds
// at least).
func promDuration(d time.Duration) string {
	return fmt.Sprintf("%ds", max(int64(d/time.Second), 1))
}
