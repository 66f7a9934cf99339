package judge

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/summary"
	"github.com/soakd/soakd/thresholds"
)

// judgeRun judges checks (a THRESHOLDS expression, DRIFT_WARMUP warmup)
// on a phase of secs seconds whose second i acknowledges per(i) units of
// op write with latency lat(i), ticking the judge every second as its
// goroutine would; it returns the final results.
func judgeRun(t *testing.T, expr string, warmup time.Duration, secs int, per func(i int) int, lat func(i int) time.Duration) []report.ThresholdResult {
	t.Helper()
	checks, err := thresholds.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	var res []report.ThresholdResult
	synctest.Test(t, func(t *testing.T) {
		tp := daemon.NewTestPhase("run")
		j := newJudge(config.Workload{Name: "w", Checks: checks, DriftWarmup: warmup}, zap.NewNop())
		j.begin(tp.Phase())
		for i := 0; i < secs; i++ {
			tp.Ack("write", per(i), lat(i))
			time.Sleep(time.Second)
			if _, more := j.tick(); !more {
				t.Fatal("the judge stopped before the phase ended")
			}
		}
		tp.End("DURATION")
		if _, more := j.tick(); more {
			t.Error("the judge goes on after the phase ended")
		}
		res = j.finish()
		for _, g := range j.groups {
			if len(g.slices) > g.k {
				t.Errorf("a group of %v windows keeps %d slices, more than its %d", g.length, len(g.slices), g.k)
			}
		}
		if tp.Windows() != 0 {
			t.Error("recorders still attached after finish")
		}
	})
	return res
}

func const100(int) int { return 100 }

func result(t *testing.T, rs []report.ThresholdResult, name string) report.ThresholdResult {
	t.Helper()
	for _, r := range rs {
		if r.Threshold == name {
			return r
		}
	}
	t.Fatalf("no result for %s in %+v", name, rs)
	return report.ThresholdResult{}
}

