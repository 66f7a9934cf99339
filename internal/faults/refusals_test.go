package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// Faults where the target answers, but refuses: each is made on a real
// server (settings, CONFIG SET, REPLICAOF, connection slots), then lifted,
// and the run must have counted the refusals in the right class, kept its
// books and its clock (Run.Check), resumed, and stored what it
// acknowledged and no more than it sent.

// lastError is the summary's last error text, or "".
func lastError(w *report.WorkloadSummary) string {
	if w.LastError == nil {
		return ""
	}
	return w.LastError.Text
}

// A target whose host name does not resolve: never ready, every attempt
// a connection error that names the host, the books balanced, the
// process alive.
func TestUnresolvableName(t *testing.T) {
	t.Parallel()
	const host = "soakd-no-such-host.invalid"
	for name, env := range map[string]map[string]string{
		"postgres": seriesEnv("postgres://postgres@" + host + ":5432/postgres?sslmode=disable&connect_timeout=2"),
		"influx1":  seriesEnv("influx1://" + host + ":8086?db=x"),
		"redis": common(map[string]string{"SOAKD_W_SOURCE": "kv", "SOAKD_W_WORKLOAD": "insert=1", "SOAKD_W_LOAD": "off",
			"SOAKD_W_RECORDS": "1", "SOAKD_W_TARGET": "redis://" + host + ":6379/0?index=false"}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := Start(t, env)
			line := ""
			for deadline := time.Now().Add(20 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				for _, e := range r.logs.All() {
					if ctx := fmt.Sprint(e.ContextMap()); e.Level >= zapcore.WarnLevel && strings.Contains(ctx, host) {
						line = e.Message + " " + ctx
						break
					}
				}
			}
			if line == "" {
				t.Errorf("no warning names %s", host)
			} else {
				t.Logf("logged: %s", line)
			}
			c := r.Now(t)
			if c.Ready || c.Acked > 0 {
				t.Errorf("ready %v with %d acknowledged, for a name that does not resolve", c.Ready, c.Acked)
			}
			w, _ := r.Stop(t)
			if w.Units != 0 {
				t.Errorf("%d units acknowledged by a target that does not exist", w.Units)
			}
			if w.LastError == nil || w.LastError.Class != "connection" || !strings.Contains(w.LastError.Text, "no such host") {
				t.Errorf("last error %+v, want a connection error saying no such host", w.LastError)
			}
			if w.Errors["other"] > 0 {
				t.Errorf("%d unclassified errors: %s", w.Errors["other"], lastError(w))
			}
			if w.Scheduled != w.Units+w.Failed+w.Dropped || w.InFlight != 0 {
				t.Errorf("scheduled %d != acked %d + failed %d + dropped %d (in flight %d)", w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
			}
		})
	}
}

