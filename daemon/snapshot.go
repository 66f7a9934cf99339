package daemon

import (
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
)

// Snapshot is what a phase did from its start, read in one snapshot of
// its tallies, so that its latency buckets agree with its op counts: what
// a feature that shows a run (package readmodel: /status, /metrics, the
// history) sums and presents.
type Snapshot struct {
	// Units scheduled, acknowledged, failed for good and dropped (Cut of
	// them cut at shutdown); field values acknowledged (series) and
	// payload bytes sent.
	Scheduled, Acked, Failed, Dropped, Cut, Values, Bytes int64
	// Ops are what each op that did something did, in the engine's order
	// of ops.
	Ops []OpSnapshot
	// Dispatch is the batches' dispatch delay, whatever their op.
	Dispatch report.Buckets
	// Verify is the phase's read-back checks (VERIFY), nil for a phase
	// of a workload without it.
	Verify *report.VerifyCounts
}

// InFlight is the units scheduled and not yet acknowledged, failed or
// dropped.
func (s *Snapshot) InFlight() int64 { return s.Scheduled - s.Acked - s.Failed - s.Dropped }

// OpSnapshot is what one op of a phase did: OK and Failed batches,
// queries or operations (as soakd_ops_total counts them), the rows its
// acknowledged queries returned, its failed attempts of each class (in
// the order of sinks.Classes), and its latency from each batch's intended
// start (Response) and from its send (Service).
type OpSnapshot struct {
	Op                string
	OK, Failed, Rows  int64
	Errors            [len(sinks.Classes)]int64
	Response, Service report.Buckets
}

// Snapshot is what the phase did so far. Each op's buckets are copied
// once, into its place in Ops, while the tallies are held: the history
// reads a snapshot every second.
func (p *Phase) Snapshot() Snapshot {
	var s Snapshot
	c := p.ps.snapshotWith(func(c *counts, h *phaseHist) {
		did := func(op int) bool {
			o := &c.ops[op]
			return h.ops[op] != nil || o.ok != 0 || o.failed != 0 || o.rows != 0 || o.errors != [numClasses]int64{}
		}
		n := 0
		for op := range c.ops {
			if did(op) {
				n++
			}
		}
		s.Ops = make([]OpSnapshot, 0, n)
		for op := range c.ops {
			if !did(op) {
				continue
			}
			o := &c.ops[op]
			s.Ops = append(s.Ops, OpSnapshot{Op: opName(op), OK: o.ok, Failed: o.failed, Rows: o.rows, Errors: o.errors})
			if oh := h.ops[op]; oh != nil {
				e := &s.Ops[len(s.Ops)-1]
				e.Response, e.Service = oh.response.prom, oh.service.prom
			}
		}
		if h.dispatch != nil {
			s.Dispatch = h.dispatch.prom
		}
	})
	s.Scheduled, s.Acked, s.Failed, s.Dropped, s.Cut, s.Values, s.Bytes = c.scheduled, c.acked, c.failed, c.dropped, c.cut, c.values, c.bytes
	if p.ps.verify != nil {
		v := &c.verify
		s.Verify = &report.VerifyCounts{Checked: v.checked, Missing: v.failures[0], Mismatch: v.failures[1],
			Duplicate: v.failures[2], Skipped: v.skipped}
	}
	return s
}

// VerifyOp names the read-back checks' op in a Snapshot's Ops and in
// soakd_response_seconds.
var VerifyOp = opName(verifyOp)
