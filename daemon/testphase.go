package daemon

import "time"

// TestPhase is a phase fed by hand instead of by workers, for testing an
// observer (the thresholds' judge) on exactly the counts and latencies a
// test chooses: the observer reads it through Phase as it reads a running
// phase.
type TestPhase struct{ ps *phaseStats }

// NewTestPhase returns a phase named name that begins now.
func NewTestPhase(name string) *TestPhase { return &TestPhase{newPhaseStats(name, "test", 1)} }

// Phase is the observer's view of the phase.
func (p *TestPhase) Phase() *Phase { return &Phase{p.ps} }

// Ack counts n units of op acknowledged, each its own sample of response
// time lat and service time lat/2, as a worker would.
func (p *TestPhase) Ack(op string, n int, lat time.Duration) { feedPhase(p.ps, opSlot(op), n, lat) }

// End ends the phase, for reason.
func (p *TestPhase) End(reason string) { p.ps.end(reason) }

// feedPhase counts n acknowledged units of op, each its own sample of
// latency lat (service time lat/2), in the first worker's tally, as a
// worker does.
func feedPhase(ps *phaseStats, op int, n int, lat time.Duration) {
	t := ps.workers[0]
	for i := 0; i < n; i++ {
		t.mu.Lock()
		if t.lat.n == len(t.lat.s) {
			t.mu.Unlock()
			ps.snapshot() // merges the full buffer, as worker.lockRoom does
			t.mu.Lock()
		}
		t.c.scheduled++
		t.c.acked++
		t.c.ops[op].ok++
		t.lat.add(sample{op: uint8(op), n: 1, response: lat, service: lat / 2})
		t.mu.Unlock()
	}
}

// Windows is the number of windows attached to the phase (started and not
// stopped).
func (p *TestPhase) Windows() int {
	p.ps.hist.mu.Lock()
	defer p.ps.hist.mu.Unlock()
	return len(p.ps.hist.recs)
}

// Count adds to the phase's counts, without latency samples: units
// scheduled, acknowledged and dropped, and of op ok acknowledged batches
// and errs failed attempts.
func (p *TestPhase) Count(scheduled, acked, dropped int64, op string, ok, errs int64) {
	t := p.ps.workers[0]
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.scheduled += scheduled
	t.c.acked += acked
	t.c.dropped += dropped
	o := &t.c.ops[opSlot(op)]
	o.ok += ok
	o.errors[0] += errs
}
