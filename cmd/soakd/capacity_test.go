package main

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sweep"
)

// soakd capacity against real servers: the search runs its steps, and the
// report is on stdout and in files: markdown, CSV, JSON, and each chart
// as an SVG that parses and a PNG that decodes. Each case starts its own
// server (-run TestCapacityAgainstRealServers/remotewrite starts only
// VictoriaMetrics).
func TestCapacityAgainstRealServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) map[string]string
	}{
		{"redis", func(t *testing.T) map[string]string {
			return map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": testserver.Redis(t).URL, "SOAKD_KV_RECORDS": "2000",
				"SOAKD_KV_KEY_PREFIX": "cap:", "SOAKD_KV_WORKERS": "8"}
		}},
		{"postgres", func(t *testing.T) map[string]string {
			return map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": testserver.Postgres(t).URL,
				"SOAKD_CPU_BATCH_SIZE": "100", "SOAKD_CPU_WORKERS": "4"}
		}},
		// Remote write: the steps' rows are devops rows of 10 samples
		// each, sent as Remote-Write requests, and the target's figures
		// come from its own /metrics.
		{"remotewrite", func(t *testing.T) map[string]string {
			return map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops",
				"SOAKD_CPU_TARGET":     "prom+" + testserver.VictoriaMetrics(t).URL + "/api/v1/write",
				"SOAKD_CPU_BATCH_SIZE": "100", "SOAKD_CPU_WORKERS": "4"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cap")
			env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_CAPACITY_START": "200",
				"SOAKD_CAPACITY_STEP": "x2", "SOAKD_CAPACITY_MAX": "800", "SOAKD_CAPACITY_WARMUP": "1s",
				"SOAKD_CAPACITY_SETTLE": "1s", "SOAKD_CAPACITY_HOLD": "2s", "SOAKD_CAPACITY_SLO_P99": "2s",
				"SOAKD_CAPACITY_REFINE": "1", "SOAKD_CAPACITY_OUT": out}
			for k, v := range tc.env(t) {
				env[k] = v
			}
			code, stdout, stderr := run(t, env, "capacity")
			if code != cli.ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "# Capacity of workload") || !strings.Contains(stdout, "**Knee:") {
				t.Errorf("no markdown report on stdout:\n%s", stdout)
			}
			res := readJSON[capacity.Result](t, out+".json")
			// Which of 200, 400 and 800/s a real server passes depends on
			// how loaded the machine is (two busy loops beside it made the
			// 800/s step achieve 695/s), so the knee is not asserted: the
			// search must run its steps, measure each and find a knee
			// among the rates it tried. The search's logic is tested
			// exactly on modelled targets (daemon.TestCapacity*).
			if !res.Found || len(res.Steps) < 2 || res.Knee < 200 || res.Knee > 800 {
				t.Errorf("knee %v found %v after %d steps, want one in 200..800 after 2 or more: %s", res.Knee, res.Found, len(res.Steps), res.Outcome)
			}
			for _, s := range res.Steps {
				if s.Achieved <= 0 || s.Response.Count == 0 {
					t.Errorf("step %d: achieved %v of %v, %d latencies", s.Index, s.Achieved, s.Target, s.Response.Count)
				}
			}
			if res.Servers[res.Workload] == "" || res.Environment.Cores == 0 {
				t.Errorf("environment %+v, servers %v", res.Environment, res.Servers)
			}
			f, err := os.Open(out + ".csv")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(rows) != len(res.Steps)+1 {
				t.Errorf("CSV: %d rows (%v), want a header and %d steps", len(rows), err, len(res.Steps))
			}
			if md, err := os.ReadFile(out + ".md"); err != nil || !bytes.Contains(md, []byte("| # | kind |")) {
				t.Errorf("markdown file: %v", err)
			}
			for _, chart := range []string{"rate", "latency"} {
				svg, err := os.ReadFile(out + "-" + chart + ".svg")
				if err != nil {
					t.Fatal(err)
				}
				if err := xml.Unmarshal(svg, new(struct{})); err != nil || !bytes.Contains(svg, []byte("data-points=")) {
					t.Errorf("%s.svg does not parse as an SVG with data: %v", chart, err)
				}
				pf, err := os.Open(out + "-" + chart + ".png")
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(pf)
				pf.Close()
				if err != nil || img.Bounds().Dx() < 100 {
					t.Errorf("%s.png: %v", chart, err)
				}
			}
			// The target's charts are written when some step has the
			// figure (the watch is on, every 10s), each drawing every such
			// step, and never otherwise.
			var mem, cores int
			for _, s := range res.Steps {
				if s.TargetMemoryBytes != nil {
					mem++
				}
				if s.TargetCPUCores != nil {
					cores++
				}
			}
			for _, c := range []struct {
				chart, series string
				n             int
			}{{"target-memory", "memory", mem}, {"target-cpu", "cores", cores}} {
				svg, err := os.ReadFile(out + "-" + c.chart + ".svg")
				if (c.n > 0) != (err == nil) || (c.n > 0 && !bytes.Contains(svg, fmt.Appendf(nil, `data-series="%s" data-points="%d"`, c.series, c.n))) {
					t.Errorf("%s.svg: %v, want it when a step has the figure, drawing all %d such steps", c.chart, err, c.n)
				}
			}
		})
	}
}

