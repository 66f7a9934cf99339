package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/thresholds/judge"
)

// thresholdSweep sweeps WORKERS 1 and 4 at BATCH_SIZE 10, two runs each
// of at most duration, against a target that handles 1000 rows/s,
// queues the rest, and answers 20 ms later: a batch of 10 takes 30 ms
// alone (333 rows/s), and 40 ms with four workers, which keep the
// target busy (1000 rows/s). So the one-worker point meets p99<35ms and
// the four-worker point, the faster, fails it. It returns the result and its JSON
// points, CSV rows and markdown as the files hold them.
func thresholdSweep(t *testing.T, duration, thresholds string) (*Result, []map[string]any, [][]string, string) {
	t.Helper()
	p := enginetest.Plugins()
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=20ms&capacity=1000", "SOAKD_SEQ_THRESHOLDS", thresholds,
		"SOAKD_SWEEP_WORKERS", "1,4", "SOAKD_SWEEP_BATCH", "10", "SOAKD_SWEEP_REPEATS", "2", "SOAKD_SWEEP_DURATION", duration)
	cfg := enginetest.Load(t, env, p)
	res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
		Observers: []daemon.Observer{judge.New(zap.NewNop(), judge.Options{})}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Outcome != "done" {
		t.Fatalf("%d points, outcome %q; want 2, done", len(res.Points), res.Outcome)
	}
	var j, c, md bytes.Buffer
	if err := res.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Points []map[string]any `json:"points"`
	}
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	res.WriteMarkdown(&md)
	return res, back.Points, rows, md.String()
}

// column is the index of name in a CSV header, failing t without it.
func column(t *testing.T, head []string, name string) int {
	t.Helper()
	for i, h := range head {
		if h == name {
			return i
		}
	}
	t.Fatalf("CSV header %v without %s", head, name)
	return -1
}

// Each run's thresholds are kept: the point that met them says so, the
// one that failed names the threshold, in the JSON points and runs, a
// CSV column and a markdown column, and the headline counts the points
// that met them, and the best of them when the best point failed them.
// Bugs caught: the runs' verdicts dropped (the sweep's
// report said nothing of them), the thresholds that passed listed as
// failed, the verdicts of one point given to another.
func TestSweepThresholdsPerPoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, pts, rows, md := thresholdSweep(t, "3s", "p99<35ms, errors<1%")
		for i, want := range []struct {
			passed float64
			failed string
		}{{2, "<nil>"}, {0, "[p99<35ms]"}} {
			pt := pts[i]
			if failed := fmt.Sprint(pt["failed_thresholds"]); pt["thresholds_passed_runs"] != want.passed || failed != want.failed {
				t.Errorf("JSON point %d: %v runs passed, failed %s; want %v, %s", i, pt["thresholds_passed_runs"], failed, want.passed, want.failed)
			}
			for _, r := range pt["runs"].([]any) {
				run := r.(map[string]any)
				if failed := fmt.Sprint(run["failed_thresholds"]); failed != want.failed {
					t.Errorf("JSON point %d run: failed_thresholds %s, want %s", i, failed, want.failed)
				}
				if run["cut_short"] != nil {
					t.Errorf("JSON point %d run cut short: %v", i, run["cut_short"])
				}
			}
			if pt["left_out"] != nil || pt["cut_short_runs"] != nil {
				t.Errorf("JSON point %d left out (%v) or cut short (%v) for a threshold without !", i, pt["left_out"], pt["cut_short_runs"])
			}
		}
		ft, cs := column(t, rows[0], "failed_thresholds"), column(t, rows[0], "cut_short")
		if len(rows) != 5 {
			t.Fatalf("%d CSV rows, want a header and one per run", len(rows))
		}
		for _, row := range rows[1:] {
			want := ""
			if row[0] == "4" {
				want = "p99<35ms"
			}
			if row[ft] != want || row[cs] != "" {
				t.Errorf("CSV row %v: failed thresholds %q, cut short %q; want %q, none", row, row[ft], row[cs], want)
			}
		}
		for _, want := range []string{
			"**Thresholds: 1 of 2 points passed every threshold in each of their runs.**",
			// The best need not pass the thresholds: the report names
			// the best that did.
			"**Best: 4 workers, BATCH_SIZE 10: ",
			"The best of them: workers 1, BATCH_SIZE 10, 333 rows/s (median of 2 runs",
			" | ✓ 2 of 2 runs | best passing the thresholds |",
			"| p99 | failed | thresholds | |\n|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
			" | 0 | ✓ 2 of 2 runs | ",
			" | 0 | ✗ p99<35ms; 0 of 2 runs passed | best |",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("markdown without %q:\n%s", want, md)
			}
		}
	})
}

