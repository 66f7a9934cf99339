package report

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// A Recorder buckets as the library's histogram does: the same samples
// give the same sparse distribution as DistOf of a histogram, and the
// same quantiles as QuantilesOf, window after window (a cut leaves
// nothing behind).
func TestRecorderMatchesHistogram(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var r Recorder
	for _, spread := range []float64{1, 1e3, 1e6, 1e9, 3e12} {
		for _, samples := range []int{1, 2, 7, 5000} {
			h := NewHistogram()
			for i := 0; i < samples; i++ {
				v, n := 1+int64(rng.ExpFloat64()*spread)%hdrHighest, 1+rng.Int64N(3)
				if i == 0 {
					v = hdrHighest // the top bucket
				}
				_ = h.RecordValues(v, n)
				r.Record(v, n)
			}
			if r.Count() != h.TotalCount() {
				t.Fatalf("spread %g, %d samples: count %d, the histogram's %d", spread, samples, r.Count(), h.TotalCount())
			}
			want := DistOf(h)
			if got := r.Dist(); !reflect.DeepEqual(got, want) {
				t.Fatalf("spread %g, %d samples: %d buckets, the histogram's %d", spread, samples, len(got.b), len(want.b))
			}
			lib := QuantilesOf(h)
			if got := want.Quantiles(); got != lib {
				t.Fatalf("spread %g, %d samples: quantiles %+v, the library's %+v", spread, samples, got, lib)
			}
			if d := r.Cut(); !reflect.DeepEqual(d, want) {
				t.Fatalf("spread %g, %d samples: the cut differs from Dist", spread, samples)
			}
			if r.Count() != 0 || len(r.Dist().b) != 0 {
				t.Fatalf("spread %g, %d samples: %d samples left after the cut", spread, samples, r.Count())
			}
		}
	}
	// Out of range values are clamped as Clamp clamps them.
	h := NewHistogram()
	_ = h.RecordValues(Clamp(0), 2)
	_ = h.RecordValues(Clamp(2*time.Hour), 1)
	r.Record(0, 2)
	r.Record(2*hdrHighest, 1)
	r.Record(5, 0) // no samples
	if got := r.Cut(); !reflect.DeepEqual(got, DistOf(h)) {
		t.Fatalf("clamped: %+v, want %+v", got, DistOf(h))
	}
	if n := len(NewHistogram().Export().Counts); n != countsLen {
		t.Fatalf("a histogram has %d counts, the recorder's counts are indexed for %d", n, countsLen)
	}
	if (Dist{}).Quantiles() != (Quantiles{}) || QuantilesOf(nil) != (Quantiles{}) {
		t.Fatal("an empty distribution has quantiles")
	}
}

// Recording and cutting a window of a few samples allocates nothing
// once the recorder has its counts: the idle sidecar's cut every
// progress interval.
func TestRecorderCutAllocs(t *testing.T) {
	var r Recorder
	r.Record(1000, 1)
	r.Cut()
	allocs := testing.AllocsPerRun(100, func() {
		for i := int64(1); i <= 10; i++ {
			r.Record(i*12345, 1)
		}
		_ = r.Cut().Quantiles()
	})
	if allocs > 1 { // the Dist's buckets
		t.Fatalf("%v allocations per window of 10 samples, want at most 1", allocs)
	}
}

// A recorder holds counts only for the powers of two its samples fell
// in: an idle sidecar's latencies (100 µs to 2 ms) take 5 chunks, not
// the histogram's 33, and samples already counted take no more.
func TestRecorderHoldsOnlyWhatItUsed(t *testing.T) {
	var r Recorder
	if n := r.heldBytes(); n != 0 {
		t.Fatalf("an empty recorder holds %d bytes", n)
	}
	// Latency samples in ns, 100 µs to 2 ms in steps of 10 µs, made once
	// and recorded twice below.
	samples := make([]int64, 0, 191)
	for ns := int64(100_000); ns <= 2_000_000; ns += 10_000 {
		samples = append(samples, ns)
	}
	for _, v := range samples {
		r.Record(v, 1)
	}
	// 100 µs to 2 ms lies in the powers of two from 2^16 to 2^20 ns
	// (65.5 µs to 2.1 ms): five chunks of 1024 counts, 8 KB each.
	if got, want := r.heldBytes(), 5*chunkLen*8; got != want {
		t.Fatalf("the recorder holds %d bytes for 100 µs to 2 ms, want %d", got, want)
	}
	r.Cut()
	allocs := testing.AllocsPerRun(10, func() {
		for _, v := range samples {
			r.Record(v, 1)
		}
		r.Cut()
	})
	if allocs > 1 { // the Dist's buckets
		t.Fatalf("%v allocations per window over chunks already made, want at most 1", allocs)
	}
	if got, want := r.heldBytes(), 5*chunkLen*8; got != want {
		t.Fatalf("after more windows the recorder holds %d bytes, want %d", got, want)
	}
}

// Merging two distributions gives what one histogram holding both
// samples gives, and a percentile of it what the library reads of that
// histogram.
func TestDistMergeAndPercentileMatchHistogram(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, spread := range []float64{1, 1e3, 1e6, 3e12} {
		for _, samples := range [][2]int{{0, 0}, {0, 3}, {4, 0}, {1, 1}, {50, 7}, {3000, 2000}} {
			a, b, both := NewHistogram(), NewHistogram(), NewHistogram()
			for k, h := range []*hdrhistogram.Histogram{a, b} {
				for i := 0; i < samples[k]; i++ {
					v, n := 1+int64(rng.ExpFloat64()*spread)%hdrHighest, 1+rng.Int64N(3)
					_ = h.RecordValues(v, n)
					_ = both.RecordValues(v, n)
				}
			}
			m := DistOf(a).Merge(DistOf(b))
			if want := DistOf(both); !reflect.DeepEqual(m.b, want.b) {
				t.Fatalf("spread %g, %v samples: merged %d buckets, the histogram's %d", spread, samples, len(m.b), len(want.b))
			}
			for _, p := range []float64{0, 0.001, 1, 50, 90, 99.9, 100, 150} {
				if got, want := m.ValueAtPercentile(p), both.ValueAtPercentile(p); got != want {
					t.Fatalf("spread %g, %v samples: p%g %d, the library's %d", spread, samples, p, got, want)
				}
			}
		}
	}
}