// Bad capacity settings are configuration errors naming their variable.
func TestCapacityBadSettings(t *testing.T) {
	code, _, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CAPACITY_STEP": "fast",
		"SOAKD_CAPACITY_SLO_ERRORS": "200%", "SOAKD_CAPACITY_WORKLOAD": "nope"}, "capacity")
	if code != cli.ExitConfig {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"SOAKD_CAPACITY_STEP: ", `"fast": want +N`, "SOAKD_CAPACITY_SLO_ERRORS: ", "SOAKD_CAPACITY_WORKLOAD: \"nope\""} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A capacity or sweep setting that does not parse is one problem, said
// once: it was also checked as the zero value it was left at, and
// CAPACITY_START=1x got "0: want a rate above 0" beside "is not a
// number", SWEEP_REPEATS=three "0 is out of range", in soakd capacity,
// soakd sweep and config --check alike.
func TestCapacityAndSweepUnreadSettingSaidOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  []string
		env  map[string]string
		keys []string
	}{
		{[]string{"capacity"}, map[string]string{"SOAKD_CAPACITY_START": "1x", "SOAKD_CAPACITY_MAX": "abc"}, []string{"SOAKD_CAPACITY_START", "SOAKD_CAPACITY_MAX"}},
		{[]string{"config", "--check"}, map[string]string{"SOAKD_CAPACITY_START": "1x", "SOAKD_CAPACITY_HOLD": "30"}, []string{"SOAKD_CAPACITY_START", "SOAKD_CAPACITY_HOLD"}},
		{[]string{"sweep"}, map[string]string{"SOAKD_SWEEP_REPEATS": "three", "SOAKD_SWEEP_DURATION": "10x"}, []string{"SOAKD_SWEEP_REPEATS", "SOAKD_SWEEP_DURATION"}},
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "off"}
		for k, v := range tc.env {
			env[k] = v
		}
		code, _, stderr := run(t, env, tc.cmd...)
		if code != cli.ExitConfig {
			t.Errorf("soakd %v with %v: exit %d, want 2\n%s", tc.cmd, tc.env, code, stderr)
		}
		for _, k := range tc.keys {
			if n := strings.Count(stderr, k+": "); n != 1 {
				t.Errorf("soakd %v: %s named %d times, want once (its parse error):\n%s", tc.cmd, k, n, stderr)
			}
		}
	}
}

// CAPACITY_MAX NaN, or above the highest rate a run takes, is refused
// naming it: NaN passed the check against START, the search ran steps
// "at NaN/s" and left its JSON report empty (NaN is no JSON number);
// 1e12 searched at rates no run accepts.
func TestCapacityMaxOutOfRange(t *testing.T) {
	t.Parallel()
	for _, max := range []string{"NaN", "1e12", "0", "-5"} {
		// DURATION and OUT bound a search that would run, and where its
		// report would go.
		code, _, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CAPACITY_MAX": max, "SOAKD_DURATION": "2s",
			"SOAKD_CAPACITY_OUT": filepath.Join(t.TempDir(), "capacity")}, "capacity")
		if code != cli.ExitConfig || !strings.Contains(stderr, "SOAKD_CAPACITY_MAX: ") || !strings.Contains(stderr, "at most 1e+09 units/s") {
			t.Errorf("CAPACITY_MAX=%s: exit %d, want 2 naming SOAKD_CAPACITY_MAX and its range; stderr:\n%s", max, code, stderr)
		}
	}
}

// A step too small to climb to MAX (a millionth of START, or
// x1.0000000001: days of steps, or none at all below the rate's
// precision) is refused; 0.1 % of START is taken, and so is a smaller
// step to a MAX close by (+50 from 100,000 to 101,000: 20 steps).
func TestCapacityStepTooSmall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		step, start, max string
		ok               bool
	}{
		{"x1.0000000001", "1000", "", false}, {"+1e-9", "1000", "", false}, {"+0.5", "1000", "", false},
		{"x1.001", "1000", "", true}, {"+1", "1000", "", true}, {"+50", "100000", "101000", true}, {"+50", "100000", "200000", false},
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CAPACITY_STEP": tc.step, "SOAKD_CAPACITY_START": tc.start}
		if tc.max != "" {
			env["SOAKD_CAPACITY_MAX"] = tc.max
		}
		code, _, stderr := run(t, env, "config", "--check")
		if tc.ok != (code == cli.ExitOK) || !tc.ok && !strings.Contains(stderr, "SOAKD_CAPACITY_STEP: "+tc.step+" adds less than 0.1% to CAPACITY_START") {
			t.Errorf("STEP=%s from %s to %q: exit %d, want ok %v\n%s", tc.step, tc.start, tc.max, code, tc.ok, stderr)
		}
	}
}

