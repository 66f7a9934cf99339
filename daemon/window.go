package daemon

import (
	"slices"
	"time"

	"github.com/soakd/soakd/report"
)

// A window is an interval of a phase: what the phase did in it is the
// difference of its counts at the window's edges, and the latency
// samples merged in between. A windowRecorder collects that for windows
// that follow each other without gap or overlap: phaseHist.mergeLocked
// hands every recorder attached to the phase the same samples it records
// in its own histograms, and cutWindows ends each recorder's window and
// starts the next in one snapshot, so every sample and count lands in
// exactly one window, and a window's latency counts agree with its op
// counts as the phase's do. A unit belongs to the window in which it was
// acknowledged (or failed, or was dropped).
//
// A recorder keeps one report.Recorder per distribution it was asked for
// (8 KB per power of two its samples fell in), however many windows it
// cuts; a window leaves as a report.Dist, which costs only the buckets its
// samples used, and cutting it reads and clears only those buckets. Thresholds cut windows to judge them; the capacity search
// would cut one per step:
//
//	rec := ps.startWindow(distKey{op: allOps})
//	... hold the step ...
//	st := ps.cutWindows(nil, rec)[0] // st.c: the step's counts; st.lat[0]: its latency
//	ps.stopWindow(rec)

// distKey names a latency distribution: of one op (its slot) or of every
// op (allOps), response time or service time; or (dispatch) the batches'
// dispatch delay, whatever op is named, counted per unit as the phase's.
type distKey struct {
	op       int
	service  bool
	dispatch bool
}

// allOps as a distKey's op merges every op's samples.
const allOps = -1

// windowRecorder collects one window at a time of a phase; see above.
// Only the goroutine that cuts it reads or writes base and from; hists
// belong to the phase's hist.mu.
type windowRecorder struct {
	keys  []distKey
	hists []report.Recorder // parallel to keys
	base  counts            // the phase's counts when the window began
	from  time.Duration     // mono() when the window began
}

// windowStats is what a phase did in one window.
type windowStats struct {
	from, to time.Duration // mono
	c        counts        // units and ops counted in the window (to − from)
	lat      []report.Dist // per key of the recorder
}

// seconds is the window's length.
func (ws *windowStats) seconds() float64 { return (ws.to - ws.from).Seconds() }

// empty reports a window of no length in which nothing happened (cut
// after its phase ended).
func (ws *windowStats) empty() bool { return ws.to <= ws.from && ws.c == (counts{}) }

// record adds a sample to every distribution it belongs to; the phase's
// hist.mu is held.
func (r *windowRecorder) record(s *sample) {
	for i, k := range r.keys {
		if k.dispatch {
			if s.units > 0 {
				r.recordIn(i, s.dispatch, int64(s.units))
			}
			continue
		}
		if s.n == 0 || k.op != allOps && k.op != int(s.op) {
			continue
		}
		v := s.response
		if k.service {
			v = s.service
		}
		r.recordIn(i, v, int64(s.n))
	}
}

// recordIn adds n samples of v to the i-th distribution.
func (r *windowRecorder) recordIn(i int, v time.Duration, n int64) {
	// Clamped as dist.record clamps, so the two agree bucket for bucket.
	r.hists[i].Record(report.Clamp(v), n)
}

// startWindow attaches a recorder of the distributions keys to ps: its
// first window begins now.
func (ps *phaseStats) startWindow(keys ...distKey) *windowRecorder {
	r := &windowRecorder{keys: keys, hists: make([]report.Recorder, len(keys))}
	r.base = ps.snapshotThen(func(h *phaseHist) {
		h.recs = append(h.recs, r)
		r.from = ps.windowEdge()
	})
	return r
}

// stopWindow detaches r from ps; what it held since its last cut is lost.
func (ps *phaseStats) stopWindow(r *windowRecorder) {
	ps.hist.mu.Lock()
	ps.hist.recs = slices.DeleteFunc(ps.hist.recs, func(x *windowRecorder) bool { return x == r })
	ps.hist.mu.Unlock()
}

// cutWindows ends the current window of each of recs and begins the next,
// all in one snapshot, and returns the windows ended, in the order of
// recs. then, if not nil, is called in the same snapshot with the phase's
// counts and histograms (the phase so far), before they can change again.
func (ps *phaseStats) cutWindows(then func(c *counts, h *phaseHist), recs ...*windowRecorder) []windowStats {
	out := make([]windowStats, len(recs))
	total := ps.snapshotWith(func(c *counts, h *phaseHist) {
		at := ps.windowEdge()
		for i, r := range recs {
			ws := &out[i]
			ws.from, ws.to = r.from, max(at, r.from)
			ws.lat = make([]report.Dist, len(r.keys))
			for j := range r.hists {
				ws.lat[j] = r.hists[j].Cut()
			}
		}
		if then != nil {
			then(c, h)
		}
	})
	for i, r := range recs {
		out[i].c = total
		out[i].c.sub(&r.base)
		r.base, r.from = total, out[i].to
	}
	return out
}

// windowEdge is now, or the phase's end once it has ended: nothing
// happens in a phase after its end.
func (ps *phaseStats) windowEdge() time.Duration {
	if end := time.Duration(ps.ended.Load()); end != 0 {
		return end
	}
	return mono()
}

// sub subtracts o from c, field by field.
func (c *counts) sub(o *counts) {
	c.scheduled -= o.scheduled
	c.acked -= o.acked
	c.failed -= o.failed
	c.dropped -= o.dropped
	c.cut -= o.cut
	c.waited -= o.waited
	c.values -= o.values
	c.bytes -= o.bytes
	for op := range c.ops {
		c.ops[op].ok -= o.ops[op].ok
		c.ops[op].failed -= o.ops[op].failed
		for i := range c.ops[op].errors {
			c.ops[op].errors[i] -= o.ops[op].errors[i]
		}
	}
}