// Every 10 s window sliding by 1 s is judged; the windows holding the
// slow second fail, and the worst is named. The whole run passes a
// check the windows fail: 20 slow samples are 2.2 % of a window's 920
// but 0.7 % of the run's 2920.
func TestJudgeWindows(t *testing.T) {
	t.Parallel()
	per := func(i int) int {
		if i == 12 {
			return 20
		}
		return 100
	}
	rs := judgeRun(t, "p99<50ms@10s, p99<50ms, max<2s@10s, p50<2000µs@10s", 0, 30, per, func(i int) time.Duration {
		if i == 12 {
			return time.Second
		}
		return time.Millisecond
	})
	w := result(t, rs, "p99<50ms@10s")
	// Windows end at 10 s, 11 s, ... 30 s; those ending 13 s to 22 s hold
	// second 12.
	if w.OK || w.Windows != 21 || w.FailedWindows != 10 || w.WorstWindow == nil {
		t.Fatalf("p99<50ms@10s: %+v", w)
	}
	if ww := *w.WorstWindow; ww.From != 3 || ww.To != 13 || ww.Value < 1 || ww.Value > 1.001 || *w.Value != ww.Value {
		t.Errorf("worst window %+v, want 3s–13s at 1s", ww)
	}
	if lw := w.LatestWindow; lw == nil || lw.From != 20 || lw.To != 30 || lw.Value > 0.0011 {
		t.Errorf("latest window %+v, want 20s–30s at 1ms", lw)
	}
	if whole := result(t, rs, "p99<50ms"); !whole.OK || whole.Value == nil || *whole.Value > 0.0011 || whole.Windows != 0 {
		t.Errorf("whole run: %+v", whole)
	}
	if m := result(t, rs, "max<2s@10s"); !m.OK || m.FailedWindows != 0 || m.WorstWindow == nil || m.WorstWindow.Value < 1 {
		t.Errorf("max<2s@10s passes with its worst window at 1s: %+v", m)
	}
	if p := result(t, rs, "p50<2000µs@10s"); !p.OK || p.Windows != 21 {
		t.Errorf("p50<2000µs@10s: %+v", p)
	}
	var out strings.Builder
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{Name: "w", Phase: "run", Thresholds: rs}}}
	summary.WriteText(&out, sum)
	// Labels line up, µ or not.
	for _, want := range []string{"  ✗ p99<50ms@10s    worst 1.00s in window 3s–13s (10 of 21 windows failed)\n",
		"  ✓ p99<50ms        1.00ms\n", "  ✓ p50<2000µs@10s  worst 1.00ms", "THRESHOLDS FAILED: 1 of 4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// Sliding windows catch a burst that tumbling windows would split: 6 slow
// samples in each of seconds 9 and 10 are 0.66 % of each tumbling window,
// [0, 10) and [10, 20), which both pass p99, but 1.5 % of every sliding
// window holding both seconds, which fail.
func TestJudgeSlidingCatchesSplitBurst(t *testing.T) {
	t.Parallel()
	slow := func(i int) bool { return i == 9 || i == 10 }
	rs := judgeRun(t, "p99<50ms@10s", 0, 20, func(i int) int {
		if slow(i) {
			return 6
		}
		return 100
	}, func(i int) time.Duration {
		if slow(i) {
			return time.Second
		}
		return time.Millisecond
	})
	// Windows end at 10 s .. 20 s; those ending 11 s to 19 s hold both.
	if r := rs[0]; r.OK || r.Windows != 11 || r.FailedWindows != 9 || r.WorstWindow.From != 1 {
		t.Fatalf("%+v (worst %+v)", r, r.WorstWindow)
	}
}

// Counts per window: errors, dropped and achieved judged on each window's
// own counts, and a window without data for a check is not judged.
func TestJudgeCountsPerWindow(t *testing.T) {
	t.Parallel()
	checks, _ := thresholds.Parse("achieved>99%@5s, dropped=0@5s, errors<1%@5s, achieved>99%, op:write.p99<1s@5s")
	synctest.Test(t, func(t *testing.T) {
		tp := daemon.NewTestPhase("run")
		j := newJudge(config.Workload{Name: "w", Checks: checks}, zap.NewNop())
		j.begin(tp.Phase())
		for i := 0; i < 20; i++ {
			if i < 10 || i >= 15 { // paused from 10 s to 15 s: nothing scheduled
				if i == 17 {
					tp.Count(100, 95, 5, "write", 10, 1) // 5 units dropped; 1 failed attempt in 10: 10 %
				} else {
					tp.Count(100, 100, 0, "write", 10, 0)
				}
			}
			time.Sleep(time.Second)
			j.tick()
		}
		tp.End("DURATION")
		rs := j.finish()
		a := result(t, rs, "achieved>99%@5s")
		// Windows end 5 s .. 20 s (16); the one ending at 15 s lies in the
		// pause, has nothing scheduled and is not judged. Those ending 18 s
		// to 20 s hold the drops; the worst is the one with the fewest units
		// besides them, half in the pause: 295 of 300.
		if a.Windows != 15 || a.FailedWindows != 3 || a.WorstWindow.Value != 295.0/300 || a.WorstWindow.From != 13 || a.WorstWindow.To != 18 {
			t.Errorf("achieved per window: %+v (worst %+v)", a, a.WorstWindow)
		}
		if d := result(t, rs, "dropped=0@5s"); d.OK || d.Windows != 16 || d.FailedWindows != 3 || *d.Value != 5 || d.Unit != "count" {
			t.Errorf("dropped per window: %+v", d)
		}
		if e := result(t, rs, "errors<1%@5s"); e.OK || e.Unit != "ratio" || *e.Value != 1.0/31 {
			// 1 failed attempt and 30 ok in the window 13s–18s.
			t.Errorf("errors per window: %+v", e)
		}
		if w := result(t, rs, "achieved>99%"); !w.OK || *w.Value != 1495.0/1500 {
			t.Errorf("achieved over the run: %+v", w)
		}
		if l := result(t, rs, "op:write.p99<1s@5s"); l.OK || l.Windows != 0 || !strings.Contains(l.Note, "no data") {
			t.Errorf("a latency check without samples: %+v", l)
		}
	})
}

// A run phase shorter than the window is judged as one window.
func TestJudgeShortPhaseIsOneWindow(t *testing.T) {
	t.Parallel()
	rs := judgeRun(t, "p99<50ms@1m", 0, 7, const100, func(i int) time.Duration {
		if i == 3 {
			return time.Second
		}
		return time.Millisecond
	})
	if r := rs[0]; r.OK || r.Windows != 1 || r.WorstWindow.From != 0 || r.WorstWindow.To != 7 {
		t.Errorf("%+v (worst %+v)", r, r.WorstWindow)
	}
}

// Drift compares the window after DRIFT_WARMUP with the latest: a latency
// that doubles half-way fails drift.p99<20% (and passes a bound on the
// difference it stays under); a steady one passes.
func TestJudgeDrift(t *testing.T) {
	t.Parallel()
	step := func(i int) time.Duration {
		if i >= 20 {
			return 4 * time.Millisecond
		}
		return 2 * time.Millisecond
	}
	rs := judgeRun(t, "drift.p99<20%@10s, drift.p99<5ms@10s, drift.mean<20%@5s", 5*time.Second, 40, const100, step)
	d := result(t, rs, "drift.p99<20%@10s")
	if d.OK || d.Value == nil || *d.Value < 0.99 || *d.Value > 1.01 || d.Unit != "ratio" || d.WindowUnit != "seconds" {
		t.Fatalf("drift.p99<20%%@10s: %+v", d)
	}
	if d.EarlyWindow.From != 5 || d.EarlyWindow.To != 15 || d.LatestWindow.From != 30 || d.LatestWindow.To != 40 {
		t.Errorf("windows %+v and %+v, want 5s–15s and 30s–40s", d.EarlyWindow, d.LatestWindow)
	}
	// Late windows end 25 s, 26 s, ... 40 s; those ending before 28 s hold
	// fewer than 8 sub-windows (seconds) after the step, so the change
	// does not hold in enough of them yet.
	if d.Windows != 16 || d.FailedWindows != 13 {
		t.Errorf("%d late windows, %d failed; want 16 and 13", d.Windows, d.FailedWindows)
	}
	if a := result(t, rs, "drift.p99<5ms@10s"); !a.OK || a.Unit != "seconds" || *a.Value < 0.0019 || *a.Value > 0.0021 {
		t.Errorf("drift.p99<5ms@10s: %+v", a)
	}
	if m := result(t, rs, "drift.mean<20%@5s"); m.OK || m.EarlyWindow.To != 10 {
		t.Errorf("drift.mean<20%%@5s: %+v", m)
	}
	var out strings.Builder
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{Name: "w", Phase: "run", Thresholds: rs}}}
	summary.WriteText(&out, sum)
	if want := "✗ drift.p99<20%@10s  +100% (2.00ms in 5s–15s, 4.00ms in 30s–40s; 13 of 16 late windows failed)"; !strings.Contains(out.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, out.String())
	}

	steady := judgeRun(t, "drift.p99<20%@10s", 5*time.Second, 40, const100, func(int) time.Duration { return 2 * time.Millisecond })
	if s := steady[0]; !s.OK || *s.Value != 0 || s.FailedWindows != 0 {
		t.Errorf("steady latency: %+v", s)
	}

	// Too short to compare: no value, failed, and the note says why.
	short := judgeRun(t, "drift.p99<20%@10s", 5*time.Second, 20, const100, step)
	if s := short[0]; s.OK || s.Value != nil || !strings.Contains(s.Note, "drift needs DRIFT_WARMUP (5s) + 2 windows of 10s = 25s") {
		t.Errorf("a phase too short for drift: %+v", s)
	}
}

