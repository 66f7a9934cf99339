package report

import (
	"math/rand/v2"
	"testing"
)

// A sparse distribution holds exactly the histogram it came from: put
// back, every bucket and so every quantile is the same.
func TestSparseDistRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, spread := range []float64{1e3, 1e6, 1e9, 3e12} {
		h := NewHistogram()
		for i := 0; i < 5000; i++ {
			_ = h.RecordValues(1+int64(rng.ExpFloat64()*spread)%hdrHighest, 1+rng.Int64N(3))
		}
		d := DistOf(h)
		back := NewHistogram()
		d.AddTo(back)
		if !back.Equals(h) || d.Count() != h.TotalCount() {
			t.Fatalf("spread %g: the round trip changed the histogram (%d buckets, count %d vs %d)", spread, len(d.b), d.Count(), h.TotalCount())
		}
		if len(d.b) > 33000 {
			t.Errorf("spread %g: %d buckets", spread, len(d.b))
		}
	}
}
