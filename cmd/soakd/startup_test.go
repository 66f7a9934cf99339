package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/lateproxy"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// lockedBuffer is a bytes.Buffer safe to read while soakd writes its log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lateRun is soakd (realMain, as the binary runs) started against targets
// that are not up yet.
type lateRun struct {
	base           string // http://127.0.0.1:PORT
	summary        string // SOAKD_SUMMARY_JSON
	cancel         context.CancelFunc
	done           chan int
	stdout, stderr *lockedBuffer
}

func startLate(t *testing.T, env map[string]string) *lateRun {
	t.Helper()
	port := testserver.FreePort(t)
	r := &lateRun{base: fmt.Sprintf("http://127.0.0.1:%d", port), summary: filepath.Join(t.TempDir(), "sum.json"),
		done: make(chan int, 1), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	full := map[string]string{"SOAKD_LISTEN": fmt.Sprintf("127.0.0.1:%d", port), "SOAKD_LOG_FORMAT": "json",
		"SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_SHUTDOWN_GRACE": "5s", "SOAKD_SUMMARY_JSON": r.summary}
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- realMain(ctx, nil, full, r.stdout, r.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Error("soakd did not end within a minute of the test's end")
		}
	})
	return r
}

func (r *lateRun) get(path string) (int, string) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(r.base + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var failedAttempts = regexp.MustCompile(`(\d+) attempts failed`)

// waitNotReady polls /readyz until it is 503 and its reason has every
// one of want and says that at least two attempts failed (so soakd has
// backed off and retried), checking on every poll that /healthz is 200.
// It returns the reason.
func (r *lateRun) waitNotReady(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		select {
		case code := <-r.done:
			r.done <- code // for the cleanup
			t.Fatalf("soakd ended (exit %d) while its target was down; readyz said %q\nstderr:\n%s", code, last, tail(r.stderr.String(), 3000))
		default:
		}
		if code, body := r.get("/healthz"); code != 0 && code != http.StatusOK {
			t.Fatalf("/healthz %d while waiting for the target: %s", code, body)
		}
		code, body := r.get("/readyz")
		last = body
		ok := code == http.StatusServiceUnavailable
		for _, w := range want {
			ok = ok && strings.Contains(body, w)
		}
		if m := failedAttempts.FindStringSubmatch(body); ok && m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 2 {
				return body
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("/readyz never said %q with two failed attempts; last: %q", want, last)
	return ""
}

// wait waits for soakd to exit and returns its code and summary.
func (r *lateRun) wait(t *testing.T) (int, *report.Summary) {
	t.Helper()
	var code int
	select {
	case code = <-r.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("soakd did not end within 3 minutes of its target coming up\nstderr:\n%s", tail(r.stderr.String(), 3000))
	}
	r.done <- code // for the cleanup
	b, err := os.ReadFile(r.summary)
	if err != nil {
		t.Fatalf("exit %d, no summary: %v\nstderr:\n%s", code, err, tail(r.stderr.String(), 3000))
	}
	var sum report.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	return code, &sum
}

// checkBooks checks a phase that ran: prepared, something acknowledged,
// scheduled = acknowledged + failed + dropped, nothing in flight.
func checkBooks(t *testing.T, sum *report.Summary, name, phase string) *report.WorkloadSummary {
	t.Helper()
	w := sum.Workload(name, phase)
	if w == nil {
		t.Fatalf("no %s phase of %s in the summary: %+v", phase, name, sum.Workloads)
	}
	if !w.Prepared || w.Units == 0 || w.Scheduled != w.Units+w.Failed+w.Dropped || w.InFlight != 0 {
		t.Errorf("%s %s: prepared %v, scheduled %d, acked %d, failed %d, dropped %d, in flight %d: want prepared, some acked, the books balanced",
			name, phase, w.Prepared, w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
	}
	return w
}

// A target that is not up when soakd starts (a database starting after
// its sidecar): soakd is alive (/healthz 200) but not ready, /readyz says
// which workload waits for which target (password redacted), at which
// step, the last error and the next retry; when the target comes up the
// workload starts, load phase included, and the run completes with every
// count adding up. Each sink, each workload kind, each kv LOAD mode, every
// target behind a proxy that refuses connections until the test lets it
// through.
func TestTargetUpAfterStart(t *testing.T) {
	const secret = "late-Pass-5rx"
	type tcase struct {
		name  string
		env   func(addr string) map[string]string
		want  []string // in /readyz while waiting, besides the proxy's address
		check func(t *testing.T, sum *report.Summary)
	}
	kv := func(load string) tcase {
		return tcase{
			name: "redis/kv/LOAD=" + load,
			env: func(addr string) map[string]string {
				return map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "redis://:" + secret + "@" + addr + "/0",
					"SOAKD_KV_LOAD": load, "SOAKD_KV_RECORDS": "500", "SOAKD_KV_LOAD_RATE": "5000", "SOAKD_KV_RATE": "300",
					"SOAKD_KV_DURATION": "2s", "SOAKD_KV_KEY_PREFIX": "late:"}
			},
			want: []string{"kv: connection error", "connect", "connection refused", "next retry in"},
			check: func(t *testing.T, sum *report.Summary) {
				checkBooks(t, sum, "kv", "run")
				l := sum.Workload("kv", "load")
				switch load {
				case "off":
					if l != nil {
						t.Errorf("LOAD=off ran a load phase: %+v", *l)
					}
				case "auto", "on":
					// auto runs first, on an empty server; on runs after
					// it, on a server that holds every record, and loads
					// them again.
					if l == nil {
						t.Fatalf("LOAD=%s: no load phase", load)
					}
					checkBooks(t, sum, "kv", "load")
					if l.Units != 500 || l.Failed != 0 {
						t.Errorf("LOAD=%s: load phase acked %d, failed %d, want all 500 records", load, l.Units, l.Failed)
					}
				}
			},
		}
	}
	redis := testserver.Redis(t, "--requirepass", secret)
	cases := []struct {
		srv *testserver.Server
		tcase
	}{
		// In this order on one server: auto loads, on loads again what
		// is there, off reads what they loaded.
		{redis, kv("auto")},
		{redis, kv("on")},
		{redis, kv("off")},
	}
	pg := testserver.Postgres(t)
	cases = append(cases, struct {
		srv *testserver.Server
		tcase
	}{pg, tcase{
		name: "postgres/series+queries",
		env: func(addr string) map[string]string {
			target := fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", secret, addr)
			return map[string]string{"SOAKD_WORKLOADS": "ingest,q",
				"SOAKD_INGEST_SOURCE": "devops", "SOAKD_INGEST_SCALE": "10", "SOAKD_INGEST_TARGET": target,
				"SOAKD_INGEST_RATE": "1000", "SOAKD_INGEST_BATCH_SIZE": "100", "SOAKD_INGEST_DURATION": "3s",
				"SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_SCALE": "10", "SOAKD_Q_TARGET": target,
				"SOAKD_Q_RATE": "10", "SOAKD_Q_WORKERS": "2", "SOAKD_Q_DURATION": "3s", "SOAKD_Q_QUERIES": "lastpoint,high-cpu-all"}
		},
		want: []string{"ingest: connection error", "q: connection error", "connect", "connection refused", "next retry in"},
		check: func(t *testing.T, sum *report.Summary) {
			checkBooks(t, sum, "ingest", "run")
			checkBooks(t, sum, "q", "run")
		},
	}})
	ts := testserver.TimescaleDB(t)
	cases = append(cases, struct {
		srv *testserver.Server
		tcase
	}{ts, tcase{
		name: "timescaledb/series",
		env: func(addr string) map[string]string {
			return map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_SCALE": "10",
				"SOAKD_IOT_TARGET": fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&dialect=timescaledb", addr),
				"SOAKD_IOT_RATE":   "1000", "SOAKD_IOT_BATCH_SIZE": "100", "SOAKD_IOT_DURATION": "2s"}
		},
		want: []string{"iot: connection error", "connect", "connection refused", "next retry in"},
		check: func(t *testing.T, sum *report.Summary) {
			checkBooks(t, sum, "iot", "run")
			// The hypertable was created through the wait.
			c := testserver.PGConn(t, ts.URL)
			var n int
			if err := c.QueryRow(t.Context(), "SELECT count(*) FROM timescaledb_information.hypertables").Scan(&n); err != nil || n == 0 {
				t.Errorf("%d hypertables (%v): want the workload's", n, err)
			}
		},
	}})
	if testserver.InfluxBinary() != "" || testserver.Required() {
		influx := testserver.Influx(t)
		cases = append(cases, struct {
			srv *testserver.Server
			tcase
		}{influx, tcase{
			name: "influx1/series",
			env: func(addr string) map[string]string {
				return map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_SCALE": "10",
					"SOAKD_IOT_TARGET": "influx1://" + addr + "?db=late", "SOAKD_IOT_RATE": "1000", "SOAKD_IOT_BATCH_SIZE": "100",
					"SOAKD_IOT_DURATION": "2s"}
			},
			want:  []string{"iot: connection error", "connect", "connection refused", "next retry in"},
			check: func(t *testing.T, sum *report.Summary) { checkBooks(t, sum, "iot", "run") },
		}})
	} else {
		t.Log("influxd not installed: the InfluxDB case is skipped")
	}
	for _, c := range cases {
		if !t.Run(c.name, func(t *testing.T) {
			p := lateproxy.New(t, c.srv.Addr)
			r := startLate(t, c.env(p.Addr()))
			reason := r.waitNotReady(t, append(c.want, p.Addr())...)
			t.Logf("/readyz while the target is down: %s", reason)
			if strings.Contains(reason, secret) {
				t.Errorf("/readyz shows the password: %s", reason)
			}
			p.Up(t)
			code, sum := r.wait(t)
			if code != cli.ExitOK {
				t.Fatalf("exit %d once the target came up\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), tail(r.stderr.String(), 3000))
			}
			if !strings.Contains(r.stderr.String(), "target not ready; retrying") {
				t.Errorf("the log does not say it waits for the target:\n%s", tail(r.stderr.String(), 3000))
			}
			if strings.Contains(r.stderr.String()+r.stdout.String(), secret) {
				t.Error("the password appears in the log or the summary")
			}
			c.check(t, sum)
		}) {
			return
		}
	}
}

// A stop signal while soakd waits for its target ends the run cleanly:
// exit 0, and the summary says the target never became ready and why.
func TestStopWhileWaitingForTarget(t *testing.T) {
	srv := testserver.Redis(t)
	p := lateproxy.New(t, srv.Addr) // never up
	r := startLate(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "redis://" + p.Addr() + "/0"})
	r.waitNotReady(t, "kv: connection error", p.Addr())
	r.cancel() // as SIGTERM: realMain's signal context is derived from it
	code, sum := r.wait(t)
	if code != cli.ExitOK {
		t.Fatalf("exit %d after a stop while waiting, want 0\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), tail(r.stderr.String(), 3000))
	}
	w := sum.Workload("kv", "run")
	if w == nil || w.Prepared || w.StoppedBy != "signal" || w.Failure != nil || w.LastError == nil || !strings.Contains(w.LastError.Text, "connection refused") {
		t.Errorf("summary entry %+v: want not prepared, stopped by signal, no failure, the last error", w)
	}
	if !strings.Contains(r.stdout.String(), "never became ready (stopped while waiting for it)") {
		t.Errorf("the text summary does not say it never became ready:\n%s", r.stdout.String())
	}
}

// START_TIMEOUT bounds the wait: a target not up by then fails the run
// (exit 1), naming the setting.
func TestStartTimeout(t *testing.T) {
	srv := testserver.Redis(t)
	p := lateproxy.New(t, srv.Addr) // never up
	r := startLate(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "redis://" + p.Addr() + "/0",
		"SOAKD_KV_START_TIMEOUT": "2s"})
	code, sum := r.wait(t)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, tail(r.stderr.String(), 3000))
	}
	if w := sum.Workload("kv", "run"); w == nil || w.Failure == nil || !strings.Contains(w.Failure.Reason, "SOAKD_KV_START_TIMEOUT=2s") ||
		!strings.Contains(w.Failure.Reason, "connection refused") {
		t.Errorf("summary entry %+v: want a failure naming SOAKD_KV_START_TIMEOUT and the last error", w)
	}
}

