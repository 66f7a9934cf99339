package main

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/sweep"
)

// recipe is what a file of examples/ declares: the workload it sweeps and
// the axes of its grid, in order (those of the comparison it reproduces).
type recipe struct {
	name, workload string
	axes           []string
}

var recipes = []recipe{
	{"kwdb-tsbs", "cpu", []string{"WORKERS", "BATCH_SIZE"}},
	{"cnosdb-influxdb", "lp", []string{"TARGET", "WORKERS"}},
	{"keewidb-ycsb", "ycsb", []string{"FIELD_LENGTH", "DATA_TYPE", "WORKLOAD"}},
	{"matrixdb-massive", "massive", []string{"SCALE", "COLUMNS"}},
}

func recipePath(name string) string { return filepath.Join("..", "..", "examples", name+".env") }

// gridKnown says whether this soakd sweeps over SOAKD_SWEEP_GRID, as its
// settings list says: every recipe sets it.
func gridKnown(t *testing.T) bool {
	t.Helper()
	code, out, errs := run(t, nil, "config")
	if code != cli.ExitOK {
		t.Fatalf("soakd config: exit %d\n%s", code, errs)
	}
	return strings.Contains(out, "SOAKD_SWEEP_GRID ")
}

// gridAxes parses a SOAKD_SWEEP_GRID value: axes NAME=v1,v2 separated by
// spaces.
func gridAxes(t *testing.T, grid string) (names []string, values [][]string) {
	t.Helper()
	for _, f := range strings.Fields(grid) {
		name, list, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("grid %q: axis %q without =", grid, f)
		}
		names = append(names, name)
		values = append(values, strings.Split(list, ","))
	}
	return names, values
}

// Every file of examples/ is a recipe listed above; each parses as
// compose's env_file (compose-go's own reader), says at its top the
// command that runs it, the target it assumes, how to point it at
// another and its full scale, and sweeps the axes of its comparison; and
// soakd config --check takes it: every variable known, every value valid.
func TestRecipesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.env"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".env"))
	}
	var want []string
	for _, r := range recipes {
		want = append(want, r.name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("examples/ holds %v, want the recipes %v", names, want)
	}
	known := gridKnown(t)
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			path := recipePath(r.name)
			env, err := dotenv.GetEnvFromFile(nil, []string{path})
			if err != nil {
				t.Fatalf("compose-go cannot read it: %v", err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			target := "SOAKD_" + strings.ToUpper(r.workload) + "_TARGET"
			for _, w := range []string{"#   soakd sweep --env-file examples/" + r.name + ".env\n", "# Target", "Full scale"} {
				if !strings.Contains(text, w) {
					t.Errorf("does not say %q", w)
				}
			}
			if env["SOAKD_WORKLOADS"] != r.workload || env[target] == "" {
				t.Errorf("SOAKD_WORKLOADS=%q %s=%q: want workload %s and its target", env["SOAKD_WORKLOADS"], target, env[target], r.workload)
			}
			if !strings.Contains(text, "soakd sweep --env-file examples/"+r.name+".env") ||
				!retargetShown(text, r.workload) {
				t.Errorf("does not show how to point it at another target")
			}
			if names, _ := gridAxes(t, env["SOAKD_SWEEP_GRID"]); !slices.Equal(names, r.axes) {
				t.Errorf("SOAKD_SWEEP_GRID %q sweeps %v, want %v", env["SOAKD_SWEEP_GRID"], names, r.axes)
			}
			if !known {
				t.Skip("this soakd has no SOAKD_SWEEP_GRID (soakd config does not list it): config --check would refuse it as unknown")
			}
			if code, out, errs := run(t, nil, "config", "--check", "--env-file", path); code != cli.ExitOK || !strings.Contains(out, "configuration ok") {
				t.Errorf("config --check: exit %d\n%s%s", code, out, errs)
			}
			// Every cell of the grid is a valid configuration, as soakd
			// sweep checks them before its first run.
			_, environ, err := cli.EnvFiles([]string{"--env-file", path}, nil, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			p := plugins.All()
			cfg, err := config.Load(environ, p.Sources)
			if err = cfg.Check(p, err); err == nil {
				err = cfg.CheckSweep()
			}
			if err != nil {
				t.Fatalf("the sweep's settings: %v", err)
			}
			points, err := cfg.SweepPoints(environ, p)
			_, values := gridAxes(t, env["SOAKD_SWEEP_GRID"])
			cells := 1
			for _, v := range values {
				cells *= len(v)
			}
			if err != nil || len(points) != cells {
				t.Errorf("the grid's cells: %d of %d valid: %v", len(points), cells, err)
			}
		})
	}
}