// A PostgreSQL whose connection slots are all taken: soakd's connections
// are ended and its reconnects refused (SQLSTATE 53300, class server,
// retried), then the slots are freed and it resumes.
func TestPostgresMaxConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a slow fault")
	}
	t.Parallel()
	srv := testserver.Postgres(t, testserver.PostgresSettings("max_connections=12", "synchronous_commit=on"))
	srv.CreateDatabase(t, "slots")
	env := seriesEnv(fmt.Sprintf("postgres://postgres@%s/slots?sslmode=disable&application_name=soakd-w", srv.Addr))
	r := Start(t, env)
	r.WaitFor(t, 15*time.Second, "first writes", func(c Counts) bool { return c.Acked > 0 })
	admin := pgConnect(t, srv, "postgres")
	var hogs []*pgx.Conn
	defer func() {
		for _, c := range hogs {
			c.Close(t.Context())
		}
	}()
	// Take every slot, ending soakd's sessions as they hold them. A
	// terminated backend leaves pg_stat_activity before it frees its
	// slot, which soakd's reconnect can then take: every slot is taken
	// only once a round finds none free and soakd holding none.
	deadline := time.Now().Add(10 * time.Second)
	full := false
	for !full && time.Now().Before(deadline) {
		if _, err := admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'soakd-w'`); err != nil {
			t.Fatal(err)
		}
		before := len(hogs)
		for {
			c, err := pgx.Connect(t.Context(), fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", srv.Addr))
			if err != nil {
				if !strings.Contains(err.Error(), "53300") && !strings.Contains(err.Error(), "too many clients") {
					t.Fatalf("connecting a slot hog: %v", err)
				}
				break
			}
			hogs = append(hogs, c)
		}
		var soakd int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'soakd-w'`).Scan(&soakd); err != nil {
			t.Fatal(err)
		}
		full = soakd == 0 && len(hogs) == before
		if !full {
			time.Sleep(100 * time.Millisecond) // the terminated backends exit
		}
	}
	if !full {
		t.Fatalf("could not take every slot from soakd within 10 s (%d taken)", len(hogs))
	}
	c := holdRun(r, t, 3*time.Second)
	if c.Errors["server"] == 0 {
		t.Errorf("no server errors counted while every slot was taken: %v", c.Errors)
	}
	for _, h := range hogs {
		h.Close(t.Context())
	}
	hogs = nil
	r.Resumed(t, r.Now(t), 20*time.Second)
	w, _ := r.Stop(t)
	r.Check(t, w)
	onlyClasses(t, w, "server", "connection", "timeout")
	if !strings.Contains(lastError(w), "53300") && !strings.Contains(lastError(w), "too many clients") {
		t.Logf("last error: %s", lastError(w))
	}
	var n, d int64
	if err := pgConnect(t, srv, "slots").QueryRow(t.Context(), "SELECT count(*), count(DISTINCT n) FROM seq").Scan(&n, &d); err != nil {
		t.Fatal(err)
	}
	if n < w.Units || n > w.Units+w.Failed || d != n {
		t.Errorf("the server holds %d rows (%d distinct); acknowledged %d, failed %d", n, d, w.Units, w.Failed)
	}
}

// holdRun waits d and returns the counts then.
func holdRun(r *Run, t *testing.T, d time.Duration) Counts {
	time.Sleep(d)
	return r.Now(t)
}

