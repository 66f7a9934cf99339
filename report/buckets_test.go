package report

import (
	"math"
	"testing"
)

// The history's quantiles of one second come from the difference of two
// readings of the native buckets: within one bucket (9 %) of the truth,
// NaN when nothing was recorded between them.
func TestNativeQuantile(t *testing.T) {
	t.Parallel()
	var p Buckets
	for i := 1; i <= 1000; i++ { // 1 ms .. 1 s, uniformly
		p.Record(float64(i)/1000, 1)
	}
	var zero Buckets
	d := p.Since(&zero)
	for _, q := range []float64{0.5, 0.99, 0.999} {
		if got := d.Quantile(q); math.Abs(got-q)/q > 0.09 {
			t.Errorf("q%v = %v, want %v within one bucket (9 %%)", q, got, q)
		}
	}
	d = p.Since(&p) // nothing new
	if got := d.Quantile(0.5); !math.IsNaN(got) {
		t.Errorf("no samples: %v, want NaN", got)
	}
}
