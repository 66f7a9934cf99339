package daemon

import (
	"math"
	"testing"
	"time"

	"github.com/soakd/soakd/pace"
)

// The plan a phase had due by a time (Handle.Planned) is the rate
// profile's integral, from which package live takes the mean target over
// its window: on a ramp it runs behind the instantaneous target.
func TestPlannedIsTheProfilesIntegral(t *testing.T) {
	// 0 → 20,000/s over 100 s: rate(t) = 200 t, due(t) = 100 t².
	sch := &schedule{profile: pace.MustParse("100s:20000").Profile}
	due := func(s float64) float64 { return 100 * s * s }
	for s := 0; s <= 60; s++ {
		e := time.Duration(s) * time.Second
		if got, want := sch.planned(e), due(float64(s)); math.Abs(got-want) > 1e-6*max(want, 1) {
			t.Fatalf("planned(%ds) = %g, want %g", s, got, want)
		}
	}
	if inst := sch.rateAt(60 * time.Second); inst != 12000 {
		t.Errorf("instantaneous target %g, want 12000", inst)
	}
	// Paused: the profile's clock stops, the target over the window falls.
	p := &schedule{profile: pace.Constant(1000), paused: true, pausedAt: 5 * time.Second}
	if got := p.planned(9 * time.Second); got != 5000 {
		t.Errorf("paused at 5 s: planned(9 s) = %g, want 5000", got)
	}
}