// A first step due less than two batches (START 100/s for HOLD 1s, in
// batches of 1,000) may acknowledge nothing, and the search ended there
// with "the target does not meet the SLO even at CAPACITY_START" and a
// bottleneck of soakd: a configuration error naming START, HOLD and
// BATCH_SIZE before anything runs, in config --check too; a HOLD that
// holds two batches passes.
func TestCapacityFirstStepHoldsABatch(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": "null://", "SOAKD_LISTEN": "off",
		"SOAKD_CAPACITY_START": "100", "SOAKD_CAPACITY_HOLD": "1s"}
	for _, cmd := range [][]string{{"capacity"}, {"config", "--check"}} {
		code, _, stderr := run(t, env, cmd...)
		if code != cli.ExitConfig || !strings.Contains(stderr, "SOAKD_CAPACITY_START: 100/s for CAPACITY_HOLD 1s is 100 units, less than two batches of SOAKD_W_BATCH_SIZE=1000") {
			t.Errorf("soakd %v: exit %d, want 2 naming START, HOLD and BATCH_SIZE\n%s", cmd, code, stderr)
		}
	}
	env["SOAKD_CAPACITY_HOLD"] = "20s"
	if code, out, stderr := run(t, env, "config", "--check"); code != cli.ExitOK || !strings.Contains(out, "configuration ok") {
		t.Errorf("START 100/s for HOLD 20s in batches of 1000: exit %d, want ok\n%s", code, stderr)
	}
}

// A search stopped before it ended (here by SOAKD_DURATION, as by a
// signal) gives only a lower bound of the knee: the report and the JSON
// say so and soakd exits 1, so that a CI reading the exit code does not
// take where the search was cut off for the target's knee (it printed
// "Knee: …" and exited 0).
func TestCapacityStoppedIsALowerBound(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "cap")
	code, stdout, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": "null://",
		"SOAKD_W_BATCH_SIZE": "10", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_DURATION": "7s",
		"SOAKD_CAPACITY_START": "1000", "SOAKD_CAPACITY_WARMUP": "1s", "SOAKD_CAPACITY_SETTLE": "1s", "SOAKD_CAPACITY_HOLD": "1s",
		"SOAKD_CAPACITY_OUT": out}, "capacity")
	if code != cli.ExitFailed || !strings.Contains(stderr, "stopped before the search ended: the knee is at least") {
		t.Errorf("exit %d, want 1 saying the knee is a lower bound\n%s", code, tail(stderr, 2000))
	}
	if strings.Contains(stdout, "**Knee:") || !strings.Contains(stdout, "**The knee is at least ") {
		t.Errorf("the report headlines a knee it did not find:\n%s", stdout)
	}
	res := readJSON[capacity.Result](t, out+".json")
	if !res.Stopped || !res.Found {
		t.Errorf("JSON: stopped %v found %v, want both", res.Stopped, res.Found)
	}
}

// A search with no target set runs against the built-in target, in
// soakd's own process: the report names it where the target's version
// goes, so a report passed on without its log does not read as a
// database's capacity.
func TestCapacityOfTheBuiltinTargetSaysSo(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "cap")
	_, stdout, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq",
		"SOAKD_W_BATCH_SIZE": "10", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_DURATION": "4s",
		"SOAKD_CAPACITY_START": "1000", "SOAKD_CAPACITY_WARMUP": "1s", "SOAKD_CAPACITY_SETTLE": "1s", "SOAKD_CAPACITY_HOLD": "1s",
		"SOAKD_CAPACITY_OUT": out}, "capacity")
	want := "the built-in target null://"
	if !strings.Contains(stdout, "| target of w | "+want) || !strings.Contains(stdout, "no SOAKD_W_TARGET set") {
		t.Errorf("the report does not say the target is the built-in one:\n%s\n%s", stdout, tail(stderr, 2000))
	}
	if res := readJSON[capacity.Result](t, out+".json"); !strings.HasPrefix(res.Servers["w"], want) {
		t.Errorf("JSON servers %v, want w's built-in target", res.Servers)
	}
}