// A redis-server out of memory (maxmemory, noeviction) and then a
// read-only replica (REPLICAOF a master that is not there): every insert
// is refused (OOM, READONLY: class rejected, not retried) until the fault
// is lifted; then the run resumes and the server holds what was
// acknowledged.
func TestRedisOOMAndReadOnly(t *testing.T) {
	t.Parallel()
	srv := testserver.Redis(t)
	env := common(map[string]string{"SOAKD_W_SOURCE": "kv", "SOAKD_W_WORKLOAD": "insert=1", "SOAKD_W_LOAD": "off",
		"SOAKD_W_RECORDS": "1", "SOAKD_W_DATA_TYPE": "string", "SOAKD_W_FIELDS": "1", "SOAKD_W_FIELD_LENGTH": "16",
		"SOAKD_W_PIPELINE": "10", "SOAKD_W_KEY_PREFIX": "r:", "SOAKD_W_TARGET": fmt.Sprintf("redis://%s/0?index=false", srv.Addr)})
	r := Start(t, env)
	r.WaitFor(t, 15*time.Second, "first writes", func(c Counts) bool { return c.Acked > 0 })
	a := redisAdmin(t, srv, 0)
	ctx := t.Context()
	for _, fault := range []struct {
		name       string
		make, lift [][]any
	}{
		{"OOM", [][]any{{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "1"}},
			[][]any{{"CONFIG", "SET", "maxmemory", "0"}}},
		{"READONLY", [][]any{{"REPLICAOF", "127.0.0.1", fmt.Sprint(testserver.ClosedPort(t))}},
			[][]any{{"REPLICAOF", "NO", "ONE"}}},
	} {
		before := r.Now(t)
		for _, cmd := range fault.make {
			if err := a.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		c := holdRun(r, t, 2*time.Second)
		if got := c.Errors["rejected"] - before.Errors["rejected"]; got == 0 {
			t.Errorf("%s: no rejected errors counted: %v", fault.name, c.Errors)
		}
		for _, cmd := range fault.lift {
			if err := a.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		r.Resumed(t, r.Now(t), 20*time.Second)
	}
	w, _ := r.Stop(t)
	r.Check(t, w)
	onlyClasses(t, w, "rejected")
	if line, ok := r.Logged(zapcore.WarnLevel, "write failed", "rejected"); !ok || !strings.Contains(line, "OOM") {
		t.Errorf("the first refusal logged is not the server's OOM reply: %q", line)
	}
	if !strings.Contains(lastError(w), "READONLY") {
		t.Errorf("the last error %q is not the server's READONLY reply", lastError(w))
	}
	if w.Failed == 0 {
		t.Error("nothing failed: the refusals were not counted as failed units")
	}
	n, err := a.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < w.Units || n > w.Units+w.Failed {
		t.Errorf("the server holds %d keys; acknowledged %d, failed %d", n, w.Units, w.Failed)
	}
}

// InfluxDB 1.8 refusing work: a write throttle with one slot and no
// queue answers concurrent writes 503 (class server, retried after a
// backoff); a default retention policy of 1 h drops the points older than
// it from a batch that straddles its edge (400 "partial write ...
// dropped=N"): the points kept count as acknowledged, the dropped ones as
// failed, and the server holds exactly what was acknowledged.
func TestInfluxThrottledAndPartial(t *testing.T) {
	t.Parallel()
	srv := testserver.Influx(t, testserver.InfluxHTTP("max-concurrent-write-limit = 1", "max-enqueued-write-limit = 16", "enqueued-write-timeout = 1"))
	t.Run("503 throttled", func(t *testing.T) {
		// Writes that overlap are refused at once (the queue timeout is
		// 1 ns, a time.Duration in influxd's TOML): 8 workers at 100
		// batches/s overlap often.
		env := seriesEnv(fmt.Sprintf("influx1://%s?db=throttled", srv.Addr))
		env["SOAKD_W_RETRIES"], env["SOAKD_W_WORKERS"], env["SOAKD_W_RATE"] = "10", "8", "5000"
		r := Start(t, env)
		r.WaitFor(t, 15*time.Second, "first writes", func(c Counts) bool { return c.Acked > 0 })
		time.Sleep(3 * time.Second)
		w, _ := r.Stop(t)
		r.Check(t, w)
		wantClass(t, w, "server")
		onlyClasses(t, w, "server")
		if !strings.Contains(lastError(w), "503") && !strings.Contains(lastError(w), "throttled") {
			t.Errorf("last error %q does not say the server throttled", lastError(w))
		}
		if n := influxCount(t, srv, "throttled"); n < w.Units || n > w.Units+w.Failed {
			t.Errorf("the server holds %d points; acknowledged %d, failed %d", n, w.Units, w.Failed)
		}
	})
	t.Run("partial write", func(t *testing.T) {
		srv.InfluxExec(t, "", "CREATE DATABASE partial WITH DURATION 1h SHARD DURATION 1h NAME hour")
		// devops rows of one device, 10 min apart from 3 h ago: the first
		// batch of 50 spans 8 h. Its points in shard groups (hours) wholly
		// older than the policy's 1 h are dropped, the others kept.
		start := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
		env := common(map[string]string{"SOAKD_W_SOURCE": "devops", "SOAKD_W_SCALE": "1", "SOAKD_W_START": start,
			"SOAKD_W_INTERVAL": "10m", "SOAKD_W_BATCH_SIZE": "50", "SOAKD_W_RATE": "500", "SOAKD_W_WORKERS": "1",
			"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=partial&rp=hour", srv.Addr)})
		r := Start(t, env)
		r.WaitFor(t, 15*time.Second, "writes", func(c Counts) bool { return c.Acked > 100 })
		w, _ := r.Stop(t)
		r.Check(t, w)
		wantClass(t, w, "rejected")
		if w.Failed < 6 || w.Failed > 13 {
			t.Errorf("%d rows failed, want the 6..13 of the first batch older than the policy's shard groups", w.Failed)
		}
		if !strings.Contains(lastError(w), "partial write") {
			t.Errorf("last error %q is not the partial write", lastError(w))
		}
		if n := influxMeasurementCount(t, srv, "partial", "cpu", "usage_user"); n != w.Units {
			t.Errorf("the server holds %d points; acknowledged %d (failed %d)", n, w.Units, w.Failed)
		}
	})
}

// influxMeasurementCount counts the values of field in measurement of db.
func influxMeasurementCount(t *testing.T, srv *testserver.Server, db, measurement, field string) int64 {
	t.Helper()
	return influxQuery(t, srv, db, fmt.Sprintf("SELECT count(%q) FROM %q", field, measurement))
}