// retargetShown says whether text shows a command that sets the
// workload's target (or the variables its grid's targets come from) in
// the environment before soakd sweep.
func retargetShown(text, workload string) bool {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		if strings.HasPrefix(l, "SOAKD_"+strings.ToUpper(workload)+"_TARGET=") || strings.HasPrefix(l, "CNOSDB_URL=") && strings.Contains(text, "INFLUXDB_URL=") {
			return true
		}
	}
	return false
}

// runRecipe runs soakd sweep --env-file examples/NAME.env, the file as it
// is, with env (the test's target and scale) winning over it, and checks
// the report's shape: the axes and their values the file declares (as
// read with env), every cell once in the grid's order, last axis fastest,
// each run's counts adding up, in the JSON and the CSV alike.
func runRecipe(t *testing.T, r recipe, env map[string]string) (res *sweep.Result, out string) {
	t.Helper()
	if !gridKnown(t) {
		t.Skip("this soakd has no SOAKD_SWEEP_GRID (soakd config does not list it): the recipe cannot run")
	}
	out = filepath.Join(t.TempDir(), r.name)
	environ := map[string]string{"SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_LOG_LEVEL": "warn",
		"SOAKD_SWEEP_REPEATS": "1", "SOAKD_SWEEP_DURATION": "1s", "SOAKD_SWEEP_OUT": out}
	for k, v := range env {
		environ[k] = v
	}
	path := recipePath(r.name)
	code, stdout, stderr := run(t, environ, "sweep", "--env-file", path)
	defer func() {
		if t.Failed() {
			t.Logf("soakd sweep's log:\n%s", stderr)
		}
	}()
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s", code, stdout)
	}
	_, read, err := cli.EnvFiles([]string{"--env-file", path}, environ, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	names, values := gridAxes(t, read["SOAKD_SWEEP_GRID"])
	res = new(sweep.Result)
	*res = readJSON[sweep.Result](t, out+".json")
	if res.Outcome != "done" || res.Workload != r.workload {
		t.Errorf("outcome %q of workload %q, want done, %s", res.Outcome, res.Workload, r.workload)
	}
	if len(res.Axes) != len(names) {
		t.Fatalf("axes %+v, want %v", res.Axes, names)
	}
	cells := 1
	for i, a := range res.Axes {
		if a.Name != names[i] || !slices.Equal(a.Values, values[i]) {
			t.Errorf("axis %d is %s=%v, want %s=%v", i, a.Name, a.Values, names[i], values[i])
		}
		cells *= len(values[i])
	}
	if len(res.Points) != cells {
		t.Fatalf("%d points, want the %d cells of %v", len(res.Points), cells, names)
	}
	best := 0
	for i, p := range res.Points {
		// The last axis varies fastest.
		want := make([]string, len(values))
		for a, n := len(values)-1, i; a >= 0; a-- {
			want[a], n = values[a][n%len(values[a])], n/len(values[a])
		}
		if !slices.Equal(p.AxisValues, want) {
			t.Errorf("point %d is %v, want %v", i, p.AxisValues, want)
		}
		for a, name := range names {
			if got := map[string]int{"WORKERS": p.Workers, "BATCH_SIZE": p.Batch, "PIPELINE": p.Batch}[name]; got != 0 && strconv.Itoa(got) != p.AxisValues[a] {
				t.Errorf("point %v ran %s=%d", p.AxisValues, name, got)
			}
		}
		if p.Best {
			best++
		}
		if len(p.Runs) != 1 || len(p.Rates) != 1 {
			t.Errorf("point %v: %d runs, %d rates; want the one run SOAKD_SWEEP_REPEATS=1 asks", p.AxisValues, len(p.Runs), len(p.Rates))
			continue
		}
		var failed int64
		for _, c := range p.Runs {
			if c.Units <= 0 || c.Seconds <= 0 {
				t.Errorf("point %v wrote %d units in %gs", p.AxisValues, c.Units, c.Seconds)
			}
			if c.Scheduled != c.Units+c.Failed+c.Dropped+c.InFlight {
				t.Errorf("point %v: scheduled %d != units %d + failed %d + dropped %d + in flight %d",
					p.AxisValues, c.Scheduled, c.Units, c.Failed, c.Dropped, c.InFlight)
			}
			if c.Failed != 0 || c.Dropped != 0 {
				t.Errorf("point %v: %d failed (last error %q), %d dropped against a healthy server", p.AxisValues, c.Failed, c.LastError, c.Dropped)
			}
			failed += c.Failed
		}
		if c := p.Runs[0]; p.Rates[0] <= 0 || !near(p.Rates[0], float64(c.Units)/c.Seconds) || p.Median != p.Rates[0] {
			t.Errorf("point %v: rate %g, median %g, but %d units in %gs", p.AxisValues, p.Rates[0], p.Median, c.Units, c.Seconds)
		}
		if p.Failed != failed {
			t.Errorf("point %v: %d failed, its runs %d", p.AxisValues, p.Failed, failed)
		}
	}
	if best != 1 {
		t.Errorf("%d points marked best, want one", best)
	}
	checkRecipeCSV(t, out+".csv", names, res)
	md, err := os.ReadFile(out + ".md")
	if err != nil {
		t.Fatal(err)
	}
	checkRecipeMarkdown(t, string(md), names, values, res)
	return res, out
}

