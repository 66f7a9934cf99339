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
	"github.com/soakd/soakd/thresholds"
)

// fakeTarget reads the target's figures from functions of the seconds
// since start (nil: never read), each reading taken now, or with every
// at the last multiple of every since start.
type fakeTarget struct {
	start                     time.Time
	every                     time.Duration
	memory, storage, perValue func(sec float64) float64
}

func (f *fakeTarget) read(fn func(float64) float64) (float64, time.Time, bool) {
	if fn == nil {
		return 0, time.Time{}, false
	}
	at := time.Now()
	if f.every > 0 {
		at = f.start.Add(at.Sub(f.start).Truncate(f.every))
	}
	return fn(at.Sub(f.start).Seconds()), at, true
}

func (f *fakeTarget) Memory(string) (float64, time.Time, bool)  { return f.read(f.memory) }
func (f *fakeTarget) Storage(string) (float64, time.Time, bool) { return f.read(f.storage) }
func (f *fakeTarget) StoragePerValue(string) (float64, time.Time, bool) {
	return f.read(f.perValue)
}

// judgeTarget judges expr (DRIFT_WARMUP warmup) on a phase of secs
// seconds of steady load whose target's figures ft gives (nil: no watch),
// and returns the final results.
func judgeTarget(t *testing.T, expr string, warmup time.Duration, secs int, ft *fakeTarget) []report.ThresholdResult {
	t.Helper()
	checks, err := thresholds.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	var res []report.ThresholdResult
	synctest.Test(t, func(t *testing.T) {
		tp := daemon.NewTestPhase("run")
		j := newJudge(config.Workload{Name: "w", Checks: checks, DriftWarmup: warmup}, zap.NewNop())
		if ft != nil {
			ft.start = time.Now()
			j.target = ft
		}
		j.begin(tp.Phase())
		for range secs {
			tp.Ack("write", 100, time.Millisecond)
			time.Sleep(time.Second)
			j.tick()
		}
		tp.End("DURATION")
		j.tick()
		res = j.finish()
	})
	return res
}

const gib = 1 << 30

// A steady memory passes its drift check, noise and all, and a peak
// under the limit passes; storage per value judges its last reading.
func TestTargetSteady(t *testing.T) {
	t.Parallel()
	ft := &fakeTarget{
		// 1 GiB, ±1 % every other second.
		memory:   func(s float64) float64 { return gib * (1 + 0.01*float64(int(s)%2)) },
		storage:  func(s float64) float64 { return 1e6 * s },
		perValue: func(s float64) float64 { return 100 / (1 + s) },
	}
	rs := judgeTarget(t, "drift.target.memory<5%@3s, target.memory<2GiB, target.storage<100MB, target.storage_per_value<10B, target.memory<1.5GiB@2s", 2*time.Second, 12, ft)
	for _, r := range rs {
		if !r.OK || r.Value == nil || r.Unit == "" {
			t.Errorf("%s: %+v", r.Threshold, r)
		}
	}
	d := result(t, rs, "drift.target.memory<5%@3s")
	if d.Unit != "ratio" || d.WindowUnit != "bytes" || d.EarlyWindow == nil || d.LatestWindow == nil || *d.Value > 0.02 || *d.Value < -0.02 {
		t.Errorf("drift: %+v (early %+v, late %+v)", d, d.EarlyWindow, d.LatestWindow)
	}
	if m := result(t, rs, "target.memory<2GiB"); m.Unit != "bytes" || *m.Value != gib*1.01 {
		t.Errorf("target.memory: the peak, 1.01 GiB, want; got %+v (%v)", m, *m.Value)
	}
	if s := result(t, rs, "target.storage<100MB"); *s.Value < 11e6 || *s.Value > 13e6 {
		t.Errorf("target.storage: the peak, the last reading, want; got %v", *s.Value)
	}
	if p := result(t, rs, "target.storage_per_value<10B"); *p.Value > 100.0/12 {
		t.Errorf("target.storage_per_value: the last reading, want; got %v", *p.Value)
	}
}

