package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/enginetest"
)

// failing is a point of one run whose failed units are that share of
// those scheduled.
func failing(p Point, share float64) Point {
	p.Rates, p.Min, p.Max = []float64{p.Median}, p.Median, p.Median
	p.Failed = int64(share * 1000)
	p.Runs = []RunCounts{{Seconds: 1, Units: 1000, Scheduled: 1000, Failed: p.Failed}}
	if p.Failed > 0 {
		p.Runs[0].LastError = "timeout: write timed out"
	}
	p.failedShare()
	return p
}

// A point whose runs failed more than 1% of their units is neither the
// best, nor slower than with fewer workers, nor a point of the USL fit,
// nor compared with: its rate measures failing fast. The tables say its
// share and the markdown why it was left out; the JSON carries both.
// Bugs caught: a failing point ranked best or fitted; a share counted
// over units rather than scheduled units; the left-out point marking its
// neighbour slower.
func TestSweepLeftOutForFailures(t *testing.T) {
	t.Parallel()
	r := &Result{Workload: "w", Unit: "ops", BatchName: "PIPELINE", Settings: config.SweepConfig{Repeats: 1, Duration: time.Second},
		Axes: []Axis{{Name: "DATA_TYPE", Values: []string{"string", "hash"}}, {Name: "WORKERS", Values: []string{"1", "2", "4"}, Numeric: true}}}
	for _, dt := range []struct {
		name  string
		x     []float64
		share []float64
	}{{"string", []float64{100, 190, 350}, []float64{0, 0.01, 0.05}}, {"hash", []float64{80, 400, 120}, []float64{0, 0.5, 0}}} {
		for i, w := range []int{1, 2, 4} {
			r.Points = append(r.Points, failing(Point{AxisValues: []string{dt.name, []string{"1", "2", "4"}[i]}, Workers: w, Batch: 1,
				Median: dt.x[i]}, dt.share[i]))
		}
	}
	r.mark()
	r.USL = r.fitUSL()
	for i, p := range r.Points {
		if p.Best != (i == 1) || p.Falls || p.LeftOut != (i == 2 || i == 4) {
			t.Errorf("point %v: best %v, falls %v, left out %v (share %v)", p.AxisValues, p.Best, p.Falls, p.LeftOut, p.FailedShare)
		}
	}
	if u := r.USL; u == nil || len(u.Workers) != 2 || u.Lambda != 0 {
		t.Errorf("USL %+v: want it over the 1 and 2 workers of string only, too few to fit", r.USL)
	}
	var md, js bytes.Buffer
	r.WriteMarkdown(&md)
	s := md.String()
	for _, want := range []string{
		"**Best: DATA_TYPE=string WORKERS=2: 190 ops/s",
		"| string | 4 | 350 | 350 | 350 | - | 50 | 5.0% failed |\n",
		"| hash | 2 | 400 | 400 | 400 | - | 500 | 50.0% failed |\n",
		"| hash | 4 | 120 | 120 | 120 | - | 0 |  |\n",
		"| string | 100 | **190** | 350 (5.0% failed) |\n",
		"\nPoints marked % failed had more than 1% of their scheduled units fail: they are left out of the best",
		// Why, point by point: the runs' own logs are silent.
		"\n## Failures\n\n- DATA_TYPE=string WORKERS=2: 10 ops failed; the last error: timeout: write timed out\n- DATA_TYPE=string WORKERS=4: 50 ops failed; the last error: timeout: write timed out\n- DATA_TYPE=hash WORKERS=2: 500 ops failed;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown without %q:\n%s", want, s)
		}
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct{ Points []Point }
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !back.Points[2].LeftOut || back.Points[2].FailedShare != 0.05 || back.Points[0].LeftOut {
		t.Errorf("JSON read back (%v): %+v", err, back.Points)
	}

	// The WORKERS × BATCH sweep likewise.
	c := &Result{Unit: "rows", BatchName: "BATCH_SIZE", Settings: config.SweepConfig{Repeats: 1, Duration: time.Second}}
	for i, x := range []float64{100, 300, 200, 250} {
		c.Points = append(c.Points, failing(Point{Workers: 1 << i, Batch: 10, Median: x}, []float64{0, 0.02, 0, 0}[i]))
	}
	c.mark()
	c.USL = c.fitUSL()
	if !c.Points[3].Best || c.Points[1].Best || c.Points[2].Falls || c.Points[3].Falls || len(c.USL.Workers) != 3 || c.USL.Measured[1] != 200 {
		t.Errorf("points %+v, USL %+v", c.Points, c.USL)
	}
	md.Reset()
	c.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| 2 | 10 | 300 | 300 | 300 | - | 20 | 2.0% failed |\n") || !strings.Contains(md.String(), "\nPoints marked % failed") ||
		!strings.Contains(md.String(), "\n## Failures\n\n- workers 2, BATCH_SIZE 10: 20 rows failed; the last error: timeout: write timed out\n") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// With series rows whose width varies with an axis (COLUMNS), the best
