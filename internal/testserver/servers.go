package testserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running test server.
type Server struct {
	*Proc
	Addr string // host:port
	Port int
	// URL is a ready-to-use target URL for soakd (postgres://, redis://, http://).
	URL string
	cmd Command
}

// Restart stops the server and starts it again on the same port and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Proc = s.Proc.Restart(t, s.cmd)
}

// StopKeep stops the server, keeping its data so Resume can start it again.
func (s *Server) StopKeep() { s.Proc.Stop() }

// Resume starts a server stopped with StopKeep.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	np, err := start(s.cmd)
	if err != nil {
		t.Fatalf("cannot start %s again: %v", s.cmd.Name, err)
	}
	t.Cleanup(func() { np.Stop() })
	if err := np.waitReady(s.cmd); err != nil {
		t.Fatalf("%s did not become ready again: %v\n%s", s.cmd.Name, err, np.Output())
	}
	s.Proc = np
}

// PostgresBinDir returns the newest /usr/lib/postgresql/N/bin holding a
// postgres binary, or "".
func PostgresBinDir() string {
	if d := os.Getenv("SOAKD_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	return ""
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// PostgresOption changes the configuration of a test PostgreSQL.
type PostgresOption func(*pgOptions)

type pgOptions struct {
	certs      *Certs
	clientCert bool
	settings   []string
}

// PostgresSettings adds server settings as name=value (e.g.
// "max_connections=8"); they win over the defaults.
func PostgresSettings(settings ...string) PostgresOption {
	return func(o *pgOptions) { o.settings = append(o.settings, settings...) }
}

// PostgresTLS turns TLS on (ssl=on) with certs' server certificate and key
// (certs made by NewCerts with owner PostgresOwner()). With clientCert,
// TCP connections must use TLS and present a client certificate signed by
// certs' CA (pg_hba hostssl ... clientcert=verify-ca); others are refused.
func PostgresTLS(certs *Certs, clientCert bool) PostgresOption {
	return func(o *pgOptions) { o.certs, o.clientCert = certs, clientCert }
}

// PostgresOwner is the OS user test PostgreSQL servers run as: postgres
// when the tests run as root, else "" (the current user).
func PostgresOwner() string {
	if os.Geteuid() == 0 {
		return "postgres"
	}
	return ""
}

// Postgres starts a fresh PostgreSQL cluster (initdb, trust auth, fsync
// off) on a free port. Its URL is postgres://postgres@127.0.0.1:PORT/postgres
// (with PostgresTLS, sslmode=verify-full against the test CA);
// PostgresSettings adds server settings.
// As root the server runs as the postgres user, as PostgreSQL requires.
func Postgres(t testing.TB, opts ...PostgresOption) *Server {
	t.Helper()
	bin, o := pgBinOptions(t, opts, "")
	return postgres(t, bin, "postgres", o)
}

// TimescaleDB starts a PostgreSQL cluster as Postgres does, with the
// timescaledb extension preloaded (shared_preload_libraries, telemetry
// off); a database gets it with CREATE EXTENSION timescaledb. The test is
// skipped (or fails under SOAKD_REQUIRE_SERVERS=1) when the extension is
// not installed in the PostgreSQL found: scripts/install-test-deps.sh
// builds it from ../shared/servers.
func TimescaleDB(t testing.TB, opts ...PostgresOption) *Server {
	t.Helper()
	bin, o := pgBinOptions(t, opts, " for TimescaleDB")
	if lib := TimescaleLib(bin); lib == "" {
		Unavailable(t, "no TimescaleDB extension (timescaledb.so) in the library directory of %s", bin)
	}
	o.settings = append([]string{"shared_preload_libraries=timescaledb", "timescaledb.telemetry_level=off"}, o.settings...)
	return postgres(t, bin, "timescaledb", o)
}

// pgBinOptions returns the PostgreSQL binaries to start and the options
// applied; without binaries the test is skipped (or fails under
// SOAKD_REQUIRE_SERVERS=1), the reason ending with forWhat.
func pgBinOptions(t testing.TB, opts []PostgresOption, forWhat string) (string, pgOptions) {
	t.Helper()
	var o pgOptions
	for _, opt := range opts {
		opt(&o)
	}
	bin := PostgresBinDir()
	if bin == "" {
		Unavailable(t, "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/postgres)%s", forWhat)
	}
	return bin, o
}

// TimescaleLib returns the timescaledb.so the PostgreSQL in bin would
// load, or "": pg_config's package library directory, else bin/../lib.
func TimescaleLib(bin string) string {
	lib := filepath.Join(filepath.Dir(bin), "lib")
	if out, err := exec.Command(filepath.Join(bin, "pg_config"), "--pkglibdir").Output(); err == nil {
		lib = strings.TrimSpace(string(out))
	}
	so := filepath.Join(lib, "timescaledb.so")
	if _, err := os.Stat(so); err != nil {
		return ""
	}
	return so
}

// postgres starts a cluster from the binaries in bin, named name in
// messages, configured by o.
func postgres(t testing.TB, bin, name string, o pgOptions) *Server {
	t.Helper()
	owner := ""
	if os.Geteuid() == 0 {
		owner = "postgres"
	}
	dir := TempDir(t, owner)
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.Dir = dir
	if owner != "" {
		uid, gid, err := lookupUser(owner)
		if err != nil {
			t.Fatalf("%v", err)
		}
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		initdb.Env = append(os.Environ(), "HOME="+dir)
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb failed: %v\n%s", err, out)
	}
	if o.certs != nil && o.clientCert {
		hba := "local all all trust\nhostssl all all 127.0.0.1/32 trust clientcert=verify-ca\nhostssl all all ::1/128 trust clientcert=verify-ca\n"
		if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		isready := filepath.Join(bin, "pg_isready")
		args := []string{"-D", data, "-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port),
			"-c", "unix_socket_directories=" + dir, "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=200"}
		for _, kv := range o.settings {
			args = append(args, "-c", kv)
		}
		c := Command{
			Name:       name,
			Path:       filepath.Join(bin, "postgres"),
			Args:       args,
			Dir:        dir,
			AsUser:     owner,
			StopSignal: syscall.SIGINT, // fast shutdown
			Ready: func(ctx context.Context) error {
				out, err := exec.CommandContext(ctx, isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port)).CombinedOutput()
				if err != nil {
					return fmt.Errorf("pg_isready: %v %s", err, out)
				}
				return nil
			},
		}
		url := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", addr)
		if o.certs != nil {
			c.Args = append(c.Args, "-c", "ssl=on", "-c", "ssl_cert_file="+o.certs.ServerCert,
				"-c", "ssl_key_file="+o.certs.ServerKey, "-c", "ssl_ca_file="+o.certs.CA)
			url = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=verify-full&sslrootcert=%s", addr, o.certs.CA)
		}
		return c, url
	})
}