// A memory that grows fails its drift check, and one reading over the
// limit fails the whole-run check and the windows that hold it, though
// the last reading is under it.
func TestTargetGrowing(t *testing.T) {
	t.Parallel()
	ft := &fakeTarget{memory: func(s float64) float64 {
		if s > 5.5 && s < 6.5 {
			return 3 * gib
		}
		return gib * (1 + 0.02*s)
	}}
	rs := judgeTarget(t, "drift.target.memory<5%@3s, target.memory<2GiB, target.memory<2GiB@2s", 2*time.Second, 12, ft)
	if d := result(t, rs, "drift.target.memory<5%@3s"); d.OK || d.Value == nil || *d.Value < 0.1 {
		t.Errorf("drift of a growing memory: %+v", d)
	}
	if m := result(t, rs, "target.memory<2GiB"); m.OK || *m.Value != 3*gib {
		t.Errorf("target.memory over the limit once: %+v", m)
	}
	if w := result(t, rs, "target.memory<2GiB@2s"); w.OK || w.FailedWindows == 0 || w.FailedWindows == w.Windows || w.WorstWindow.Value != 3*gib {
		t.Errorf("target.memory@2s: %+v", w)
	}
	// A difference in bytes: 12 s of 2 % a second is about 14 % of 1 GiB.
	rs = judgeTarget(t, "drift.target.memory<100MiB@3s", 2*time.Second, 12, &fakeTarget{memory: func(s float64) float64 { return gib * (1 + 0.02*s) }})
	if d := rs[0]; d.OK || d.Unit != "bytes" || *d.Value < 100<<20 {
		t.Errorf("drift in bytes: %+v: %v (early %+v, late %+v)", d, *d.Value, d.EarlyWindow, d.LatestWindow)
	}
}

// A figure never read is not available: no value, and a failure in the
// final verdict, with a note; so is every target. check without a watch.
func TestTargetMissing(t *testing.T) {
	t.Parallel()
	expr := "target.storage<1GiB, drift.target.storage<5%@3s, target.memory<1GiB@2s"
	for _, ft := range []*fakeTarget{{memory: func(float64) float64 { return 1 }}, nil} {
		for _, r := range judgeTarget(t, expr, 2*time.Second, 12, ft) {
			if r.Threshold == "target.memory<1GiB@2s" && ft != nil {
				if !r.OK {
					t.Errorf("%s: %+v", r.Threshold, r)
				}
				continue
			}
			if r.OK || r.Value != nil || !strings.HasPrefix(r.Note, "not available") {
				t.Errorf("watch %v: %s: %+v", ft != nil, r.Threshold, r)
			}
		}
	}
}

// Readings before the run phase (the load phase's) and after it are not
// the run phase's.
func TestTargetOnlyTheRunPhase(t *testing.T) {
	t.Parallel()
	checks, _ := thresholds.Parse("target.memory<2GiB")
	synctest.Test(t, func(t *testing.T) {
		// Readings every 2 s: at 0 s (3 GiB, the load phase's), 2 s
		// (1 GiB) and 4 s (3 GiB, after the phase).
		ft := &fakeTarget{start: time.Now(), every: 2 * time.Second, memory: func(s float64) float64 {
			if s < 1 || s >= 4 {
				return 3 * gib
			}
			return gib
		}}
		j := newJudge(config.Workload{Name: "w", Checks: checks}, zap.NewNop())
		j.target = ft
		time.Sleep(500 * time.Millisecond)
		tp := daemon.NewTestPhase("run")
		j.begin(tp.Phase())
		for range 3 {
			tp.Ack("write", 100, time.Millisecond)
			time.Sleep(time.Second)
			j.tick()
		}
		tp.End("DURATION")
		time.Sleep(2 * time.Second)
		if r := j.finish()[0]; !r.OK || *r.Value != gib {
			t.Errorf("%+v: %v", r, *r.Value)
		}
	})
}
