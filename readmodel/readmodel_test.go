package readmodel

import (
	"testing"
	"time"

	"github.com/soakd/soakd/daemon"
)

// TestStatusAddsUpThePhase feeds a phase by hand and checks /status's
// counts of it: every unit scheduled is acknowledged, dropped or in
// flight, and the failed attempts land in their class.
func TestStatusAddsUpThePhase(t *testing.T) {
	tp := daemon.NewTestPhase("run")
	tp.Ack("write", 3, 10*time.Millisecond)
	tp.Count(10, 0, 2, "write", 0, 4)
	got := Status(tp.Phase())
	if got.Scheduled != 13 || got.Acked != 3 || got.Dropped != 2 || got.Failed != 0 || got.InFlight != 8 {
		t.Errorf("counts %+v, want 13 scheduled, 3 acked, 2 dropped, 8 in flight", got)
	}
	if got.Errors["timeout"] != 4 || len(got.Errors) == 0 {
		t.Errorf("errors %v, want timeout 4", got.Errors)
	}
	if got.Verify != nil {
		t.Errorf("verify %+v for a phase without VERIFY", got.Verify)
	}
}

// TestSnapshotHoldsOnlyTheOpsThatDidSomething checks a phase's snapshot:
// the op that wrote, with its latency buckets agreeing with its count,
// and no other.
func TestSnapshotHoldsOnlyTheOpsThatDidSomething(t *testing.T) {
	tp := daemon.NewTestPhase("run")
	tp.Ack("write", 5, 10*time.Millisecond)
	s := tp.Phase().Snapshot()
	if len(s.Ops) != 1 || s.Ops[0].Op != "write" {
		t.Fatalf("ops %+v, want write alone", s.Ops)
	}
	o := s.Ops[0]
	if o.OK != 5 || o.Response.Count() != 5 || o.Service.Count() != 5 {
		t.Errorf("write: ok %d, %d response and %d service latencies, want 5 each", o.OK, o.Response.Count(), o.Service.Count())
	}
	if q := o.Response.Quantile(0.5); q < 0.009 || q > 0.011 {
		t.Errorf("median response %v s, want about 0.010", q)
	}
}
