package testserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The harness itself: each server comes up, answers, and stops.
func TestServersStart(t *testing.T) {
	ctx := context.Background()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		s := Postgres(t)
		if err := DialReady(s.Addr)(ctx); err != nil {
			t.Fatal(err)
		}
		s.Restart(t)
		if err := DialReady(s.Addr)(ctx); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	})
	t.Run("timescaledb", func(t *testing.T) {
		t.Parallel()
		s := TimescaleDB(t)
		conn := PGConn(t, s.URL)
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS timescaledb"); err != nil {
			t.Fatal(err)
		}
		var version string
		if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'").Scan(&version); err != nil {
			t.Fatal(err)
		}
		t.Logf("timescaledb %s", version)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		s := Redis(t)
		if err := redisPing(s.Addr)(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("influx", func(t *testing.T) {
		t.Parallel()
		s := Influx(t)
		if err := HTTPReady(s.URL + "/ping")(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("victoria-metrics", func(t *testing.T) {
		t.Parallel()
		s := VictoriaMetrics(t)
		if err := HTTPReady(s.URL + "/health")(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("redis cluster node", func(t *testing.T) {
		t.Parallel()
		s := Redis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err := redisPing(s.Addr)(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("prometheus", func(t *testing.T) {
		t.Parallel()
		s := Prometheus(t, time.Second, "127.0.0.1:1")
		if err := HTTPReady(s.URL + "/-/healthy")(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("prometheus receiver", func(t *testing.T) {
		t.Parallel()
		s := PrometheusReceiver(t, time.Minute)
		if err := HTTPReady(s.URL + "/-/healthy")(ctx); err != nil {
			t.Fatal(err)
		}
		s.Restart(t)
		if err := HTTPReady(s.URL + "/-/ready")(ctx); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	})
	t.Run("prometheus v3 receiver", func(t *testing.T) {
		t.Parallel()
		s := PrometheusReceiver(t, time.Minute, PrometheusV3())
		// A binary built with go install has no version in its build
		// info: its flags tell that its receiver takes 2.0.
		resp, err := http.Get(s.URL + "/api/v1/status/flags")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "io.prometheus.write.v2.Request") {
			t.Errorf("flags %s: the receiver does not take Remote-Write 2.0", body)
		}
	})
}

// Without timescaledb.so beside the server, TimescaleDB reports it
// missing (and the test skips, or fails under SOAKD_REQUIRE_SERVERS=1).
func TestTimescaleLibMissing(t *testing.T) {
	if lib := TimescaleLib(t.TempDir() + "/bin"); lib != "" {
		t.Errorf("TimescaleLib of an empty directory = %q", lib)
	}
}

// A server whose port another process holds exits "address already in
// use"; it is started again on a port of its own.
func TestStartAgainWhenThePortIsTaken(t *testing.T) {
	bin := RedisBinary(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	attempts := 0
	s := startOnFreePorts(t, 1, func(ports []int) (Command, *Server) {
		attempts++
		port := ports[0]
		if attempts == 1 {
			port = taken
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		return Command{Name: "redis-server", Path: bin, Dir: TempDir(t, ""), Ready: redisPing(addr),
			Args: []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--daemonize", "no"}}, &Server{Addr: addr, Port: port}
	})
	if attempts != 2 || s.Port == taken {
		t.Fatalf("%d attempts, serving on %d (the taken port is %d): want a second attempt on another port", attempts, s.Port, taken)
	}
}