// A summary (SOAKD_SUMMARY_JSON) or a run report (SOAKD_REPORT) that
// cannot be written (/dev/full: its directory exists, so the settings
// pass) fails the search after its own report is written: the search's
// steps and knee were lost with them, neither printed nor in OUT.*.
func TestCapacitySummaryWriteFailureKeepsItsReport(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"SOAKD_SUMMARY_JSON", "SOAKD_REPORT"} {
		t.Run(setting, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "cap")
			code, stdout, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": "null://",
				"SOAKD_W_BATCH_SIZE": "10", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", setting: "/dev/full",
				"SOAKD_CAPACITY_START": "1000", "SOAKD_CAPACITY_MAX": "1000", "SOAKD_CAPACITY_WARMUP": "0s", "SOAKD_CAPACITY_SETTLE": "0s",
				"SOAKD_CAPACITY_HOLD": "1s", "SOAKD_CAPACITY_OUT": out}, "capacity")
			if code != cli.ExitFailed || !strings.Contains(stderr, setting) {
				t.Errorf("exit %d, want 1 naming %s\n%s", code, setting, tail(stderr, 2000))
			}
			if !strings.Contains(stdout, "# Capacity of workload w") {
				t.Errorf("no capacity report on stdout:\n%s", tail(stdout, 2000))
			}
			res := readJSON[capacity.Result](t, out+".json")
			if len(res.Steps) == 0 || res.Steps[0].Target != 1000 {
				t.Errorf("JSON report: %d steps, %s", len(res.Steps), res.Outcome)
			}
			for _, ext := range []string{".md", ".csv"} {
				if st, err := os.Stat(out + ext); err != nil || st.Size() == 0 {
					t.Errorf("%s not written: %v", out+ext, err)
				}
			}
		})
	}
}

// soakd sweep against a real PostgreSQL: every point runs, bigger batches
// write faster (the expected shape), the report files are written, and
// the USL fit's peak is inside the measured range or the report says the
// fit is poor.
func TestSweepAgainstPostgres(t *testing.T) {
	pg := testserver.Postgres(t)
	out := filepath.Join(t.TempDir(), "sweep")
	code, stdout, stderr := run(t, map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": pg.URL, "SOAKD_CPU_SCALE": "20",
		"SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+2h", "SOAKD_SWEEP_WORKERS": "1,2,4",
		"SOAKD_SWEEP_BATCH": "5,500", "SOAKD_SWEEP_REPEATS": "2", "SOAKD_SWEEP_RESET": "true", "SOAKD_SWEEP_OUT": out}, "sweep")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log(stdout)
	res := readJSON[sweep.Result](t, out+".json")
	if len(res.Points) != 6 {
		t.Fatalf("%d points, want 3 workers × 2 batch sizes", len(res.Points))
	}
	med, p99 := map[[2]int]float64{}, map[[2]int]float64{}
	for _, p := range res.Points {
		if len(p.Rates) != 2 || p.Min > p.Median || p.Median > p.Max || p.Failed != 0 {
			t.Errorf("point %+v", p)
		}
		med[[2]int{p.Workers, p.Batch}] = p.Median
		p99[[2]int{p.Workers, p.Batch}] = p.P99
	}
	// Each point ran with its own BATCH_SIZE: a write of 500 rows takes
	// far longer than one of 5 at every worker count, and over the whole
	// grid the bigger batch writes more. The throughputs are summed over
	// the worker counts (each point's own is too noisy on a busy machine
	// to compare alone); a sweep that left BATCH_SIZE as configured would
	// give equal figures.
	var big, small float64
	for _, w := range []int{1, 2, 4} {
		big += med[[2]int{w, 500}]
		small += med[[2]int{w, 5}]
		if p99[[2]int{w, 500}] <= p99[[2]int{w, 5}] {
			t.Errorf("%d workers: a write of 500 rows took p99 %v, one of 5 rows %v: want longer", w, p99[[2]int{w, 500}], p99[[2]int{w, 5}])
		}
	}
	if big <= 1.2*small {
		t.Errorf("batch 500 wrote %.0f rows/s summed over the worker counts, batch 5 %.0f: want more with the bigger batch", big, small)
	}
	u := res.USL
	if u == nil || !(u.Poor || (u.PeakN >= 1 && u.PeakN <= 4)) || u.Note == "" {
		t.Errorf("USL %+v: want a peak within 1..4 workers or the fit called poor", u)
	}
	if !strings.Contains(stdout, "Universal Scalability Law") || !strings.Contains(stdout, "**Best:") {
		t.Errorf("report lacks the fit or the best point")
	}
	for _, f := range []string{".md", ".csv", "-batch.svg", "-batch.png", "-usl.svg", "-usl.png"} {
		if st, err := os.Stat(out + f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
