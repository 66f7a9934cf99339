package daemon

import (
	"sync"
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

// recorder keeps the latency distribution of one op for the summary
// (since start) and the progress line (since the last window swap).
// Prometheus gets the same observations through its own histograms; these
// exist because exact quantiles cannot be read back from those. Memory is
// fixed: two HDR histograms, created on first use.
type recorder struct {
	mu     sync.Mutex
	total  *hdrhistogram.Histogram
	window *hdrhistogram.Histogram
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
}

// record adds n observations of d.
func (r *recorder) record(d time.Duration, n int64) {
	v := int64(d)
	if v < hdrLowest {
		v = hdrLowest
	} else if v > hdrHighest {
		v = hdrHighest
	}
	r.mu.Lock()
	if r.total == nil {
		r.total, r.window = newHist(), newHist()
	}
	// Values are clamped to the trackable range, so these cannot fail.
	_ = r.total.RecordValues(v, n)
	_ = r.window.RecordValues(v, n)
	r.mu.Unlock()
}

// Quantiles is a latency summary in seconds.
type Quantiles struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func quantiles(h *hdrhistogram.Histogram) Quantiles {
	if h == nil || h.TotalCount() == 0 {
		return Quantiles{}
	}
	s := func(v int64) float64 { return float64(v) / 1e9 }
	return Quantiles{
		Count: h.TotalCount(),
		Min:   s(h.Min()),
		Mean:  h.Mean() / 1e9,
		P50:   s(h.ValueAtQuantile(50)),
		P90:   s(h.ValueAtQuantile(90)),
		P99:   s(h.ValueAtQuantile(99)),
		P999:  s(h.ValueAtQuantile(99.9)),
		Max:   s(h.Max()),
	}
}

// summary returns the quantiles since start.
func (r *recorder) summary() Quantiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return quantiles(r.total)
}

// swapWindow returns the quantiles since the previous swap and starts a
// new window.
func (r *recorder) swapWindow() Quantiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := quantiles(r.window)
	if r.window != nil {
		r.window.Reset()
	}
	return q
}