// point and the USL fit rank by values/s, the chart's and the fit's
// figure; a WORKERS × BATCH sweep keeps its units. Bug caught: the
// narrowest rows ranked best for their rows/s.
func TestSweepRanksByValues(t *testing.T) {
	t.Parallel()
	r := &Result{Unit: "rows", BatchName: "BATCH_SIZE", Values: true,
		Axes: []Axis{{Name: "COLUMNS", Values: []string{"1", "100"}}, {Name: "WORKERS", Values: []string{"1", "2", "4"}}}}
	for _, cols := range []string{"1", "100"} {
		n := map[string]float64{"1": 1, "100": 100}[cols]
		for i, w := range []string{"1", "2", "4"} {
			rows := 1000 / n * float64(i+1)
			r.Points = append(r.Points, Point{AxisValues: []string{cols, w}, Workers: 1 << i, Batch: 1, Median: rows, ValueMedian: rows * n * (1 + n/1000)})
		}
	}
	r.mark()
	r.USL = r.fitUSL()
	if !r.Points[5].Best || r.RankUnit() != "values" || r.USL == nil || strings.Join(r.USL.Where, " ") != "COLUMNS=100" || r.USL.Measured[0] != r.Points[3].ValueMedian {
		t.Errorf("best %+v; USL %+v", r.Points, r.USL)
	}
	c := &Result{Unit: "rows", Values: true, Points: []Point{{Median: 2, ValueMedian: 1}}}
	if c.Rank()(c.Points[0]) != 2 || c.RankUnit() != "rows" {
		t.Errorf("a WORKERS × BATCH sweep ranks by %v %s", c.Rank()(c.Points[0]), c.RankUnit())
	}
}

// Two values of one axis that show alike (URLs differing only in their
// password) stay two values, two columns, two points; and the estimate
// sums each point's own DURATION, an axis here. Bugs caught: axis values
// merged by their shown text, the estimate made of SOAKD_SWEEP_DURATION.
func TestSweepPlanByIndex(t *testing.T) {
	t.Parallel()
	p := enginetest.Plugins()
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SWEEP_REPEATS", "2",
		"SOAKD_SWEEP_GRID", "DURATION=1s,3s TARGET=null://u:pw1@h,null://u:pw2@h")
	cfg := enginetest.Load(t, env, p)
	r := &Result{Unit: "rows", BatchName: "BATCH_SIZE", Settings: cfg.Sweep}
	plan, err := r.plan(cfg, env, p, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 4 || len(r.Axes) != 2 || strings.Join(r.Axes[1].Values, " ") != "null://u:xxxxx@h #1 null://u:xxxxx@h #2" {
		t.Fatalf("%d points, axes %+v", len(plan), r.Axes)
	}
	for i, pl := range plan {
		r.Points = append(r.Points, Point{AxisValues: pl.values, at: pl.at, Median: float64(10 * (i + 1)), Rates: []float64{1}})
	}
	r.mark()
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	if want := "| DURATION \\ TARGET | null://u:xxxxx@h #1 | null://u:xxxxx@h #2 |\n|---|---:|---:|\n| 1s | 10 | 20 |\n| 3s | 30 | **40** |\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown without\n%s\n---- got:\n%s", want, md.String())
	}
	if strings.Contains(md.String(), "pw") {
		t.Errorf("a password in the report:\n%s", md.String())
	}
	lo, hi, all := planTime(plan, 2)
	if lo != 2*time.Second || hi != 6*time.Second || all != 16*time.Second {
		t.Errorf("point times %s to %s, %s in all; want 2s to 6s, 16s", lo, hi, all)
	}
	// Rate stages end a point sooner than DURATION; their commas need
	// the axis' | separator.
	env = enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SWEEP_REPEATS", "1",
		"SOAKD_SWEEP_DURATION", "10s", "SOAKD_SWEEP_GRID", "RATE=1s:100,2s:200|max")
	cfg = enginetest.Load(t, env, p)
	r = &Result{Unit: "rows", BatchName: "BATCH_SIZE", Settings: cfg.Sweep}
	if plan, err = r.plan(cfg, env, p, false); err != nil {
		t.Fatal(err)
	}
	if lo, hi, all := planTime(plan, 1); len(plan) != 2 || lo != 3*time.Second || hi != 10*time.Second || all != 13*time.Second {
		t.Errorf("%d points: %s to %s, %s in all; want 3s (the stages) to 10s, 13s", len(plan), lo, hi, all)
	}
	if left := timeLeft(10*time.Second, 5*time.Second, 4*time.Second); left != 8*time.Second {
		t.Errorf("time left %s, want 8s: the runs kept half the planned pace", left)
	}
}

