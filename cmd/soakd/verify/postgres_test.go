package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// timescale returns the server settings that preload TimescaleDB when
// its library is installed, so the dialect makes real hypertables.
func timescale() []string {
	bin := testserver.PostgresBinDir()
	if m, _ := filepath.Glob(filepath.Join(bin, "..", "lib", "timescaledb*.so")); bin == "" || len(m) == 0 {
		return nil
	}
	return []string{"shared_preload_libraries=timescaledb", "timescaledb.telemetry_level=off"}
}

// waitRows waits until table holds at least n rows (it may not exist yet).
func waitRows(t *testing.T, url, table string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var have int64
		if c, err := pgx.Connect(ctx, url); err == nil {
			_ = c.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&have)
			c.Close(ctx)
		}
		if have >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %d rows after 30 s, want %d", table, have, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A clean run verifies with nothing lost; rows deleted by hand are lost
// with their exact (device, time) ranges, a value changed by hand is a
// mismatch, rows written again (no dedup) are duplicates; late and
// offline-backfilled rows verify like the others. TimescaleDB's dialect
// (without the extension, its fallback) and a two-table source verify
// too (with hypertables when TimescaleDB is installed).
func TestPostgres(t *testing.T) {
	srv := testserver.Postgres(t, testserver.PostgresSettings(timescale()...))
	db := srv.CreateDatabase(t, "cpu")
	env := map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": db,
		"SOAKD_CPU_SCALE": "8", "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+2h",
		"SOAKD_CPU_OUT_OF_ORDER": "0.1:1m", "SOAKD_CPU_OFFLINE": "0.1:5m", "SOAKD_CPU_MISSING": "0.05",
		"SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "3", "SOAKD_CPU_BATCH_SIZE": "97", "SOAKD_CPU_VERIFY": "0.2",
	}
	sum, path := soakRun(t, env, nil)
	run := phase(t, sum, "cpu", "run")
	if run.Units != 8*720 {
		t.Fatalf("run acknowledged %d rows, want %d", run.Units, 8*720)
	}
	checkContinuous(t, run)
	// Only the summary and the target: the data set's settings come from it.
	code, out, rep := soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": db}, "--summary-json", path)
	if code != 0 {
		t.Fatalf("clean run: exit %d", code)
	}
	if got, want := countsOf(only(t, rep)), (counts{acked: 5760, stored: 5760}); got != want {
		t.Fatalf("clean run: %+v, want %+v", got, want)
	}
	hasLine(t, out, "cpu rows: acknowledged 5760, stored 5760, lost 0, duplicated 0, mismatched 0, in doubt 0")
	if n := len(only(t, rep).Devices); n != 8 {
		t.Errorf("%d devices reported, want 8", n)
	}

	testserver.PGExec(t, db,
		`DELETE FROM cpu WHERE hostname = 'host_3' AND time >= '2026-01-01T00:10:00Z' AND time < '2026-01-01T00:15:00Z'`,
		`DELETE FROM cpu WHERE hostname = 'host_6' AND time = '2026-01-01T01:00:00Z'`,
		`UPDATE cpu SET usage_user = usage_user + 1 WHERE hostname = 'host_5' AND time = '2026-01-01T00:30:00Z'`,
		`INSERT INTO cpu SELECT * FROM cpu WHERE hostname = 'host_7' AND time < '2026-01-01T00:01:00Z'`)
	code, out, rep = soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": db}, "--summary-json", path)
	w := only(t, rep)
	if code != 1 {
		t.Errorf("after damage: exit %d, want 1", code)
	}
	if got, want := countsOf(w), (counts{acked: 5760, stored: 5729, lost: 31, dup: 6, mismatched: 1}); got != want {
		t.Fatalf("after damage: %+v, want %+v", got, want)
	}
	wantRanges := []Range{
		{Table: "cpu", Device: "host_3", From: ts("2026-01-01T00:10:00Z"), To: ts("2026-01-01T00:14:50Z"), Rows: 30},
		{Table: "cpu", Device: "host_6", From: ts("2026-01-01T01:00:00Z"), To: ts("2026-01-01T01:00:00Z"), Rows: 1},
	}
	if len(w.LostRanges) != 2 || w.LostRanges[0] != wantRanges[0] || w.LostRanges[1] != wantRanges[1] {
		t.Errorf("lost ranges %+v, want %+v", w.LostRanges, wantRanges)
	}
	wantDup := Range{Table: "cpu", Device: "host_7", From: ts("2026-01-01T00:00:00Z"), To: ts("2026-01-01T00:00:50Z"), Rows: 6}
	if len(w.DuplicateRanges) != 1 || w.DuplicateRanges[0] != wantDup {
		t.Errorf("duplicate ranges %+v, want %+v", w.DuplicateRanges, wantDup)
	}
	hasLine(t, out, "lost: cpu host_3 2026-01-01T00:10:00Z .. 2026-01-01T00:14:50Z (30 rows)")
	hasLine(t, out, "mismatched: cpu host_5 2026-01-01T00:30:00Z usage_user: stored ")
	hasLine(t, out, "FAILED")

	// The trucks' two tables (late rows and nulls by default) through the
	// TimescaleDB dialect, checked without a summary: a finite data set is
	// then taken as acknowledged whole.
	trucksDB := srv.CreateDatabase(t, "trucks")
	tdb := trucksDB + "&dialect=timescaledb"
	tenv := map[string]string{
		"SOAKD_WORKLOADS": "trucks", "SOAKD_TRUCKS_SOURCE": "iot", "SOAKD_TRUCKS_TARGET": tdb,
		"SOAKD_TRUCKS_SCALE": "5", "SOAKD_TRUCKS_START": "2026-01-01T00:00:00Z", "SOAKD_TRUCKS_END": "+1h",
		"SOAKD_TRUCKS_OFFLINE": "0.2:2m", "SOAKD_TRUCKS_RATE": "max", "SOAKD_TRUCKS_WORKERS": "2",
		"SOAKD_TRUCKS_BATCH_SIZE": "50", "SOAKD_TRUCKS_VERIFY": "0.5",
	}
	sum, _ = soakRun(t, tenv, nil)
	checkContinuous(t, phase(t, sum, "trucks", "run"))
	if timescale() != nil {
		if n := testserver.PGCount(t, trucksDB, "SELECT count(*) FROM timescaledb_information.hypertables"); n != 2 {
			t.Errorf("%d hypertables, want 2", n)
		}
	}
	code, _, rep = soakVerify(t, tenv)
	if got, want := countsOf(only(t, rep)), (counts{acked: 3600, stored: 3600}); code != 0 || got != want {
		t.Fatalf("trucks without a summary: exit %d, %+v, want %+v", code, got, want)
	}
}

