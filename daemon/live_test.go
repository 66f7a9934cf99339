package daemon

import (
	"math"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/internal/ratewin"
	"github.com/soakd/soakd/pace"
)

// On a ramp the progress line compares the achieved rate with the mean
// target over the same trailing window: the rate profile's integral over
// it. A target that keeps up exactly shows as on target, though the
// instantaneous target is half a window ahead.
func TestBarTargetOverTheSameWindow(t *testing.T) {
	// 0 → 20,000/s over 100 s: rate(t) = 200 t, due(t) = 100 t².
	sch := &schedule{profile: pace.MustParse("100s:20000").Profile}
	due := func(s float64) float64 { return 100 * s * s }
	st := ratewin.New()
	for s := 0; s <= 60; s++ {
		e := time.Duration(s) * time.Second
		if got, want := sch.planned(e), due(float64(s)); math.Abs(got-want) > 1e-6*max(want, 1) {
			t.Fatalf("planned(%ds) = %g, want %g", s, got, want)
		}
		st.Add(ratewin.Sample{At: e, Acked: int64(due(float64(s))), Planned: sch.planned(e), Open: true})
	}
	// Window 50 s..60 s: mean target (due(60)−due(50))/10 = 200·55.
	if want := 11000.0; math.Abs(st.Target-want) > 1e-6 || math.Abs(st.Achieved-want) > 1e-6 {
		t.Errorf("achieved %g, target %g over the window; want both %g", st.Achieved, st.Target, want)
	}
	if inst := sch.rateAt(60 * time.Second); inst != 12000 {
		t.Errorf("instantaneous target %g, want 12000 (the test's premise)", inst)
	}
	// Paused: the profile's clock stops, the target over the window falls.
	p := &schedule{profile: pace.Constant(1000), paused: true, pausedAt: 5 * time.Second}
	if got := p.planned(9 * time.Second); got != 5000 {
		t.Errorf("paused at 5 s: planned(9 s) = %g, want 5000", got)
	}
}
