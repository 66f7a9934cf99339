package main

import (
	"bytes"
	"context"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sweep"
)

// massiveEnv is a massive workload w writing to target, closed loop.
func massiveEnv(target string, kv ...string) map[string]string {
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "w",
		"SOAKD_W_SOURCE": "massive", "SOAKD_W_TARGET": target, "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "100",
		"SOAKD_W_WATCH_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// soakd runs args with env and returns its exit code, stdout and stderr.
func soakd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), args, env, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// countsAddUp fails the test unless a run's counts are whole: every row
// scheduled acknowledged, failed, dropped or in flight, and values =
// rows × columns.
func countsAddUp(t *testing.T, what string, c sweep.RunCounts, columns int64) {
	t.Helper()
	if c.Units <= 0 || c.Units+c.Failed+c.Dropped+c.InFlight != c.Scheduled {
		t.Errorf("%s: %d acknowledged + %d failed + %d dropped + %d in flight != %d scheduled", what, c.Units, c.Failed, c.Dropped, c.InFlight, c.Scheduled)
	}
	if c.Values != c.Units*columns {
		t.Errorf("%s: %d values for %d rows of %d columns", what, c.Values, c.Units, columns)
	}
}

// pgDigest is a digest of every row of table, in a fixed order: two
// tables of the same rows, in any order of writing, have the same.
func pgDigest(t *testing.T, url, table string) string {
	t.Helper()
	var d string
	q := "SELECT coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)), '') FROM " + table + " r"
	if err := testserver.PGConn(t, url).QueryRow(context.Background(), q).Scan(&d); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return d
}