// RedisBinary finds redis-server; the test is skipped (or fails under
// SOAKD_REQUIRE_SERVERS=1) when there is none.
func RedisBinary(t testing.TB) string {
	t.Helper()
	bin := FindBinary("redis-server", "/usr/bin", "/usr/local/bin")
	if bin == "" {
		Unavailable(t, "no redis-server binary")
	}
	return bin
}

// Redis starts redis-server without persistence on a free port, with any
// extra arguments (e.g. "--cluster-enabled", "yes"; relative paths are in
// its data directory). Its URL is redis://127.0.0.1:PORT/0.
func Redis(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := RedisBinary(t)
	dir := TempDir(t, "")
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		c := Command{
			Name: "redis-server",
			Path: bin,
			Args: append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
				"--dir", dir, "--protected-mode", "yes", "--daemonize", "no"}, extra...),
			Dir:   dir,
			Ready: redisPing(addr),
		}
		return c, "redis://" + addr + "/0"
	})
}

// RedisTLS starts redis-server serving TLS only (no plain port) with
// certs' server certificate; with clientCert it requires a client
// certificate signed by certs' CA (tls-auth-clients yes). Its URL is
// rediss://127.0.0.1:PORT/0.
func RedisTLS(t testing.TB, certs *Certs, clientCert bool, extra ...string) *Server {
	t.Helper()
	bin := RedisBinary(t)
	dir := TempDir(t, "")
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		auth := "no"
		if clientCert {
			auth = "yes"
		}
		cfg, err := tlsClientConfig(certs)
		if err != nil {
			t.Fatal(err)
		}
		c := Command{
			Name: "redis-server",
			Path: bin,
			Args: append([]string{"--bind", "127.0.0.1", "--port", "0", "--tls-port", strconv.Itoa(port),
				"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", certs.CA,
				"--tls-auth-clients", auth, "--save", "", "--appendonly", "no",
				"--dir", dir, "--protected-mode", "yes", "--daemonize", "no"}, extra...),
			Dir:   dir,
			Ready: redisPingDial(addr, cfg),
		}
		return c, "rediss://" + addr + "/0"
	})
}

