package daemon

import (
	"time"

	"github.com/soakd/soakd/report"
)

// This file is what features read of a workload and its phases besides
// their snapshots (Phase.Snapshot, which package readmodel sums): the
// schedule, the state; and for the features that serve a run over HTTP
// (package serve: /status, /readyz, /metrics) what its target answers,
// why it is not ready, what it dropped and failed on.

// Planned is how long the current phase's schedule has run and the units
// its rate profile had due by then: the difference of two readings over
// a window is the window's mean target rate (package live's). open is
// false in closed loop (RATE=max), where nothing is planned.
func (h *Handle) Planned() (at time.Duration, units float64, open bool) {
	s := h.w.sched.Load()
	at = h.w.since()
	return at, s.planned(at), s.profile != nil
}

// TargetRate is the schedule's target rate now (0 once the workload is done
// or the run stopping: nothing more is scheduled); paced is false when the
// workload runs at max (closed loop), where the rate means nothing.
func (h *Handle) TargetRate() (rate float64, paced bool) {
	s := h.w.sched.Load()
	if h.w.finished.Load() || h.w.stopping.Load() {
		// Nothing more is scheduled: not the last rate asked for.
		return 0, s.profile != nil
	}
	return s.rateAt(h.w.since()), s.profile != nil
}

// Lag is how far the schedule is behind now (soakd_schedule_lag_seconds).
func (h *Handle) Lag() time.Duration { return h.w.lagNow() }

// BatchSize is the rows per batch (series) or the operations per
// pipeline (KV, queries) the workload sends.
func (h *Handle) BatchSize() int { return h.w.batchSize }

// State is the workload's state as /status names it: starting, running,
// paused, stopping (the run stopped scheduling and drains its writes in
// flight) or done.
func (h *Handle) State() string { return h.w.state() }

// Waiting is what the workload waits for while starting, as /status
// shows it.
func (h *Handle) Waiting() *report.StatusWaiting { return h.w.ready.Waiting() }

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

// Writing is the number of the phase's workers inside a write now.
func (p *Phase) Writing() int { return p.ps.writing() }

// state is the workload's state as /status names it.
func (w *workload) state() string {
	switch {
	case w.finished.Load():
		return "done"
	case w.stopping.Load():
		// No new work is scheduled; writes in flight may finish.
		return "stopping"
	case !w.started():
		return "starting"
	case w.sched.Load().paused:
		return "paused"
	}
	return "running"
}

// Ready reports whether the workload's target is prepared and answers
// its ping: what /readyz and soakd_ready say.
func (h *Handle) Ready() bool {
	return h.w.ready.Ready()
}

// NotReady says why the workload is not ready, as /readyz lists it: its
// target (secrets redacted), the setup step waited for, the last error
// and the next retry; "" when it is ready.
func (h *Handle) NotReady() string { return h.w.ready.NotReady() }

// LastError is the workload's last failed attempt, secrets scrubbed, or
// nil when none failed.
func (h *Handle) LastError() *report.ErrorSummary {
	if e := h.w.lastError(); e.Text != "" {
		s := errorSummary(e)
		return &s
	}
	return nil
}

// DropCause is why the phase running now dropped work, nil when it
// dropped none (or before the first phase).
func (h *Handle) DropCause() *report.DropCause {
	ps := h.w.cur.Load()
	if ps == nil {
		return nil
	}
	if c := ps.snapshot(); c.dropped == 0 {
		return nil
	}
	return h.w.phaseSummary(ps).DropCause
}

// Verdicts are the workload's thresholds as the run's Checkers judge
// them so far (soakd_threshold_ok, /status), nil when none judges it.
func (h *Handle) Verdicts() []report.ThresholdResult {
	return verdictsOf(h.w.observers, h.w.name, false)
}

// StatusFields are the fields the run's StatusAdders add to the
// workload's object in /status, by name; nil when none adds one.
func (h *Handle) StatusFields() map[string]any {
	return addedFields(h.w.observers, func(a StatusAdder) (string, any, bool) { return a.AddStatus(h.w.name) })
}

// OpenConns is the number of connections open to the workload's target
// now; ok is false when its sink does not count them.
func (h *Handle) OpenConns() (n int64, ok bool) {
	// Not w.sink: closing the sinks clears it while scrapes may run.
	if h.w.conns == nil {
		return 0, false
	}
	return h.w.conns.OpenConns(), true
}

// Verifies reports whether the workload reads back what it wrote
// (VERIFY), so that its totals hold read-back checks.
func (h *Handle) Verifies() bool { return h.w.cfg.Verify > 0 }

// Same reports whether p and o are the same phase of a workload.
func (p *Phase) Same(o *Phase) bool { return o != nil && p.ps == o.ps }

func errorsByClass(c *counts) map[string]int64 {
	by := c.byClass()
	return report.ErrorsByClass(by[:])
}