// PostgreSQL killed with SIGKILL mid-run and restarted: every
// acknowledged row is there (it is committed synchronously), the batches
// that failed are in doubt, never lost.
func TestPostgresKilled(t *testing.T) {
	srv := testserver.Postgres(t, testserver.PostgresSettings("synchronous_commit=on"))
	db := srv.CreateDatabase(t, "crash")
	env := map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": db,
		"SOAKD_CPU_SCALE": "20", "SOAKD_CPU_START": "2026-01-01T00:00:00Z",
		// DURATION only bounds a run the test fails to stop.
		"SOAKD_CPU_RATE": "3000", "SOAKD_CPU_DURATION": "2m", "SOAKD_CPU_WORKERS": "4", "SOAKD_CPU_BATCH_SIZE": "50",
		"SOAKD_CPU_TIMEOUT": "2s", "SOAKD_CPU_MAX_LAG": "30s", "SOAKD_CPU_VERIFY": "0.05", "SOAKD_CPU_OUT_OF_ORDER": "0.05:30s",
	}
	sum, path := soakRunStop(t, env, func(stop func()) {
		// Kill the server once the run writes, and stop the run once it
		// writes again after the restart, whatever the machine's load: the
		// outage always falls inside the run.
		waitRows(t, db, "cpu", 1000)
		time.Sleep(500 * time.Millisecond)
		srv.Kill()
		time.Sleep(time.Second)
		srv.Resume(t)
		waitRows(t, db, "cpu", testserver.PGCount(t, db, "SELECT count(*) FROM cpu")+1000)
		stop()
	})
	run := phase(t, sum, "cpu", "run")
	t.Logf("run: acknowledged %d, failed %d, errors %v; verify checked %d skipped %d", run.Units, run.Failed, run.Errors,
		run.Verify.Checked, run.Verify.Skipped)
	if run.Failed == 0 {
		t.Fatal("no write failed: the server was not down during the run")
	}
	code, _, rep := soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": db}, "--summary-json", path)
	w := only(t, rep)
	if code != 0 || w.Lost != 0 || w.Mismatched != 0 || w.Duplicated != 0 {
		t.Fatalf("after the crash: exit %d, %+v: want every acknowledged row stored once", code, countsOf(w))
	}
	if w.Acknowledged != run.Units || w.Stored != run.Units {
		t.Errorf("acknowledged %d, stored %d; the run acknowledged %d", w.Acknowledged, w.Stored, run.Units)
	}
	if w.InDoubt != run.Failed {
		t.Errorf("in doubt %d, the run's failed rows %d", w.InDoubt, run.Failed)
	}
}