// A target that answers and refuses (wrong password, unknown database) is
// a configuration error: exit 2 at once, naming the setting, not a wait.
func TestRefusingTargetExits2(t *testing.T) {
	const secret, wrong = "right-Pass-8qd", "wrong-Pass-3jv"
	redis := testserver.Redis(t, "--requirepass", secret)
	pg := testserver.Postgres(t)
	certs := testserver.NewCerts(t, testserver.PostgresOwner())
	pgTLS := testserver.Postgres(t, testserver.PostgresTLS(certs, true))
	tlsTarget := func(ca string) string {
		q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {ca}, "sslcert": {certs.ClientCert}, "sslkey": {certs.ClientKey}}
		return fmt.Sprintf("postgres://postgres:%s@%s/postgres?%s", wrong, pgTLS.Addr, q.Encode())
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want []string
	}{
		"redis wrong password": {map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "redis://:" + wrong + "@" + redis.Addr + "/0"},
			[]string{"SOAKD_KV_TARGET: ", "WRONGPASS", "SOAKD_KV_PASSWORD"}},
		"redis no password": {map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "redis://" + redis.Addr + "/0", "SOAKD_KV_LOAD": "off"},
			[]string{"SOAKD_KV_TARGET: ", "NOAUTH"}},
		"postgres unknown database": {map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops",
			"SOAKD_IOT_TARGET": fmt.Sprintf("postgres://postgres:%s@%s/nosuchdb?sslmode=disable", wrong, pg.Addr)},
			[]string{"SOAKD_IOT_TARGET: ", `database "nosuchdb" does not exist`}},
		// A certificate that does not verify is refused for good: exit 2,
		// naming the CA file's parameter, not a wait for a target that is up.
		"postgres wrong CA": {map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_TARGET": tlsTarget(certs.OtherCA)},
			[]string{"SOAKD_IOT_TARGET: ", "not signed by a trusted authority", "set sslrootcert", "TLS certificate does not verify"}},
		"influx authentication": {nil, []string{"SOAKD_IOT_TARGET: ", "CREATE DATABASE"}},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.env == nil {
				// InfluxDB with authentication on and no credentials given:
				// it answers every statement with a refusal.
				influx := testserver.Influx(t, testserver.InfluxAuth())
				tc.env = map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops",
					"SOAKD_IOT_TARGET": "influx1://" + influx.Addr + "?db=x"}
			}
			r := startLate(t, tc.env)
			code, _ := r.wait(t)
			errs := r.stderr.String()
			if code != cli.ExitConfig {
				t.Fatalf("exit %d, want 2\nstderr:\n%s", code, tail(errs, 3000))
			}
			t.Logf("stderr ends: %s", tail(errs, 400))
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, tail(errs, 3000))
				}
			}
			if strings.Contains(errs+r.stdout.String(), wrong) || strings.Contains(errs+r.stdout.String(), secret) {
				t.Error("a password appears in the output")
			}
		})
	}
}
