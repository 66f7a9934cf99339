package report

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds from 1 ns to 1 h with 3
// significant digits (0.1 % resolution), as YCSB and wrk2 report them.
const (
	hdrLowest  = 1
	hdrHighest = int64(time.Hour)
	hdrDigits  = 3
)

// NewHistogram returns an empty histogram of the engine's range and
// precision: what every latency distribution is recorded in, and what
// Dist.AddTo adds to.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
}

// Clamp is d in nanoseconds, clamped to a histogram's trackable range
// (NewHistogram), so that recording it cannot fail.
func Clamp(d time.Duration) int64 { return min(max(int64(d), hdrLowest), hdrHighest) }

// QuantilesOf summarizes h (a histogram of NewHistogram's, nil or empty:
// zeros). It reads h through the library, which allocates nothing; a
// window's latencies, cut often, are a Recorder's instead.
func QuantilesOf(h *hdrhistogram.Histogram) Quantiles {
	if h == nil || h.TotalCount() == 0 {
		return Quantiles{}
	}
	s := func(v int64) float64 { return float64(v) / 1e9 }
	return Quantiles{
		Count:  h.TotalCount(),
		Min:    s(h.Min()),
		Mean:   h.Mean() / 1e9,
		P50:    s(h.ValueAtQuantile(50)),
		P90:    s(h.ValueAtQuantile(90)),
		P99:    s(h.ValueAtQuantile(99)),
		P999:   s(h.ValueAtQuantile(99.9)),
		Max:    s(h.Max()),
		StdDev: h.StdDev() / 1e9,
	}
}

// Dist is a latency distribution kept sparse: the non-empty buckets of a
// histogram of NewHistogram's, in increasing order, each as its lowest
// value and count. Recording those values into a histogram of the same
// shape puts every count back in its bucket, so quantiles read from it
// are exactly those of the histogram it came from: add several windows'
// into one histogram to read their quantiles together.
type Dist struct {
	b []hdrBucket
}

type hdrBucket struct{ v, n int64 }

// DistOf returns h's non-empty buckets.
func DistOf(h *hdrhistogram.Histogram) Dist {
	var d Dist
	for _, bar := range h.Distribution() {
		if bar.Count > 0 {
			d.b = append(d.b, hdrBucket{bar.From, bar.Count})
		}
	}
	return d
}

// Count is the number of samples in d.
func (d Dist) Count() int64 {
	var n int64
	for _, b := range d.b {
		n += b.n
	}
	return n
}

// AddTo records d into h, a histogram of NewHistogram's.
func (d Dist) AddTo(h *hdrhistogram.Histogram) {
	for _, b := range d.b {
		_ = h.RecordValues(b.v, b.n)
	}
}
