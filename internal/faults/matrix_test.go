package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// TestMain checks that no goroutine outlives the tests. pgx closes
// connections to a server that stopped answering in the background, for
// up to 15 s after the sink's Close gave up on them (SIGTERM during a
// stall), so the check waits for them that long.
//
// toxiproxy's own toxic goroutines are not checked: a toxic's pipe can be
// left blocked on its channel when the proxy stops mid-stream (its stack
// holds only toxiproxy's functions); soakd's goroutines are.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		ignore := goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run")
		deadline := time.Now().Add(20 * time.Second)
		for goleak.Find(ignore) != nil && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
		}
		if err := goleak.Find(ignore); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// target is one kind of server of the matrix: how to start it, the
// workload that writes to it, and how many units it holds.
type target struct {
	name string
	// start starts the server. Its data survives SIGKILL: acknowledged
	// means durable, so what it holds after a crash can be compared.
	start func(t *testing.T) *testserver.Server
	// env is the workload writing to addr, into the space (database,
	// database index) named ns, created empty beforehand by prepare.
	env     func(addr, ns string, idx int) map[string]string
	prepare func(t *testing.T, srv *testserver.Server, ns string)
	// stored returns the units the server holds in ns, and how many of
	// them are distinct (a unit stored twice shows as stored > distinct).
	stored func(t *testing.T, srv *testserver.Server, ns string, idx int) (stored, distinct int64)
}

