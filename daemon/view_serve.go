package daemon

import (
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
)

// This file is the engine's read model for the features that serve a
// run over HTTP (package serve: /status, /readyz, /metrics): what a
// workload's target answers, why it is not ready, what it dropped and
// failed on, and its totals as the soakd_* metrics export them.

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

// MetricTotals are a workload's totals over its phases as /metrics
// exports them, read in one go: RunTotals, with the units scheduled and
// in flight and the read-back checks.
type MetricTotals struct {
	RunTotals
	// Scheduled are the units the schedule released: acknowledged +
	// failed + dropped + in flight.
	Scheduled, InFlight int64
	// Verify is the read-back checks (VERIFY); zero without them.
	Verify report.VerifyCounts
}

// MetricTotals are the workload's totals over its phases now.
func (h *Handle) MetricTotals() *MetricTotals {
	c, lat, disp := h.w.totals()
	v := &c.verify
	return &MetricTotals{
		RunTotals: RunTotals{Acked: c.acked, Failed: c.failed, Dropped: c.dropped, Values: c.values, Bytes: c.bytes,
			Errors: c.byClass(), ops: c.ops, lat: lat, disp: disp},
		Scheduled: c.scheduled, InFlight: c.inflight(),
		Verify: report.VerifyCounts{Checked: v.checked, Missing: v.failures[0], Mismatch: v.failures[1],
			Duplicate: v.failures[2], Skipped: v.skipped},
	}
}

// OpErrors are op's failed attempts of each class, in the order of
// sinks.Classes; zero for an op the engine does not know.
func (t *RunTotals) OpErrors(op string) [len(sinks.Classes)]int64 {
	var out [len(sinks.Classes)]int64
	if i := opSlot(op); op != "" && i >= 0 {
		copy(out[:], t.ops[i].errors[:])
	}
	return out
}

// QueryRows are the rows op's acknowledged queries returned (query
// workloads); zero for an op the engine does not know.
func (t *RunTotals) QueryRows(op string) int64 {
	if i := opSlot(op); op != "" && i >= 0 {
		return t.ops[i].rows
	}
	return 0
}

// VerifyOp names the read-back checks' op in the latency totals
// (RunTotals.Op) and in soakd_response_seconds.
var VerifyOp = opName(verifyOp)

// VerifyKinds name the kinds of failed read-back checks, as
// soakd_verify_failures_total's kind label: missing, mismatch,
// duplicate.
func VerifyKinds() []string {
	out := make([]string, len(verifyKinds))
	for i, k := range verifyKinds {
		out[i] = k.String()
	}
	return out
}

// statusCounts are /status's counts of c.
func statusCounts(c *counts) report.StatusCounts {
	return report.StatusCounts{Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped,
		InFlight: c.inflight(), Errors: errorsByClass(c)}
}

// phaseCounts are statusCounts of ps's snapshot c, with its read-back
// checks when the phase has them.
func phaseCounts(ps *phaseStats, c *counts) report.StatusCounts {
	sc := statusCounts(c)
	if ps.verify != nil {
		v := &c.verify
		sc.Verify = &report.VerifyCounts{Checked: v.checked, Missing: v.failures[0], Mismatch: v.failures[1],
			Duplicate: v.failures[2], Skipped: v.skipped}
	}
	return sc
}

func errorsByClass(c *counts) map[string]int64 {
	by := c.byClass()
	return report.ErrorsByClass(by[:])
}
