package daemon

import (
	"github.com/soakd/soakd/report"
)

// This file is what the features that serve a run over HTTP (package
// serve: /status, /readyz, /metrics) read of a workload besides its
// phases' snapshots: what its target answers, why it is not ready, what
// it dropped and failed on.

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
	var out map[string]any
	for _, o := range h.w.observers {
		if sa, ok := o.(StatusAdder); ok {
			if k, v, ok := sa.AddStatus(h.w.name); ok {
				if out == nil {
					out = map[string]any{}
				}
				out[k] = v
			}
		}
	}
	return out
}

// RecentLatency is the achieved rate over the last 10 s and the current
// phase's latency as /status shows them: over the last whole progress
// interval, or the interval so far while the phase is younger than one.
// Both are zero before the first phase.
func (h *Handle) RecentLatency() (achieved float64, window LatencyWindow) {
	achieved, win := h.w.statusLive()
	window.Dispatch = win.dispatch
	for op := range win.ops {
		if q := win.ops[op]; q.response.Count > 0 {
			window.Ops = append(window.Ops, OpQuantiles{Op: opName(op), Response: q.response, Service: q.service})
		}
	}
	return achieved, window
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