// common are the settings every case shares: a modest constant rate, a
// write timeout shorter than the faults that stall, retries.
func common(m map[string]string) map[string]string {
	for k, v := range map[string]string{"SOAKD_W_RATE": "1000", "SOAKD_W_WORKERS": "4", "SOAKD_W_TIMEOUT": "2s",
		"SOAKD_W_MAX_LAG": "1s", "SOAKD_W_RETRIES": "2", "SOAKD_W_RETRY_BACKOFF": "100ms"} {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

func seriesEnv(target string) map[string]string {
	return common(map[string]string{"SOAKD_W_SOURCE": "seq", "SOAKD_W_DEVICES": "20", "SOAKD_W_BATCH_SIZE": "50",
		"SOAKD_W_TARGET": target})
}

var targets = []target{
	{
		name: "postgres",
		// synchronous_commit on: a commit acknowledged is in the WAL, so
		// it survives SIGKILL (fsync stays off: the OS does not crash).
		start: func(t *testing.T) *testserver.Server {
			return testserver.Postgres(t, testserver.PostgresSettings("synchronous_commit=on"))
		},
		env: func(addr, ns string, _ int) map[string]string {
			return seriesEnv(fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, ns))
		},
		prepare: func(t *testing.T, srv *testserver.Server, ns string) { srv.CreateDatabase(t, ns) },
		stored: func(t *testing.T, srv *testserver.Server, ns string, _ int) (int64, int64) {
			var n, d int64
			err := pgConnect(t, srv, ns).QueryRow(t.Context(), "SELECT count(*), count(DISTINCT n) FROM seq").Scan(&n, &d)
			if err != nil && strings.Contains(err.Error(), "does not exist") {
				return 0, 0
			}
			if err != nil {
				t.Fatal(err)
			}
			return n, d
		},
	},
	{
		name: "influx1",
		// The WAL is written before a write is acknowledged.
		start: func(t *testing.T) *testserver.Server { return testserver.Influx(t) },
		env: func(addr, ns string, _ int) map[string]string {
			return seriesEnv(fmt.Sprintf("influx1://%s?db=%s", addr, ns))
		},
		prepare: func(*testing.T, *testserver.Server, string) {},
		stored: func(t *testing.T, srv *testserver.Server, ns string, _ int) (int64, int64) {
			// A point written twice is stored once (same series and time).
			n := influxCount(t, srv, ns)
			return n, n
		},
	},
	{
		name: "redis",
		// Every write in the append-only file before it is acknowledged.
		start: func(t *testing.T) *testserver.Server {
			return testserver.Redis(t, "--appendonly", "yes", "--appendfsync", "always", "--databases", "64")
		},
		// Inserts only: every operation adds a key of its own.
		env: func(addr, _ string, idx int) map[string]string {
			return common(map[string]string{"SOAKD_W_SOURCE": "kv", "SOAKD_W_WORKLOAD": "insert=1", "SOAKD_W_LOAD": "off",
				"SOAKD_W_RECORDS": "1", "SOAKD_W_DATA_TYPE": "string", "SOAKD_W_FIELDS": "1", "SOAKD_W_FIELD_LENGTH": "16",
				"SOAKD_W_PIPELINE": "10", "SOAKD_W_KEY_PREFIX": "f:", "SOAKD_W_TARGET": fmt.Sprintf("redis://%s/%d?index=false", addr, idx)})
		},
		prepare: func(*testing.T, *testserver.Server, string) {},
		stored: func(t *testing.T, srv *testserver.Server, _ string, idx int) (int64, int64) {
			n, err := redisAdmin(t, srv, idx).DBSize(t.Context()).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n, n
		},
	},
}

func pgConnect(t *testing.T, srv *testserver.Server, db string) *pgx.Conn {
	t.Helper()
	return testserver.PGConn(t, srv.Database(db))
}

func redisAdmin(t *testing.T, srv *testserver.Server, db int) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, DB: db, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func influxCount(t *testing.T, srv *testserver.Server, db string) int64 {
	t.Helper()
	return influxQuery(t, srv, db, "SELECT count(n) FROM seq")
}

// influxQuery runs a query answering one count, 0 when the database or
// the measurement is not there.
func influxQuery(t *testing.T, srv *testserver.Server, db, q string) int64 {
	t.Helper()
	code, body := srv.InfluxQuery(t, db, q, nil)
	var out struct {
		Results []struct {
			Error  string `json:"error"`
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil || code != 200 || len(out.Results) == 0 {
		t.Fatalf("count: HTTP %d %s (%v)", code, body, err)
	}
	r := out.Results[0]
	if r.Error != "" {
		if strings.Contains(r.Error, "database not found") {
			return 0
		}
		t.Fatalf("count: %s", r.Error)
	}
	if len(r.Series) == 0 || len(r.Series[0].Values) == 0 {
		return 0
	}
	n, _ := r.Series[0].Values[0][1].(float64)
	return int64(n)
}

// scene is one case's setting: the server, a proxy in front of it (the
// workload writes through the proxy), the run.
type scene struct {
	tg    *target
	srv   *testserver.Server
	proxy *Proxy
	ns    string
	idx   int
	r     *Run
}

// fault is one row of the matrix: what it does to a running workload
// (the scene's run has written for a moment already), and what must hold
// besides the checks of every case (Run.Check) and the count stored.
type fault struct {
	name string
	// env overrides the workload's settings.
	env map[string]string
	// before runs before the workload starts (a target down at start).
	before func(t *testing.T, s *scene)
	// inject makes the fault and lets it end; the run then must resume.
	inject func(t *testing.T, s *scene)
	// check checks the summary.
	check func(t *testing.T, s *scene, w *report.WorkloadSummary)
	// noResume: the run stops during the fault (inject stops it).
	noResume bool
	// short: runs under -short too.
	short bool
}

// hold waits d while the fault lasts, and returns the counts then.
func hold(t *testing.T, s *scene, d time.Duration) Counts {
	time.Sleep(d)
	return s.r.Now(t)
}

func wantClass(t *testing.T, w *report.WorkloadSummary, classes ...string) {
	t.Helper()
	n := int64(0)
	for _, c := range classes {
		n += w.Errors[c]
	}
	if n == 0 {
		t.Errorf("no %v errors counted: %v", classes, w.Errors)
	}
}

func onlyClasses(t *testing.T, w *report.WorkloadSummary, classes ...string) {
	t.Helper()
	for c, n := range w.Errors {
		ok := false
		for _, want := range classes {
			ok = ok || c == want
		}
		if n > 0 && !ok {
			t.Errorf("%d errors of class %s, want only %v: last %+v", n, c, classes, w.LastError)
		}
	}
}

func writeOps(w *report.WorkloadSummary) report.OpSummary {
	var o report.OpSummary
	for _, op := range w.Ops {
		if op.Count > o.Count {
			o = op
		}
	}
	return o
}

// stall is how long the faults that stop every answer last. A write
// sent as one begins must reach the end of its TIMEOUT (2 s) inside it,
// and on PostgreSQL also the second the sink then waits for the server to
// confirm a cancel request before it drops the connection: a write still
// open when the fault ends is answered, and acknowledged, instead of
// timing out. The rest leaves room for a process starved of CPU.
const stall = 2*time.Second + time.Second + 1500*time.Millisecond

var matrix = []fault{
	{
		name: "down at start",
		before: func(t *testing.T, s *scene) {
			s.proxy.Disable()
		},
		inject: func(t *testing.T, s *scene) {
			c := hold(t, s, 3*time.Second)
			if c.Ready || c.Acked > 0 {
				t.Errorf("target down: ready %v, %d units acknowledged", c.Ready, c.Acked)
			}
			// Every sink: setup (connect, prepare, probe) waits for the
			// target, so nothing is written while it is down.
			msg, class := "target not ready; retrying", "connection"
			if line, ok := s.r.Logged(zapcore.WarnLevel, msg, class); !ok {
				t.Errorf("no warning %q logged", msg)
			} else {
				t.Logf("logged: %s", line)
			}
			s.proxy.Enable(t)
			s.r.WaitFor(t, 15*time.Second, "readiness once the target is up", func(c Counts) bool { return c.Ready && c.Acked > 0 })
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			if !w.Prepared {
				t.Error("not prepared")
			}
			onlyClasses(t, w, "connection")
		},
		short: true,
	},
	{
		name: "latency and jitter",
		inject: func(t *testing.T, s *scene) {
			s.proxy.Add(t, "slow", "latency", "downstream", map[string]any{"latency": 300, "jitter": 100})
			hold(t, s, 3*time.Second)
			s.proxy.Remove(t, "slow")
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			o := writeOps(w)
			if o.Service.Max < 0.2 || o.Response.Max < 0.2 {
				t.Errorf("service max %.3fs, response max %.3fs: the 300±100 ms latency is hidden", o.Service.Max, o.Response.Max)
			}
			onlyClasses(t, w, "timeout")
		},
		short: true,
	},
	{
		name: "bandwidth limit",
		inject: func(t *testing.T, s *scene) {
			s.proxy.Add(t, "narrow", "bandwidth", "upstream", map[string]any{"rate": 4}) // KB/s
			hold(t, s, 3*time.Second)
			s.proxy.Remove(t, "narrow")
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			if o := writeOps(w); o.Response.Max < 0.5 {
				t.Errorf("response max %.3fs: 3 s at 4 KB/s does not show", o.Response.Max)
			}
			onlyClasses(t, w, "timeout", "connection")
		},
	},
	{
		name: "reset mid-write",
		inject: func(t *testing.T, s *scene) {
			// Replies are cut by a reset: the server may have stored what
			// soakd never hears of (in doubt, counted failed, not resent
			// unless resending is harmless).
			s.proxy.Add(t, "reset", "reset_peer", "downstream", map[string]any{"timeout": 0})
			hold(t, s, 2*time.Second)
			s.proxy.Remove(t, "reset")
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			wantClass(t, w, "connection")
			onlyClasses(t, w, "connection", "timeout")
		},
		short: true,
	},
	{
		name: "half-open",
		inject: func(t *testing.T, s *scene) {
			// Requests vanish, the connections stay open, no reply comes.
			s.proxy.Add(t, "blackhole", "timeout", "upstream", map[string]any{"timeout": 0})
			hold(t, s, stall)
			s.proxy.Remove(t, "blackhole")
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			wantClass(t, w, "timeout")
			onlyClasses(t, w, "timeout", "connection")
		},
		short: true,
	},
	{
		name: "stalled (SIGSTOP)",
		inject: func(t *testing.T, s *scene) {
			thaw := s.srv.Freeze(t)
			hold(t, s, stall)
			thaw()
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			wantClass(t, w, "timeout")
			onlyClasses(t, w, "timeout", "connection")
			if o := writeOps(w); o.Response.Max < 1.5 {
				t.Errorf("response max %.3fs: a 3 s stall does not show", o.Response.Max)
			}
		},
	},
	{
		name: "SIGTERM during a stall",
		env:  map[string]string{"SOAKD_SHUTDOWN_GRACE": "2s", "SOAKD_W_TIMEOUT": "30s"},
		inject: func(t *testing.T, s *scene) {
			thaw := s.srv.Freeze(t)
			defer thaw()
			time.Sleep(time.Second)
			w, took := s.r.Stop(t)
			t.Logf("returned %v after the stop", took.Round(time.Millisecond))
			// Without the grace the frozen writes would end at their
			// 30 s TIMEOUT: half of that tells the two apart, whatever
			// the load.
			if took > 15*time.Second {
				t.Errorf("the run returned %v after the stop, SHUTDOWN_GRACE is 2s (TIMEOUT 30s)", took)
			}
			if w.StoppedBy != "signal" || w.InFlight != 0 {
				t.Errorf("stopped by %q, %d in flight", w.StoppedBy, w.InFlight)
			}
			if w.DroppedAtShutdown+w.Failed == 0 {
				t.Errorf("writes cut at shutdown not counted: %+v", w)
			}
			s.r.Check(t, w)
			thaw()
		},
		noResume: true,
		short:    true,
	},
	{
		name: "killed (SIGKILL) and restarted",
		inject: func(t *testing.T, s *scene) {
			s.srv.Kill()
			hold(t, s, 2*time.Second)
			s.srv.Resume(t)
		},
		check: func(t *testing.T, s *scene, w *report.WorkloadSummary) {
			wantClass(t, w, "connection")
			onlyClasses(t, w, "connection", "timeout", "server")
		},
	},
}

// TestFaultMatrix runs every fault against every target, the workload
// writing through a toxiproxy proxy: errors classified and counted, the
// schedule on its clock, memory and work in flight bounded, the books
// balanced at every sample (Run.Check), writing resumed after the fault,
// and the units the server holds between acknowledged and acknowledged +
// failed (a failed write may have landed; none stored twice).
func TestFaultMatrix(t *testing.T) {
	for i := range targets {
		tg := &targets[i]
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			srv := tg.start(t)
			for j, f := range matrix {
				t.Run(f.name, func(t *testing.T) {
					if testing.Short() && !f.short {
						t.Skip("a slow fault; runs without -short")
					}
					s := &scene{tg: tg, srv: srv, proxy: NewProxy(t, srv.Addr), ns: fmt.Sprintf("fault%d", j), idx: j}
					tg.prepare(t, srv, s.ns)
					env := tg.env(s.proxy.Addr(), s.ns, s.idx)
					for k, v := range f.env {
						env[k] = v
					}
					if f.before != nil {
						f.before(t, s)
					}
					s.r = Start(t, env)
					if f.before == nil {
						s.r.WaitFor(t, 15*time.Second, "first writes", func(c Counts) bool { return c.Acked > 0 })
						time.Sleep(time.Second)
					}
					f.inject(t, s)
					if f.noResume {
						return
					}
					s.r.Resumed(t, s.r.Now(t), 20*time.Second)
					time.Sleep(time.Second)
					w, _ := s.r.Stop(t)
					s.r.Check(t, w)
					f.check(t, s, w)
					stored, distinct := tg.stored(t, srv, s.ns, s.idx)
					if stored < w.Units || stored > w.Units+w.Failed || distinct != stored {
						t.Errorf("the server holds %d units (%d distinct); acknowledged %d, failed %d", stored, distinct, w.Units, w.Failed)
					}
				})
			}
		})
	}
}