// tlsClientConfig trusts certs' CA and presents its client certificate.
func tlsClientConfig(certs *Certs) (*tls.Config, error) {
	ca, err := os.ReadFile(certs.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func redisPing(addr string) func(ctx context.Context) error { return redisPingDial(addr, nil) }

func redisPingDial(addr string, tc *tls.Config) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var conn net.Conn
		var err error
		if tc != nil {
			d := tls.Dialer{Config: tc}
			conn, err = d.DialContext(ctx, "tcp", addr)
		} else {
			var d net.Dialer
			conn, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return err
		}
		defer conn.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return err
		}
		// NOAUTH: up, and asking for the password (--requirepass).
		if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
			return fmt.Errorf("PING answered %q", line)
		}
		return nil
	}
}

// InfluxBinary finds influxd (1.8, installed with go install).
func InfluxBinary() string {
	if p := os.Getenv("SOAKD_INFLUXD"); p != "" {
		return p
	}
	return FindBinary("influxd", GoBinDirs()...)
}

// InfluxOption changes the configuration of a test InfluxDB.
type InfluxOption func(*influxOptions)

type influxOptions struct {
	auth  bool
	data  []string
	http  []string
	certs *Certs
}

// InfluxTLS serves HTTPS only, with certs' server certificate; the URL
// becomes https://127.0.0.1:PORT.
func InfluxTLS(certs *Certs) InfluxOption { return func(o *influxOptions) { o.certs = certs } }

// InfluxAuth turns authentication on (with no user yet, InfluxDB lets the
// first admin be created without credentials).
func InfluxAuth() InfluxOption { return func(o *influxOptions) { o.auth = true } }

// InfluxData adds settings (TOML lines such as
// `cache-max-memory-size = "1m"`) to the [data] section of the
// configuration.
func InfluxData(lines ...string) InfluxOption {
	return func(o *influxOptions) { o.data = append(o.data, lines...) }
}

// InfluxHTTP adds settings (TOML lines such as
// `max-concurrent-write-limit = 1`) to the [http] section of the
// configuration.
func InfluxHTTP(lines ...string) InfluxOption {
	return func(o *influxOptions) { o.http = append(o.http, lines...) }
}

