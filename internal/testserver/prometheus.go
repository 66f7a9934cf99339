package testserver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PrometheusReceiver starts a Prometheus server that takes remote writes
// (--web.enable-remote-write-receiver on /api/v1/write) and scrapes
// nothing, with a retention of 100 years so that data sets of any date
// stay. oooWindow > 0 accepts samples up to that much older than the
// newest of their series (storage.tsdb.out_of_order_time_window); 0
// refuses them, as Prometheus does by default. Its URL is
// http://127.0.0.1:PORT.
func PrometheusReceiver(t testing.TB, oooWindow time.Duration) *Server {
	t.Helper()
	bin := FindBinary("prometheus", "/usr/bin", "/usr/local/bin")
	if bin == "" {
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
	return startOnFreePorts(t, 1, func(ports []int) (Command, *Server) {
		port := ports[0]
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		c := Command{
			Name: "prometheus",
			Path: bin,
			Args: []string{"--config.file=" + cf, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
				"--storage.tsdb.retention.time=100y", "--web.listen-address=" + addr,
				"--web.enable-remote-write-receiver", "--log.level=warn"},
			Dir:   dir,
			Ready: HTTPReady("http://" + addr + "/-/ready"),
		}
		return c, &Server{Addr: addr, Port: port, URL: "http://" + addr}
	})
}

// promDuration writes d in Prometheus' duration grammar (whole seconds
// at least).
func promDuration(d time.Duration) string {
	return fmt.Sprintf("%ds", max(int64(d/time.Second), 1))
}