// mdTable is the markdown table under the heading "## title": its rows'
// cells, the header first, the alignment row left out; nil without one.
func mdTable(md, title string) [][]string {
	_, rest, ok := strings.Cut(md, "\n## "+title+"\n\n")
	if !ok {
		return nil
	}
	var rows [][]string
	for i, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		if i == 1 {
			continue // |---|---:|
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

// checkRecipeMarkdown checks the report's tables have the grid's shape.
// Two axes: a table of the median units/s (and one of values/s for
// series), the first axis's values down, the second's across, each cell
// its point's median, the best one's alone in bold; one of each cell's
// p99 alike. Any number of axes: the long table, one row per cell in the
// grid's order, with its median and p99.
func checkRecipeMarkdown(t *testing.T, md string, names []string, values [][]string, res *sweep.Result) {
	t.Helper()
	// A rate's cell: the highest of its table in bold.
	rate := func(figure func(sweep.Point) float64) func(sweep.Point) string {
		var top float64
		for _, p := range res.Points {
			top = max(top, figure(p))
		}
		return func(p sweep.Point) string {
			c := strconv.FormatFloat(figure(p), 'f', 0, 64)
			if figure(p) == top {
				c = "**" + c + "**"
			}
			return c
		}
	}
	if len(names) == 2 {
		type table struct {
			title  string
			figure func(sweep.Point) string
		}
		tables := []table{
			{res.Unit + "/s (median)", rate(func(p sweep.Point) float64 { return p.Median })},
			{"p99 latency (median over runs)", func(p sweep.Point) string { return pace.FormatSeconds(p.P99) }},
		}
		if res.Values {
			tables = append(tables, table{"values/s (median)", rate(func(p sweep.Point) float64 { return p.ValueMedian })})
		}
		for _, tb := range tables {
			rows := mdTable(md, tb.title)
			if len(rows) != 1+len(values[0]) {
				t.Errorf("table %q: %d rows, want a header and one per %s value %v:\n%s", tb.title, len(rows), names[0], values[0], md)
				continue
			}
			if want := append([]string{names[0] + " \\ " + names[1]}, values[1]...); !slices.Equal(rows[0], want) {
				t.Errorf("table %q: header %q, want %q", tb.title, rows[0], want)
			}
			for i, p := range res.Points {
				r, c := i/len(values[1]), i%len(values[1])
				if row := rows[1+r]; len(row) != 1+len(values[1]) || row[0] != values[0][r] || row[1+c] != tb.figure(p) {
					t.Errorf("table %q: row %q, want %s in the column of %s=%s", tb.title, row, tb.figure(p), names[1], values[1][c])
				}
			}
		}
	}
	rows := mdTable(md, "Points")
	if len(rows) != 1+len(res.Points) || !slices.Equal(rows[0][:len(names)+2], append(slices.Clone(names), res.Unit+"/s median", "min")) {
		t.Fatalf("the long table: %d rows, header %q; want one per cell under the axes %v:\n%s", len(rows)-1, rows[0], names, md)
	}
	p99 := slices.Index(rows[0], "p99")
	for i, p := range res.Points {
		row := rows[1+i]
		if !slices.Equal(row[:len(names)], p.AxisValues) || row[len(names)] != strconv.FormatFloat(p.Median, 'f', 0, 64) || p99 < 0 || row[p99] != pace.FormatSeconds(p.P99) {
			t.Errorf("the long table's row %q, want the point %v with its median %.0f and p99 %s", row, p.AxisValues, p.Median, pace.FormatSeconds(p.P99))
		}
	}
}

func near(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

// checkRecipeCSV checks the CSV has the axes as its first columns and
// one row per cell (one run each), with the JSON's counts.
func checkRecipeCSV(t *testing.T, path string, names []string, res *sweep.Result) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(res.Points)+1 || !slices.Equal(rows[0][:len(names)], names) {
		t.Fatalf("CSV: %d rows, header %v; want %d cells under the axes %v", len(rows)-1, rows[0], len(res.Points), names)
	}
	col := slices.Index(rows[0], "units")
	if col < 0 {
		t.Fatalf("CSV header %v has no units", rows[0])
	}
	for i, p := range res.Points {
		row := rows[i+1]
		if !slices.Equal(row[:len(names)], p.AxisValues) || row[col] != strconv.FormatInt(p.Runs[0].Units, 10) {
			t.Errorf("CSV row %v, want the point %v with %d units", row, p.AxisValues, p.Runs[0].Units)
		}
	}
}

// kwdb-tsbs against PostgreSQL and TimescaleDB: every cell writes the
// recipe's finite TSBS day, cut to ten minutes here, exactly, into tables
// emptied before each run, which then hold the last run's rows.
func TestRecipeKWDBTSBS(t *testing.T) {
	for _, srv := range []struct {
		name string
		db   func(testing.TB, ...testserver.PostgresOption) *testserver.Server
		url  string
	}{{"postgres", testserver.Postgres, ""}, {"timescaledb", testserver.TimescaleDB, "&dialect=timescaledb"}} {
		t.Run(srv.name, func(t *testing.T) {
			db := srv.db(t)
			res, out := runRecipe(t, recipes[0], map[string]string{"SOAKD_CPU_TARGET": db.URL + srv.url, "SOAKD_CPU_SCALE": "10", "SOAKD_CPU_END": "+10m",
				"SOAKD_SWEEP_DURATION": "20s"})
			// The walkthrough's advice is tested by the USL fit along
			// WORKERS, at the best cell's BATCH_SIZE.
			var best sweep.Point
			for _, p := range res.Points {
				if p.Best {
					best = p
				}
			}
			where := "BATCH_SIZE=" + strconv.Itoa(best.Batch)
			if u := res.USL; u == nil || !slices.Equal(u.Workers, []int{1, 2, 4, 8}) || !slices.Equal(u.Where, []string{where}) {
				t.Errorf("USL %+v, want it along WORKERS 1, 2, 4, 8 at %s", res.USL, where)
			}
			if md, _ := os.ReadFile(out + ".md"); !strings.Contains(string(md), "\n## Universal Scalability Law (WORKERS at "+where+")\n") {
				t.Errorf("the markdown has no USL section at %s:\n%s", where, md)
			}
			const rows = 10 * 60 // hosts × readings in ten minutes at 10 s
			for _, p := range res.Points {
				if c := p.Runs[0]; c.Units != rows || c.Values != rows*10 {
					t.Errorf("point %v wrote %d rows, %d values; want the data set's %d rows of 10 values", p.AxisValues, c.Units, c.Values, rows)
				}
			}
			if n := testserver.PGCount(t, db.URL, "SELECT count(*) FROM cpu"); n != rows {
				t.Errorf("the table holds %d rows after the sweep, want the last run's %d", n, rows)
			}
		})
	}
}

// cnosdb-influxdb against one InfluxDB 1.8 under two URLs, one database
// each, in the recipe's CnosDB and InfluxDB places: every WORKERS cell of
// each target, 10 values a row, and each database written to.
func TestRecipeCnosDBInfluxDB(t *testing.T) {
	srv := testserver.Influx(t)
	base := "influx1://" + srv.Addr
	// Batches of 500, not 5000: on a busy machine 16 writers of 5000
	// rows each into one influxd have had two batches fail, and the test
	// wants none (a failed batch's last error is in its message).
	res, _ := runRecipe(t, recipes[1], map[string]string{"CNOSDB_URL": base + "?db=cnos", "INFLUXDB_URL": base + "?db=influx",
		"SOAKD_LP_SCALE": "50", "SOAKD_LP_START": "2026-01-01T00:00:00Z", "SOAKD_LP_BATCH_SIZE": "500"})
	for _, p := range res.Points {
		if c := p.Runs[0]; c.Values != c.Units*10 {
			t.Errorf("point %v: %d values for %d rows, want 10 a row", p.AxisValues, c.Values, c.Units)
		}
	}
	for _, db := range []string{"cnos", "influx"} {
		if n := influxCount(t, srv.URL, db); n <= 0 {
			t.Errorf("database %s holds no row: the TARGET axis did not reach it", db)
		}
	}
}

// influxCount is the number of cpu rows database db holds.
func influxCount(t *testing.T, base, db string) int64 {
	t.Helper()
	resp, err := http.Get(base + "/query?db=" + db + "&q=" + url.QueryEscape("SELECT count(usage_user) FROM cpu"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Results) == 0 || len(body.Results[0].Series) == 0 || len(body.Results[0].Series[0].Values) == 0 {
		return 0
	}
	n, _ := body.Results[0].Series[0].Values[0][1].(float64) // [time, count]
	return int64(n)
}

// keewidb-ycsb against redis-server: every value size × data type × mix
// cell, the records loaded again before each (the keys of another data
// type emptied first).
func TestRecipeKeeWiDBYCSB(t *testing.T) {
	srv := testserver.Redis(t)
	res, _ := runRecipe(t, recipes[2], map[string]string{"SOAKD_YCSB_TARGET": srv.URL, "SOAKD_YCSB_RECORDS": "200", "SOAKD_YCSB_WORKERS": "4"})
	if res.Unit != "ops" || res.Values {
		t.Errorf("unit %q, values %v: want ops and no values", res.Unit, res.Values)
	}
}

// matrixdb-massive against PostgreSQL and TimescaleDB: every devices ×
// columns cell, COLUMNS values a row, each with the server's memory (its
// process watched, found by pid here: the machine may run others).
func TestRecipeMatrixDBMassive(t *testing.T) {
	for _, srv := range []struct {
		name string
		db   func(testing.TB, ...testserver.PostgresOption) *testserver.Server
		url  string
	}{{"postgres", testserver.Postgres, ""}, {"timescaledb", testserver.TimescaleDB, "&dialect=timescaledb"}} {
		t.Run(srv.name, func(t *testing.T) {
			db := srv.db(t)
			res, out := runRecipe(t, recipes[3], map[string]string{"SOAKD_MASSIVE_TARGET": db.URL + srv.url,
				// Runs of 3 s: a reading of the tables' sizes cut by the
				// run's end is dropped whole, the process's memory with it,
				// and on a busy machine TimescaleDB's take most of a second.
				"SOAKD_MASSIVE_WATCH_PROCESS": strconv.Itoa(db.Pid()), "SOAKD_SWEEP_DURATION": "3s"})
			for _, p := range res.Points {
				cols, _ := strconv.Atoi(p.AxisValues[1])
				if c := p.Runs[0]; c.Values != c.Units*int64(cols) {
					t.Errorf("point %v: %d values for %d rows, want %d a row", p.AxisValues, c.Values, c.Units, cols)
				}
				if p.TargetMemoryBytes == nil || *p.TargetMemoryBytes <= 0 {
					t.Errorf("point %v without the server's memory", p.AxisValues)
				}
			}
			if !res.Values {
				t.Error("the report does not count values (points/s)")
			}
			md, _ := os.ReadFile(out + ".md")
			if !strings.Contains(string(md), "target memory") {
				t.Errorf("the markdown has no target memory column:\n%s", md)
			}
		})
	}
}