// A threshold marked ! that fails cuts a run short: each such run says
// what stopped it, the point counts them and is left out of the best as
// one whose runs are not whole runs, and the report says why. Bugs
// caught: a cut-short run's rate taken as a whole run's silently (the
// four-worker point, the faster, was the best), the run's stop not kept.
func TestSweepThresholdCutsRunsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, pts, rows, md := thresholdSweep(t, "5s", "p99<35ms!")
		one, four := res.Points[0], res.Points[1]
		if !one.Best || four.Best || !four.LeftOut || one.LeftOut {
			t.Errorf("best %v/%v, left out %v/%v; want the one-worker point best, the four-worker one left out", one.Best, four.Best, one.LeftOut, four.LeftOut)
		}
		const stop = "threshold p99<35ms! of workload seq failed"
		if pts[1]["cut_short_runs"] != 2.0 || pts[0]["cut_short_runs"] != nil {
			t.Errorf("JSON cut_short_runs %v and %v, want none and 2", pts[0]["cut_short_runs"], pts[1]["cut_short_runs"])
		}
		for i, r := range pts[1]["runs"].([]any) {
			run := r.(map[string]any)
			// The whole-run check is judged every second: the first
			// judgement stops the run.
			if run["cut_short"] != stop || run["seconds"].(float64) > 1.5 {
				t.Errorf("JSON run %d of the four-worker point: cut short %v after %vs, want %q after about 1s", i+1, run["cut_short"], run["seconds"], stop)
			}
		}
		for _, r := range pts[0]["runs"].([]any) {
			if run := r.(map[string]any); run["cut_short"] != nil || run["seconds"].(float64) < 4.9 {
				t.Errorf("JSON run of the one-worker point: cut short %v after %vs, want a whole run", run["cut_short"], run["seconds"])
			}
		}
		cs := column(t, rows[0], "cut_short")
		for _, row := range rows[1:] {
			if want := map[bool]string{true: stop}[row[0] == "4"]; row[cs] != want {
				t.Errorf("CSV row %v: cut short %q, want %q", row, row[cs], want)
			}
		}
		for _, want := range []string{
			"| ✗ p99<35ms!; 0 of 2 runs passed | 2 of 2 runs cut short |",
			"Points marked cut short had runs that a failed threshold marked `!`, or the sweep's stop, ended before their end",
			"**Best: 1 workers",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("markdown without %q:\n%s", want, md)
			}
		}
	})
}

// SOAKD_DURATION bounds a sweep as it bounds a run: 2 points × 2 runs of
// 2 s stop at 3 s, the report saying so. Each run's own DURATION was set
// to 0, and the sweep ran all 8 s.
func TestSweepStopsAtSoakdDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_DURATION", "3s",
			"SOAKD_SWEEP_WORKERS", "1,2", "SOAKD_SWEEP_BATCH", "10", "SOAKD_SWEEP_REPEATS", "2", "SOAKD_SWEEP_DURATION", "2s")
		cfg := enginetest.Load(t, env, p)
		start := time.Now()
		res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 3*time.Second+100*time.Millisecond {
			t.Errorf("the sweep took %v, past SOAKD_DURATION=3s", took)
		}
		if res.Outcome != "stopped before every point ran (SOAKD_DURATION=3s passed)" || len(res.Points) != 1 {
			t.Errorf("outcome %q, %d points; want stopped by SOAKD_DURATION after the first", res.Outcome, len(res.Points))
		}
	})
}

// A sweep that cannot go on (a point whose every write failed) returns its
// error with a report that says so: outcome "failed: ..." in the JSON and
// "Partial: failed" in the markdown, the points run so far ranked. Both
// read as a whole sweep of fewer points (an empty outcome, no best).
func TestSweepFailedPointSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SWEEP_REPEATS", "1", "SOAKD_SWEEP_DURATION", "1s",
			// Every write takes 1 ms: failing at once, closed loop, a
			// worker would never let the fake clock advance.
			"SOAKD_SWEEP_GRID", "TARGET=null://?latency=1ms|null://?latency=1ms&fail=1&fail_class=rejected")
		cfg := enginetest.Load(t, env, p)
		res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{})
		if err == nil || res == nil {
			t.Fatalf("Run = %v, %v; want the failed point's error and a result", res, err)
		}
		if !strings.HasPrefix(res.Outcome, "failed: sweep point TARGET=null://?latency=1ms&fail=1&fail_class=rejected: no write succeeded") ||
			len(res.Points) != 1 || !res.Points[0].Best {
			t.Errorf("outcome %q, %d points, first best %v; want failed naming the point, the first point ranked best",
				res.Outcome, len(res.Points), len(res.Points) > 0 && res.Points[0].Best)
		}
		var md bytes.Buffer
		res.WriteMarkdown(&md)
		if !strings.Contains(md.String(), "**Partial: failed: sweep point") {
			t.Errorf("markdown does not say the sweep failed:\n%s", md.String())
		}
	})
}
