package daemon

import (
	"time"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// This file is the engine's read model for the features that show a run
// as it goes (the progress line and bar, the history the web console
// draws): what the engine samples every second, a workload's totals over
// its phases and their latency buckets, read-only.

// Live is what the engine samples of a workload every second: what
// /status shows as achieved_rate and latency, and the progress line.
type Live struct {
	// Current reports whether the rates and window belong to the phase
	// running now (false before the first sample of a phase).
	Current bool
	// Achieved is the units acknowledged per second over the last 10 s;
	// Target the mean target rate over the same window (the rate
	// profile's integral over it), < 0 when there is none (max, or not
	// known yet).
	Achieved, Target float64
	// Window is the latency of the last whole progress interval.
	Window LatencyWindow
}

// LatencyWindow is the latency of a phase over one progress interval.
type LatencyWindow struct {
	// Ops are the ops with acknowledged units in the window, in the
	// engine's order of ops.
	Ops      []OpQuantiles
	Dispatch report.Quantiles
}

// OpQuantiles are one op's response and service latency.
type OpQuantiles struct {
	Op                string
	Response, Service report.Quantiles
}

// Live is the workload's live state as last sampled.
func (h *Handle) Live() Live {
	st, current := h.w.liveNow()
	l := Live{Current: current, Achieved: st.rate.Achieved, Target: st.rate.Target, Window: LatencyWindow{Dispatch: st.window.dispatch}}
	for op := range st.window.ops {
		if q := st.window.ops[op]; q.response.Count > 0 {
			l.Window.Ops = append(l.Window.Ops, OpQuantiles{Op: opName(op), Response: q.response, Service: q.service})
		}
	}
	return l
}

// TargetRate is the schedule's target rate now; paced is false when the
// workload runs at max (closed loop), where the rate means nothing.
func (h *Handle) TargetRate() (rate float64, paced bool) {
	s := h.w.sched.Load()
	return s.rateAt(h.w.since()), s.profile != nil
}

// Lag is how far the schedule is behind now (soakd_schedule_lag_seconds).
func (h *Handle) Lag() time.Duration { return h.w.lagNow() }

// BatchSize is the rows per batch (series) or the operations per
// pipeline (KV, queries) the workload sends.
func (h *Handle) BatchSize() int { return h.w.batchSize }

// State is the workload's state as /status names it: starting, running,
// paused or done.
func (h *Handle) State() string { return h.w.state() }

// Waiting is what the workload waits for while starting, as /status
// shows it.
func (h *Handle) Waiting() *report.StatusWaiting { return h.w.ready.Waiting() }

// DataSetSize is the number of units of the workload's data set, when
// it is finite.
func (h *Handle) DataSetSize() (n int64, ok bool) {
	if s, ok := h.w.src.(sources.Sized); ok {
		return s.Total(), true
	}
	return 0, false
}

// Phases are the workload's phases begun so far, in order.
func (h *Handle) Phases() []*Phase {
	ps := h.w.allPhases()
	out := make([]*Phase, len(ps))
	for i, p := range ps {
		out[i] = &Phase{p}
	}
	return out
}

// Began is when the phase began.
func (p *Phase) Began() time.Time { return monoBase.Add(p.ps.begin - 1) }

// Rate is the phase's rate as /status shows it: the configured one, or
// the last set through /control or by a capacity search.
func (p *Phase) Rate() string { return p.ps.rateText() }

// StoppedBy is why the phase ended (the summary's stopped_by), "" while
// it runs.
func (p *Phase) StoppedBy() string { return p.ps.stopReason() }

// Completed reports whether the phase ended on its own: its data set or
// rate profile ran out, or its DURATION passed.
func (p *Phase) Completed() bool {
	switch p.ps.stopReason() {
	case stopEndOfData, stopEndOfProfile, stopDuration:
		return true
	}
	return false
}

// Status is the phase's counts as /status shows them.
func (p *Phase) Status() report.StatusCounts {
	c := p.ps.snapshot()
	return phaseCounts(p.ps, &c)
}

// Writing is the number of the phase's workers inside a write now.
func (p *Phase) Writing() int { return p.ps.writing() }

// RunTotals is what a workload did over all its phases so far, as
// /metrics exports it: each phase read in one snapshot, so the latency
// buckets agree with the op counts.
type RunTotals struct {
	// Units acknowledged, failed for good and dropped; field values
	// acknowledged (series) and payload bytes sent.
	Acked, Failed, Dropped, Values, Bytes int64
	// Errors are the failed attempts of each class, in the order of
	// sinks.Classes.
	Errors [len(sinks.Classes)]int64

	ops  [opSlots]opCounts
	lat  *[opSlots]*latTotals // nil for an op never recorded
	disp *report.Buckets
}

// OpTotals are what one op did: OK and Failed batches, queries or
// operations (as soakd_ops_total counts them) and its latency.
type OpTotals struct {
	OK, Failed        int64
	Response, Service report.Buckets
}

// Totals are the workload's totals over its phases now.
func (h *Handle) Totals() *RunTotals {
	c, lat, disp := h.w.totals()
	return &RunTotals{Acked: c.acked, Failed: c.failed, Dropped: c.dropped, Values: c.values, Bytes: c.bytes,
		Errors: c.byClass(), ops: c.ops, lat: lat, disp: disp}
}

// Op is op's totals; zero for an op the engine does not know.
func (t *RunTotals) Op(op string) OpTotals {
	i := opSlot(op)
	if op == "" || i < 0 {
		return OpTotals{}
	}
	o := OpTotals{OK: t.ops[i].ok, Failed: t.ops[i].failed}
	if l := t.lat[i]; l != nil {
		o.Response, o.Service = l.response, l.service
	}
	return o
}

// Dispatch is the batches' dispatch delay, whatever their op.
func (t *RunTotals) Dispatch() report.Buckets { return *t.disp }

// state is the workload's state as /status names it.
func (w *workload) state() string {
	switch {
	case w.finished.Load():
		return "done"
	case !w.started():
		return "starting"
	case w.sched.Load().paused:
		return "paused"
	}
	return "running"
}
