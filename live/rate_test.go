package live

import (
	"math"
	"testing"
	"time"
)

// On a ramp the progress line compares the achieved rate with the mean
// target over the same trailing window: the rate profile's integral over
// it. A target that keeps up exactly shows as on target, though the
// instantaneous target is half a window ahead.
func TestBarTargetOverTheSameWindow(t *testing.T) {
	// 0 → 20,000/s over 100 s: rate(t) = 200 t, due(t) = 100 t².
	due := func(s float64) float64 { return 100 * s * s }
	st := newRateWindow()
	if st.target >= 0 {
		t.Fatalf("an empty window has target %g, want none (< 0)", st.target)
	}
	for s := 0; s <= 60; s++ {
		st.add(sample{at: time.Duration(s) * time.Second, acked: int64(due(float64(s))), planned: due(float64(s)), open: true})
	}
	// Window 50 s..60 s: mean target (due(60)−due(50))/10 = 200·55, not
	// the instantaneous 200·60.
	if want := 11000.0; math.Abs(st.target-want) > 1e-6 || math.Abs(st.achieved-want) > 1e-6 {
		t.Errorf("achieved %g, target %g over the window; want both %g", st.achieved, st.target, want)
	}
	// Closed loop: nothing is planned, so there is no target.
	cl := newRateWindow()
	for s := 0; s <= 3; s++ {
		cl.add(sample{at: time.Duration(s) * time.Second, acked: int64(500 * s)})
	}
	if cl.target >= 0 || cl.achieved != 500 {
		t.Errorf("closed loop: achieved %g, target %g; want 500 and none", cl.achieved, cl.target)
	}
}
