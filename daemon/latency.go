package daemon

import (
	"sync"
	"time"

	"github.com/soakd/soakd/report"
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

// dist is one latency distribution kept two ways: since the phase began
// (for the summary) and as Prometheus buckets (for /metrics). Shorter
// spans (a progress interval, a threshold's window) are window
// recorders' (window.go).
//
// The distribution since the phase began is a report.Recorder never cut:
// bucket for bucket what an HDR histogram would hold, read the same, but
// its counts are made only where samples fell, and reading it walks only
// the buckets used. An HDR histogram made all 270 KB of its counts at
// the phase's first sample, and each of the summary's reads (minimum,
// mean, deviation, maximum, quantiles) walked them up to the highest
// sample, several times over: an idle sidecar's start and end paid both
// for each of its five distributions.
type dist struct {
	total report.Recorder
	prom  report.Buckets
}

func newDist() *dist { return &dist{} }

func (d *dist) record(v time.Duration, n int64) {
	ns := report.Clamp(v)
	d.total.Record(ns, n)
	d.prom.Record(time.Duration(ns).Seconds(), n)
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
		// A failed batch's sample (n 0) holds its dispatch delay alone,
		// which windows count as the phase does.
		for _, r := range h.recs {
			r.record(s)
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
	}
	b.n = 0
}

// opQuantiles are one op's response and service quantiles.
type opQuantiles struct{ response, service report.Quantiles }

// histQuantiles are a phase's quantiles: each op's, and the dispatch
// delay's.
type histQuantiles struct {
	ops      [opSlots]opQuantiles
	dispatch report.Quantiles
}

// quantiles reads the distributions since the phase began; h.mu is held.
func (h *phaseHist) quantiles() histQuantiles {
	var out histQuantiles
	for op, oh := range h.ops {
		if oh != nil {
			out.ops[op] = opQuantiles{oh.response.total.Dist().Quantiles(), oh.service.total.Dist().Quantiles()}
		}
	}
	if h.dispatch != nil {
		out.dispatch = h.dispatch.total.Dist().Quantiles()
	}
	return out
}