// A SCALE × COLUMNS sweep of the massive source against PostgreSQL gives
// the 2 × 2 grid, in the order given (SCALE slowest), and each cell
// matches a soakd run of its settings by the data written: each point
// writes a finite data set (SCALE devices, ten readings each), so every
// run of the sweep and the separate run write exactly SCALE × 10 rows of
// COLUMNS values, and the table the sweep leaves holds, row for row, what
// the separate run of the last point writes. (Rates are not compared: a
// wall-clock figure on a shared machine says nothing about the sweep.)
// COLUMNS changes the table's shape both ways between points (2 → 5 → 2
// → 5): with SOAKD_SWEEP_RESET the table is remade and emptied, holding
// the last run's rows only. Bugs caught: an axis applied to a copy the
// run does not read, the axes' order swapped, values/s taken from
// rows/s, a point writing into the previous point's table (Prepare
// refuses 5 columns in a table of 2; 2 into 5 writes NULLs), a run that
// does not start from an empty table, a sweep's run writing other data
// than soakd run with the same settings.
func TestSweepGridMatchesSeparateRuns(t *testing.T) {
	srv := testserver.Postgres(t)
	out := filepath.Join(t.TempDir(), "sweep")
	data := []string{"SOAKD_W_START", "2026-01-01T00:00:00Z", "SOAKD_W_END", "+100s", "SOAKD_W_INTERVAL", "10s"}
	const readings = 10 // END / INTERVAL
	env := massiveEnv(srv.URL, append([]string{"SOAKD_SWEEP_GRID", "SCALE=10,40 COLUMNS=2,5", "SOAKD_SWEEP_REPEATS", "3",
		"SOAKD_SWEEP_DURATION", "20s", "SOAKD_SWEEP_RESET", "true", "SOAKD_SWEEP_OUT", out}, data...)...)
	code, stdout, stderr := soakd(t, env, "sweep")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readJSON[sweep.Result](t, out+".json")
	if len(res.Axes) != 2 || res.Axes[0].Name != "SCALE" || res.Axes[1].Name != "COLUMNS" || len(res.Points) != 4 {
		t.Fatalf("axes %+v, %d points; want SCALE × COLUMNS, 4 points", res.Axes, len(res.Points))
	}
	want := [][]string{{"10", "2"}, {"10", "5"}, {"40", "2"}, {"40", "5"}}
	for i, p := range res.Points {
		if strings.Join(p.AxisValues, " ") != strings.Join(want[i], " ") {
			t.Fatalf("point %d is %v, want %v: the last axis varies fastest", i, p.AxisValues, want[i])
		}
	}
	if !strings.Contains(stdout, "| SCALE \\ COLUMNS | 2 | 5 |\n|---|---:|---:|\n| 10 |") || !strings.Contains(stdout, "## values/s (median)") {
		t.Errorf("no 2 × 2 table in the report:\n%s", stdout)
	}
	// Before the first run: the order, the time per point and the total;
	// after each: where it is and the time left.
	if !strings.Contains(stderr, "SCALE (2) × COLUMNS (2), the first varying slowest") || !strings.Contains(stderr, "at most 1m0s per point (DURATION 20s × REPEATS 3") ||
		!strings.Contains(stderr, "about 4m0s in all") ||
		!strings.Contains(stderr, `"points":["SCALE=10 COLUMNS=2","SCALE=10 COLUMNS=5","SCALE=40 COLUMNS=2","SCALE=40 COLUMNS=5"]`) ||
		!strings.Contains(stderr, "sweep 1/12 (point 1/4, run 1/3): SCALE=10 COLUMNS=2: ") || !strings.Contains(stderr, "sweep 12/12 (point 4/4, run 3/3): SCALE=40 COLUMNS=5") ||
		!strings.Contains(stderr, " left") {
		t.Errorf("the log does not say the order, the estimate and the progress:\n%s", stderr)
	}
	for _, p := range res.Points {
		scale, _ := strconv.ParseInt(p.AxisValues[0], 10, 64)
		cols, _ := strconv.ParseInt(p.AxisValues[1], 10, 64)
		if len(p.Runs) != 3 || len(p.Rates) != 3 {
			t.Fatalf("point %v: %d runs, want 3", p.AxisValues, len(p.Runs))
		}
		for i, c := range p.Runs {
			countsAddUp(t, "point "+strings.Join(p.AxisValues, " ")+" run "+strconv.Itoa(i+1), c, cols)
			if c.Units != scale*readings {
				t.Errorf("point %v run %d wrote %d rows, want the data set's %d × %d", p.AxisValues, i+1, c.Units, scale, readings)
			}
		}
		if r := p.ValueMedian / p.Median; r < float64(cols)*0.999 || r > float64(cols)*1.001 {
			t.Errorf("point %v: %v values/s for %v rows/s", p.AxisValues, p.ValueMedian, p.Median)
		}
	}
	last := res.Points[3].Runs[2]
	if n := testserver.PGCount(t, srv.URL, "SELECT count(*) FROM massive"); n != last.Units {
		t.Errorf("the table holds %d rows after the last run, which wrote %d: reset between runs", n, last.Units)
	}
	if n := testserver.PGCount(t, srv.URL, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'massive'"); n != 3+5 {
		t.Errorf("the table has %d columns after the last point (COLUMNS=5), want time, device, group and 5", n)
	}
	swept := pgDigest(t, srv.URL, "massive")

	// The same settings as soakd run, each on a fresh table.
	for _, p := range res.Points {
		testserver.PGExec(t, srv.URL, "DROP TABLE IF EXISTS massive")
		js := filepath.Join(t.TempDir(), "summary.json")
		one := massiveEnv(srv.URL, append([]string{"SOAKD_W_SCALE", p.AxisValues[0], "SOAKD_W_COLUMNS", p.AxisValues[1],
			"SOAKD_W_RATE", "max", "SOAKD_W_DURATION", "20s", "SOAKD_SUMMARY_JSON", js}, data...)...)
		if code, stdout, stderr := soakd(t, one, "run"); code != cli.ExitOK {
			t.Fatalf("soakd run %v: exit %d\nstdout:\n%s\nstderr:\n%s", p.AxisValues, code, stdout, stderr)
		}
		sum := readJSON[report.Summary](t, js)
		ws := sum.Workload("w", "run")
		if ws == nil {
			t.Fatalf("soakd run %v: no run phase", p.AxisValues)
		}
		cols, _ := strconv.ParseInt(p.AxisValues[1], 10, 64)
		alone := sweep.RunCounts{Units: ws.Units, Values: ws.Values, Scheduled: ws.Scheduled, Failed: ws.Failed, Dropped: ws.Dropped, InFlight: ws.InFlight}
		countsAddUp(t, "soakd run "+strings.Join(p.AxisValues, " "), alone, cols)
		for i, c := range p.Runs {
			if c.Units != alone.Units || c.Values != alone.Values {
				t.Errorf("point %v run %d wrote %d rows, %d values; soakd run with its settings %d, %d", p.AxisValues, i+1, c.Units, c.Values, alone.Units, alone.Values)
			}
		}
		scale, _ := strconv.ParseInt(p.AxisValues[0], 10, 64)
		if n := testserver.PGCount(t, srv.URL, "SELECT count(DISTINCT device) FROM massive"); n != scale {
			t.Errorf("soakd run %v wrote %d devices", p.AxisValues, n)
		}
		if n := testserver.PGCount(t, srv.URL, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'massive'"); n != 3+cols {
			t.Errorf("soakd run %v made a table of %d columns", p.AxisValues, n)
		}
	}
	if alone := pgDigest(t, srv.URL, "massive"); alone != swept {
		t.Errorf("the sweep's last run left rows (digest %s) other than soakd run of SCALE=40 COLUMNS=5 writes (%s)", swept, alone)
	}
}

