// Package readmodel is what the features that show a run read of it
// (package serve's /status and /metrics, the history the web console
// draws, the target watch): a workload's totals over its phases, with
// their latency buckets, and a phase's counts as /status shows them. It
// sums and shapes the engine's per-phase daemon.Snapshot, and reads
// nothing else of the engine.
package readmodel

import (
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
)

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

	ops  map[string]*daemon.OpSnapshot
	disp report.Buckets
}

// OpTotals are what one op did: OK and Failed batches, queries or
// operations (as soakd_ops_total counts them) and its latency.
type OpTotals struct {
	OK, Failed        int64
	Response, Service report.Buckets
}

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

// Totals are the workload's totals over its phases now.
func Totals(h *daemon.Handle) *RunTotals { return &Metrics(h).RunTotals }

// Metrics are the workload's totals over its phases now, as /metrics
// exports them.
func Metrics(h *daemon.Handle) *MetricTotals {
	t := &MetricTotals{RunTotals: RunTotals{ops: map[string]*daemon.OpSnapshot{}}}
	for _, p := range h.Phases() {
		s := p.Snapshot()
		t.Scheduled += s.Scheduled
		t.Acked += s.Acked
		t.Failed += s.Failed
		t.Dropped += s.Dropped
		t.Values += s.Values
		t.Bytes += s.Bytes
		t.disp.Add(&s.Dispatch)
		if v := s.Verify; v != nil {
			t.Verify.Add(v)
		}
		for i := range s.Ops {
			o := &s.Ops[i]
			for c, n := range o.Errors {
				t.Errors[c] += n
			}
			sum := t.ops[o.Op]
			if sum == nil {
				t.ops[o.Op] = o
				continue
			}
			sum.OK += o.OK
			sum.Failed += o.Failed
			sum.Rows += o.Rows
			for c, n := range o.Errors {
				sum.Errors[c] += n
			}
			sum.Response.Add(&o.Response)
			sum.Service.Add(&o.Service)
		}
	}
	t.InFlight = t.Scheduled - t.Acked - t.Failed - t.Dropped
	return t
}

// Op is op's totals; zero for an op that did nothing.
func (t *RunTotals) Op(op string) OpTotals {
	o := t.ops[op]
	if o == nil {
		return OpTotals{}
	}
	return OpTotals{OK: o.OK, Failed: o.Failed, Response: o.Response, Service: o.Service}
}

// Dispatch is the batches' dispatch delay, whatever their op.
func (t *RunTotals) Dispatch() report.Buckets { return t.disp }

// OpErrors are op's failed attempts of each class, in the order of
// sinks.Classes; zero for an op that did nothing.
func (t *RunTotals) OpErrors(op string) [len(sinks.Classes)]int64 {
	if o := t.ops[op]; o != nil {
		return o.Errors
	}
	return [len(sinks.Classes)]int64{}
}

// QueryRows are the rows op's acknowledged queries returned (query
// workloads); zero for an op that did nothing.
func (t *RunTotals) QueryRows(op string) int64 {
	if o := t.ops[op]; o != nil {
		return o.Rows
	}
	return 0
}

// Status is the phase's counts as /status (and the history) shows them.
func Status(p *daemon.Phase) report.StatusCounts {
	s := p.Snapshot()
	var byClass [len(sinks.Classes)]int64
	for _, o := range s.Ops {
		for c, n := range o.Errors {
			byClass[c] += n
		}
	}
	return report.StatusCounts{Scheduled: s.Scheduled, Acked: s.Acked, Failed: s.Failed, Dropped: s.Dropped,
		InFlight: s.InFlight(), Errors: report.ErrorsByClass(byClass[:]), Verify: s.Verify}
}