// The same run written twice into a table without dedup stores every
// acknowledged row twice: soakd verify reports each device's whole range
// as duplicated. With ?dedup=true the second run stores nothing more and
// the data verifies clean.
func TestPostgresWrittenTwice(t *testing.T) {
	srv := testserver.Postgres(t)
	for _, tc := range []struct {
		name, query string
		dup         int64
		code        int
	}{
		{name: "twice", dup: 4 * 360, code: 1},
		{name: "dedup", query: "&dedup=true", code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.CreateDatabase(t, tc.name) + tc.query
			env := map[string]string{
				"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": db,
				"SOAKD_CPU_SCALE": "4", "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+1h",
				"SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "2", "SOAKD_CPU_BATCH_SIZE": "100",
			}
			_, path := soakRun(t, env, nil)
			soakRun(t, env, nil)
			code, out, rep := soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": db}, "--summary-json", path)
			w := only(t, rep)
			if got, want := countsOf(w), (counts{acked: 4 * 360, stored: 4 * 360, dup: tc.dup}); code != tc.code || got != want {
				t.Fatalf("exit %d, %+v; want exit %d, %+v", code, got, tc.code, want)
			}
			if tc.dup == 0 {
				return
			}
			if len(w.DuplicateRanges) != 4 {
				t.Fatalf("duplicate ranges %+v, want one per device", w.DuplicateRanges)
			}
			for _, r := range w.DuplicateRanges {
				if r.From != ts("2026-01-01T00:00:00Z") || r.To != ts("2026-01-01T00:59:50Z") || r.Rows != 360 {
					t.Errorf("duplicate range %+v, want the device's whole hour", r)
				}
			}
			hasLine(t, out, "duplicated: cpu host_0 2026-01-01T00:00:00Z .. 2026-01-01T00:59:50Z (360 rows)")
		})
	}
}

// A signal stops soakd verify while it replays a device: here a stream
// the summary says started far into an endless seq data set, whose one
// device is replayed up to there, row by row, for ever. It exits 1 and
// says the workload was not verified.
func TestStoppedMidReplay(t *testing.T) {
	srv := testserver.Postgres(t)
	db := srv.CreateDatabase(t, "spin")
	b, err := json.Marshal(report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "s", Phase: "run", Source: "seq", Target: db, Kind: "series",
		Verify: &report.VerifySummary{Settings: map[string]string{"SOURCE": "seq", "DEVICES": "1"},
			Streams: []report.StreamRecord{{Part: 0, Start: sources.Position{Round: 1 << 60}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		code := Main(ctx, []string{"--summary-json", path}, withDefaults(nil), plugins.All(), &out, &out)
		done <- result{code, out.String()}
	}()
	// verify pings the target, then replays, holding its connection:
	// once that shows idle after the ping, the replay has begun (the
	// pause only makes it surer that the stop falls in the replay, not
	// before it, where it stopped verify already).
	for testserver.PGCount(t, srv.URL, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'spin' AND state = 'idle' AND query = '-- ping'") == 0 {
		select {
		case r := <-done:
			t.Fatalf("verify ended before the stop: exit %d\n%s", r.code, r.out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond)
	stop()
	select {
	case r := <-done:
		t.Logf("soakd verify: exit %d\n%s", r.code, r.out)
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
		hasLine(t, r.out, "workload s: not verified: stopped by a signal")
	case <-time.After(2 * time.Minute):
		t.Fatal("soakd verify goes on replaying after the stop")
	}
}

// A run with a query workload beside the ingest one: the query workload
// wrote nothing, so verify says it skips it and checks the other (exit
// 0), with the run's summary or without.
func TestQueryWorkloadSkipped(t *testing.T) {
	srv := testserver.Postgres(t)
	db := srv.CreateDatabase(t, "mixed")
	env := map[string]string{
		"SOAKD_WORKLOADS":  "cpu,q",
		"SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": db, "SOAKD_CPU_SCALE": "2",
		"SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+10m", "SOAKD_CPU_RATE": "max",
		"SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_SCALE": "2", "SOAKD_Q_TARGET": db,
		"SOAKD_Q_RATE": "20", "SOAKD_Q_DURATION": "2s", "SOAKD_Q_QUERIES": "lastpoint",
	}
	sum, path := soakRun(t, env, nil)
	if run := phase(t, sum, "cpu", "run"); run.Units != 2*60 {
		t.Fatalf("run acknowledged %d rows, want %d", run.Units, 2*60)
	}
	for name, args := range map[string][]string{"summary": {"--summary-json", path}, "no summary": nil} {
		t.Run(name, func(t *testing.T) {
			venv := map[string]string{"SOAKD_CPU_TARGET": db}
			if args == nil {
				venv = env
			}
			code, out, rep := soakVerify(t, venv, args...)
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if got, want := countsOf(only(t, rep)), (counts{acked: 120, stored: 120}); got != want {
				t.Errorf("%+v, want %+v", got, want)
			}
			hasLine(t, out, "== verify workload q: skipped: source devops-queries runs queries, which write nothing to verify")
			if strings.Contains(out, "cannot verify") {
				t.Errorf("verify tried the query workload:\n%s", out)
			}
		})
	}
}