// Influx starts InfluxDB 1.x (influxd) on a free port with reporting off.
// Its URL is http://127.0.0.1:PORT.
func Influx(t testing.TB, opts ...InfluxOption) *Server {
	t.Helper()
	bin := InfluxBinary()
	if bin == "" {
		Unavailable(t, "no influxd binary (go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10)")
	}
	var o influxOptions
	for _, opt := range opts {
		opt(&o)
	}
	dir := TempDir(t, "")
	return startOnFreePorts(t, 2, func(ports []int) (Command, *Server) {
		port, rpc := ports[0], ports[1]
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = "%[2]s/meta"
[data]
  dir = "%[2]s/data"
  wal-dir = "%[2]s/wal"
  query-log-enabled = false
  wal-fsync-delay = "100ms"
%[8]s[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "%[3]s"
  log-enabled = false
  flux-enabled = false
  auth-enabled = %[4]t
  https-enabled = %[5]t
  https-certificate = "%[6]s"
  https-private-key = "%[7]s"
%[9]s[continuous_queries]
  enabled = false
[logging]
  suppress-logo = true
  level = "warn"
`, rpc, dir, addr, o.auth, o.certs != nil, certPath(o.certs, false), certPath(o.certs, true), dataLines(o.data), dataLines(o.http))
		cf := filepath.Join(dir, "influxdb.conf")
		if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c := Command{
			Name:  "influxd",
			Path:  bin,
			Args:  []string{"run", "-config", cf},
			Dir:   dir,
			Ready: HTTPReady("http://" + addr + "/ping"),
		}
		url := "http://" + addr
		if o.certs != nil {
			tc, err := tlsClientConfig(o.certs)
			if err != nil {
				t.Fatal(err)
			}
			url = "https://" + addr
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc}, Timeout: 5 * time.Second}
			c.Ready = httpReady(hc, url+"/ping", "", "")
		}
		return c, &Server{Addr: addr, Port: port, URL: url}
	})
}

func certPath(c *Certs, key bool) string {
	switch {
	case c == nil:
		return ""
	case key:
		return c.ServerKey
	}
	return c.ServerCert
}

func dataLines(lines []string) string {
	s := ""
	for _, l := range lines {
		s += "  " + l + "\n"
	}
	return s
}

// Prometheus starts a Prometheus server (with native histograms enabled)
// that scrapes the given targets (host:port) every scrapeEvery. Its URL is
// http://127.0.0.1:PORT.
func Prometheus(t testing.TB, scrapeEvery time.Duration, targets ...string) *Server {
	t.Helper()
	bin := FindBinary("prometheus", "/usr/bin", "/usr/local/bin")
	if bin == "" {
		Unavailable(t, "no prometheus binary (apt-get install prometheus)")
	}
	dir := TempDir(t, "")
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		tl := ""
		for i, tg := range targets {
			if i > 0 {
				tl += ", "
			}
			tl += strconv.Quote(tg)
		}
		conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: soakd\n    static_configs:\n      - targets: [%s]\n",
			scrapeEvery, scrapeEvery, tl)
		cf := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c := Command{
			Name: "prometheus",
			Path: bin,
			Args: []string{"--config.file=" + cf, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
				"--web.listen-address=" + addr, "--enable-feature=native-histograms"},
			Dir:   dir,
			Ready: HTTPReady("http://" + addr + "/-/ready"),
		}
		return c, "http://" + addr
	})
}

// readyClient polls readiness without keeping connections (and their
// goroutines) alive after the check.
var readyClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// HTTPReady is a Ready function that succeeds once GET url answers 2xx.
func HTTPReady(url string) func(ctx context.Context) error {
	return httpReady(readyClient, url, "", "")
}

// httpReady succeeds once GET url answers 2xx through hc, with basic
// auth when user is set.
func httpReady(hc *http.Client, url, user, password string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// VictoriaMetrics starts a single-node victoria-metrics on a free port,
// with flags added to its command line. Its URL is http://127.0.0.1:PORT.
func VictoriaMetrics(t testing.TB, flags ...string) *Server {
	t.Helper()
	bin := FindBinary("victoria-metrics", GoBinDirs()...)
	if bin == "" {
		Unavailable(t, "no victoria-metrics binary (go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.151.0)")
	}
	dir := TempDir(t, "")
	return startOnFreePort(t, func(port int, addr string) (Command, string) {
		c := Command{
			Name: "victoria-metrics",
			Path: bin,
			Args: append([]string{"-httpListenAddr=" + addr, "-storageDataPath=" + filepath.Join(dir, "data"), "-retentionPeriod=100y",
				"-loggerLevel=ERROR"}, flags...),
			Dir:   dir,
			Ready: HTTPReady("http://" + addr + "/health"),
		}
		return c, "http://" + addr
	})
}