// A sweep over TARGET puts PostgreSQL and TimescaleDB side by side, each
// point writing to its own server, and the target's password appears
// nowhere: not in the log, the report, its files, or the charts.
func TestSweepGridOverTargets(t *testing.T) {
	pg, ts := testserver.Postgres(t), testserver.TimescaleDB(t)
	// Trust authentication takes any password: this one must not show.
	const secret = "s3cr3t-pw"
	withPassword := strings.Replace(pg.URL, "postgres@", "postgres:"+secret+"@", 1)
	tsURL := ts.URL + "&dialect=timescaledb"
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep")
	env := massiveEnv("", "SOAKD_SWEEP_GRID", "TARGET="+withPassword+","+tsURL+" WORKERS=1,2", "SOAKD_SWEEP_REPEATS", "1",
		"SOAKD_SWEEP_DURATION", "1s", "SOAKD_SWEEP_OUT", out)
	code, stdout, stderr := soakd(t, env, "sweep")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readJSON[sweep.Result](t, out+".json")
	if len(res.Points) != 4 || res.Axes[0].Numeric || !res.Axes[1].Numeric {
		t.Fatalf("axes %+v, %d points; want TARGET (categories) × WORKERS, 4 points", res.Axes, len(res.Points))
	}
	for _, p := range res.Points {
		countsAddUp(t, strings.Join(p.AxisValues, " "), p.Runs[0], 100)
	}
	if v := res.Points[0].AxisValues[0]; !strings.Contains(v, "xxxxx") || !strings.HasPrefix(v, "postgres://postgres:") {
		t.Errorf("the first target shows as %q, want its URL with the password redacted", v)
	}
	if res.BuiltinTarget != "" {
		t.Errorf("builtin_target %q in a sweep over TARGET", res.BuiltinTarget)
	}
	if res.Points[2].AxisValues[0] != tsURL {
		t.Errorf("the second target shows as %q, want %q", res.Points[2].AxisValues[0], tsURL)
	}
	// Each server holds what its two points wrote.
	for i, srv := range []string{pg.URL, ts.URL} {
		want := res.Points[2*i].Runs[0].Units + res.Points[2*i+1].Runs[0].Units
		if n := testserver.PGCount(t, srv, "SELECT count(*) FROM massive"); n != want {
			t.Errorf("server %d holds %d rows, its points wrote %d", i, n, want)
		}
	}
	if n := testserver.PGCount(t, ts.URL, "SELECT count(*) FROM timescaledb_information.hypertables WHERE hypertable_name = 'massive'"); n != 1 {
		t.Errorf("TimescaleDB's table is no hypertable (%d)", n)
	}
	if !strings.Contains(stdout, "| TARGET \\ WORKERS | 1 | 2 |") {
		t.Errorf("no TARGET × WORKERS table:\n%s", stdout)
	}
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	files, _ := filepath.Glob(out + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	if len(files) < 7 {
		t.Errorf("report files %v, want md, csv, json and two charts (svg, png) per axis", files)
	}
	for name, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the target's password", name)
		}
	}
	if !strings.Contains(texts[out+"-target.svg"], ">"+html.EscapeString(tsURL)+"</text>") {
		t.Errorf("the TARGET chart does not name the targets on its axis")
	}
}