// A DURATION axis of 0 (no limit, in a run) does not make an endless
// point: its runs last SOAKD_SWEEP_DURATION, as a point's without the
// axis do. Bug caught: the point ran until a signal, the plan saying
// "at most 0s".
func TestSweepDurationAxisZeroIsBounded(t *testing.T) {
	t.Parallel()
	p := enginetest.Plugins()
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SWEEP_REPEATS", "1",
		"SOAKD_SWEEP_DURATION", "5s", "SOAKD_SWEEP_GRID", "DURATION=0,2s")
	cfg := enginetest.Load(t, env, p)
	r := &Result{Unit: "rows", BatchName: "BATCH_SIZE", Settings: cfg.Sweep}
	plan, err := r.plan(cfg, env, p, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 2 || plan[0].wc.Duration != 5*time.Second || plan[1].wc.Duration != 2*time.Second {
		t.Fatalf("%d points, durations %v, %v; want 5s (SWEEP_DURATION) and 2s", len(plan), plan[0].wc.Duration, plan[1].wc.Duration)
	}
	if lo, hi, all := planTime(plan, 1); lo != 2*time.Second || hi != 5*time.Second || all != 7*time.Second {
		t.Errorf("point times %s to %s, %s in all; want 2s to 5s, 7s", lo, hi, all)
	}
}

// A sweep stopped before every point ran (Ctrl-C) says so in its report,
// and which run the stop cut short, for the grid and the WORKERS × BATCH
// reports alike. Bug caught: the markdown read as a whole sweep, the
// cut-short run's point possibly marked best; only the JSON's outcome
// told.
func TestSweepReportSaysStopped(t *testing.T) {
	for _, grid := range []bool{false, true} {
		r := &Result{Unit: "rows", BatchName: "BATCH_SIZE", Settings: config.SweepConfig{Repeats: 2, Duration: 2 * time.Second},
			Outcome: "stopped before every point ran", CutShort: "point WORKERS=2, run 1 of 2, after 980.00ms of at most 2s"}
		pt := Point{Workers: 2, Batch: 20, Median: 100, Min: 100, Max: 100, Rates: []float64{100}}
		if grid {
			r.Axes = []Axis{{Name: "WORKERS", Values: []string{"1", "2"}, Numeric: true}}
			pt.AxisValues, pt.at = []string{"2"}, []int{1}
		}
		r.Points = []Point{pt}
		r.mark()
		var md bytes.Buffer
		r.WriteMarkdown(&md)
		if want := "**Partial: stopped before every point ran.** The report holds the runs made; the last one was cut short (point WORKERS=2, run 1 of 2, after 980.00ms of at most 2s)."; !strings.Contains(md.String(), want) {
			t.Errorf("grid %v: markdown without\n%s\n---- got:\n%s", grid, want, md.String())
		}
		r.Outcome, r.CutShort = "done", ""
		md.Reset()
		r.WriteMarkdown(&md)
		if strings.Contains(md.String(), "Partial") {
			t.Errorf("grid %v: a whole sweep called partial:\n%s", grid, md.String())
		}
	}
}
