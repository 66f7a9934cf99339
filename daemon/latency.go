package daemon

import (
	"math"
	"sort"
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

// A worker does not touch shared histograms per write: it appends a
// sample to a small buffer in its own tally, and the samples are merged
// into the phase's histograms when the buffer is full or a reader takes a
// snapshot. One sample covers a batch (series) or the operations of one op
// in a pipeline (KV), so a pipeline of 16 reads costs one sample.

// sample is the latencies of n units of one op, and (units > 0) the
// dispatch delay of a batch of that many units. A batch's dispatch delay
// is recorded once, whatever its outcome; response and service latency
// only for acknowledged units.
type sample struct {
	op       uint8
	n        int32
	units    int32
	response time.Duration // intended start → done
	service  time.Duration // actual send → done
	dispatch time.Duration // intended start → first send
}

// sampleCap bounds a worker's unmerged samples (about 6 KiB).
const sampleCap = 256

type sampleBuf struct {
	n int
	s [sampleCap]sample
}

// add appends a sample; the caller makes room first (worker.lockRoom).
func (b *sampleBuf) add(s sample) {
	b.s[b.n] = s
	b.n++
}

// phaseHist holds a phase's latency distributions per op, created on an
// op's first sample, and its dispatch delay. mu is taken before any
// tally's mu.
type phaseHist struct {
	mu       sync.Mutex
	ops      [opSlots]*opHist
	dispatch *dist
	// recs are the window recorders attached to the phase (window.go):
	// each gets every sample the histograms get.
	recs []*windowRecorder
}

// opHist is one op's response and service latency.
type opHist struct {
	response, service *dist
}

// dist is one latency distribution kept three ways: since the phase began
// (for the summary), since the last progress window (for progress lines
// and /status), and as Prometheus buckets (for /metrics).
type dist struct {
	total, window *hdrhistogram.Histogram
	prom          promBuckets
}

func newDist() *dist {
	return &dist{
		total:  hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits),
		window: hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits),
	}
}

func (d *dist) record(v time.Duration, n int64) {
	ns := min(max(int64(v), hdrLowest), hdrHighest)
	// Values are clamped to the trackable range, so these cannot fail.
	_ = d.total.RecordValues(ns, n)
	_ = d.window.RecordValues(ns, n)
	d.prom.record(time.Duration(ns).Seconds(), n)
}

// mergeLocked moves b's samples into the histograms; hist.mu and the
// owning tally's mu are held.
func (h *phaseHist) mergeLocked(b *sampleBuf) {
	for i := 0; i < b.n; i++ {
		s := &b.s[i]
		if s.units > 0 {
			if h.dispatch == nil {
				h.dispatch = newDist()
			}
			h.dispatch.record(s.dispatch, int64(s.units))
		}
		if s.n == 0 {
			continue
		}
		oh := h.ops[s.op]
		if oh == nil {
			oh = &opHist{response: newDist(), service: newDist()}
			h.ops[s.op] = oh
		}
		oh.response.record(s.response, int64(s.n))
		oh.service.record(s.service, int64(s.n))
		for _, r := range h.recs {
			r.record(s)
		}
	}
	b.n = 0
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

// opQuantiles are one op's response and service quantiles.
type opQuantiles struct{ response, service Quantiles }

// histQuantiles are a phase's quantiles: each op's, and the dispatch
// delay's.
type histQuantiles struct {
	ops      [opSlots]opQuantiles
	dispatch Quantiles
}

// quantilesOf reads the total (since the phase began) or window
// distributions; h.mu is held.
func (h *phaseHist) quantilesOf(pick func(*dist) *hdrhistogram.Histogram) histQuantiles {
	var out histQuantiles
	for op, oh := range h.ops {
		if oh != nil {
			out.ops[op] = opQuantiles{quantiles(pick(oh.response)), quantiles(pick(oh.service))}
		}
	}
	if h.dispatch != nil {
		out.dispatch = quantiles(pick(h.dispatch))
	}
	return out
}

func totalOf(d *dist) *hdrhistogram.Histogram  { return d.total }
func windowOf(d *dist) *hdrhistogram.Histogram { return d.window }

// swapWindows returns the quantiles since the previous swap and starts
// new windows.
func (h *phaseHist) swapWindows() histQuantiles {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.quantilesOf(windowOf)
	for _, oh := range h.ops {
		if oh != nil {
			oh.response.window.Reset()
			oh.service.window.Reset()
		}
	}
	if h.dispatch != nil {
		h.dispatch.window.Reset()
	}
	return out
}

// windows returns the quantiles of the window in progress.
func (h *phaseHist) windows() histQuantiles {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quantilesOf(windowOf)
}

// latencyBuckets are the classic buckets exposed next to the native
// histogram, for Prometheus servers without native histogram support:
// 100 µs to 1 min.
var latencyBuckets = [...]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Native histogram buckets use schema 3: bucket i holds values in
// (2^((i-1)/8), 2^(i/8)], a factor of about 1.09 per bucket. Latencies
// are clamped to [1 ns, 1 h], which spans bucket indexes -239..95.
const (
	nativeSchema = 3
	nativeMin    = -240
	nativeMax    = 96
)

// nativeBounds are 2^(i/8)/2 for i = 0..7: the fractions (as math.Frexp
// returns them) at which schema 3's buckets start, as in client_golang.
var nativeBounds = func() [8]float64 {
	var b [8]float64
	for i := range b {
		b[i] = math.Exp2(float64(i)/8) / 2
	}
	return b
}()

// nativeIndex is the schema-3 bucket of v > 0 seconds, clamped.
func nativeIndex(v float64) int {
	frac, exp := math.Frexp(v)
	i := sort.SearchFloat64s(nativeBounds[:], frac) + (exp-1)*len(nativeBounds)
	return min(max(i, nativeMin), nativeMax)
}

// promBuckets is a latency distribution as Prometheus exposes it.
type promBuckets struct {
	count   uint64
	sum     float64                     // seconds
	classic [len(latencyBuckets)]uint64 // per bucket, not cumulative
	native  [nativeMax - nativeMin + 1]int64
}

func (p *promBuckets) record(sec float64, n int64) {
	p.count += uint64(n)
	p.sum += sec * float64(n)
	if i := sort.SearchFloat64s(latencyBuckets[:], sec); i < len(p.classic) {
		p.classic[i] += uint64(n)
	}
	p.native[nativeIndex(sec)-nativeMin] += n
}

func (p *promBuckets) add(o *promBuckets) {
	p.count += o.count
	p.sum += o.sum
	for i := range p.classic {
		p.classic[i] += o.classic[i]
	}
	for i := range p.native {
		p.native[i] += o.native[i]
	}
}