// A grid that cannot run is refused before anything runs, exit 2, the
// error naming SOAKD_SWEEP_GRID and the axis or value at fault: a name
// that is no setting of the workload (with the closest one), a value
// its setting refuses (at the last point: the first would have run),
// WORKERS or BATCH set with a grid, and points of different table shapes
// into one PostgreSQL without a reset. Nothing reaches the target.
func TestSweepGridRefusedBeforeItRuns(t *testing.T) {
	srv := testserver.Postgres(t)
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"unknown name", []string{"SOAKD_SWEEP_GRID", "SCALE=10,20 COLUMS=2,5"}, []string{"SOAKD_SWEEP_GRID: axis COLUMS is not a setting of workload w", "did you mean COLUMNS?"}},
		{"bad value", []string{"SOAKD_SWEEP_GRID", "SCALE=10 COLUMNS=2,5000"}, []string{"SOAKD_SWEEP_GRID: COLUMNS=5000:"}},
		{"bad target", []string{"SOAKD_SWEEP_GRID", "TARGET=" + srv.URL + ",nosuch://x"}, []string{"SOAKD_SWEEP_GRID: TARGET=nosuch://x:"}},
		{"grid and workers", []string{"SOAKD_SWEEP_GRID", "SCALE=10,20", "SOAKD_SWEEP_WORKERS", "1,2"}, []string{"SOAKD_SWEEP_GRID: set with SOAKD_SWEEP_WORKERS"}},
		{"shapes without reset", []string{"SOAKD_SWEEP_GRID", "COLUMNS=2,5"}, []string{"SOAKD_SWEEP_RESET:", "COLUMNS=2 and COLUMNS=5"}},
		{"a secret", []string{"SOAKD_SWEEP_GRID", "PASSWORD=a,b"}, []string{"SOAKD_SWEEP_GRID: axis PASSWORD: a secret"}},
		// A space where a comma was meant: the password after it is
		// never repeated (checked below).
		{"a space in a list", []string{"SOAKD_SWEEP_GRID", "TARGET=" + srv.URL + " postgres://u:SECRETPW@h2/db?sslmode=require"}, []string{"SOAKD_SWEEP_GRID", "axis 2 is not NAME=v1,v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := massiveEnv(srv.URL, append(tc.env, "SOAKD_SWEEP_REPEATS", "1", "SOAKD_SWEEP_DURATION", "1s",
				"SOAKD_SWEEP_OUT", filepath.Join(t.TempDir(), "sweep"))...)
			code, stdout, stderr := soakd(t, env, "sweep")
			if code != cli.ExitConfig {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, cli.ExitConfig, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "SECRETPW") {
				t.Errorf("a password is repeated:\n%s\n%s", stdout, stderr)
			}
			if n := testserver.PGCount(t, srv.URL, "SELECT count(*) FROM pg_class WHERE relname = 'massive'"); n != 0 {
				t.Errorf("the sweep created its table before it was refused")
			}
		})
	}
}

// soakd sweep --help lists SOAKD_SWEEP_GRID with its syntax and order.
func TestSweepHelpListsGrid(t *testing.T) {
	code, out, _ := soakd(t, nil, "sweep", "--help")
	if code != cli.ExitOK || !strings.Contains(out, "SOAKD_SWEEP_GRID      --sweep-grid") || !strings.Contains(out, "NAME=v1,v2 NAME2=a,b") ||
		!strings.Contains(out, "the first axis varies slowest, the last fastest") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// A KV grid over DATA_TYPE against a real Redis: without a reset the
// second point would read the records the first loaded, of the other
// type, so the sweep is refused before it runs; with SOAKD_SWEEP_RESET
// each point loads its own records and runs. Bug caught: the data set's
// settings left out of the points' shape.
func TestSweepGridKVDataSets(t *testing.T) {
	srv := testserver.Redis(t)
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": srv.URL,
		"SOAKD_KV_RECORDS": "2000", "SOAKD_KV_WATCH_INTERVAL": "0", "SOAKD_SWEEP_GRID": "DATA_TYPE=string,hash FIELD_LENGTH=16",
		"SOAKD_SWEEP_REPEATS": "1", "SOAKD_SWEEP_DURATION": "1s", "SOAKD_SWEEP_OUT": filepath.Join(t.TempDir(), "sweep")}
	code, _, stderr := soakd(t, env, "sweep")
	if code != cli.ExitConfig || !strings.Contains(stderr, "SOAKD_SWEEP_RESET: the points DATA_TYPE=string FIELD_LENGTH=16 and DATA_TYPE=hash FIELD_LENGTH=16 read different data sets") {
		t.Fatalf("without a reset: exit %d\n%s", code, stderr)
	}
	env["SOAKD_SWEEP_RESET"] = "true"
	code, stdout, stderr := soakd(t, env, "sweep")
	if code != cli.ExitOK {
		t.Fatalf("with a reset: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readJSON[sweep.Result](t, env["SOAKD_SWEEP_OUT"]+".json")
	if len(res.Points) != 2 || res.Unit != "ops" || res.Values {
		t.Fatalf("%d points of %s (values %v), want 2 of ops, no values", len(res.Points), res.Unit, res.Values)
	}
	for _, p := range res.Points {
		countsAddUp(t, strings.Join(p.AxisValues, " "), p.Runs[0], 0)
	}
}