// drift.achieved compares the fraction of the target achieved.
func TestJudgeDriftAchieved(t *testing.T) {
	t.Parallel()
	checks, _ := thresholds.Parse("drift.achieved>-2%@10s")
	synctest.Test(t, func(t *testing.T) {
		tp := daemon.NewTestPhase("run")
		j := newJudge(config.Workload{Name: "w", Checks: checks}, zap.NewNop())
		j.begin(tp.Phase())
		for i := 0; i < 30; i++ {
			if i >= 20 {
				tp.Count(100, 97, 3, "write", 0, 0)
			} else {
				tp.Count(100, 100, 0, "write", 0, 0)
			}
			time.Sleep(time.Second)
			j.tick()
		}
		tp.End("DURATION")
		r := j.finish()[0]
		if r.OK || *r.Value < -0.0301 || *r.Value > -0.0299 || r.EarlyWindow.Value != 1 || r.LatestWindow.Value != 0.97 {
			t.Errorf("%+v (early %+v, late %+v)", r, r.EarlyWindow, r.LatestWindow)
		}
	})
}

// Live results: nothing judged yet is not a failure while the run lasts,
// and a windowed check that failed stays failed.
func TestJudgeLive(t *testing.T) {
	t.Parallel()
	checks, _ := thresholds.Parse("p99<50ms@2s, drift.p99<20%@2s, p99<50ms")
	synctest.Test(t, func(t *testing.T) {
		tp := daemon.NewTestPhase("run")
		j := newJudge(config.Workload{Name: "w", Checks: checks, DriftWarmup: time.Second}, zap.NewNop())
		if live := j.live(); !live[0].OK || live[0].Note != "waiting for the run phase" {
			t.Errorf("before the run phase: %+v", live[0])
		}
		j.begin(tp.Phase())
		tp.Ack("write", 100, time.Second)
		time.Sleep(time.Second)
		j.tick()
		live := j.live()
		if !live[0].OK || live[0].Note != "waiting for the first window" || !live[1].OK || live[2].OK || live[2].Current == nil {
			t.Errorf("after 1 s: %+v", live)
		}
		time.Sleep(time.Second)
		j.tick()
		for i := 0; i < 3; i++ {
			tp.Ack("write", 100, time.Millisecond)
			time.Sleep(time.Second)
			j.tick()
		}
		live = j.live()
		if live[0].OK || live[0].FailedWindows != 1 || *live[0].Current > 0.0011 {
			t.Errorf("p99<50ms@2s after a slow first window: %+v", live[0])
		}
		tp.End("DURATION")
		j.finish()
	})
}
