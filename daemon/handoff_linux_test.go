//go:build linux

package daemon

import (
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/internal/clock"
	"github.com/soakd/soakd/pace"
)

// An idle worker that waits on its own bell is handed the next ticket
// directly; with none idle, the ticket goes to the queue, and a worker
// that finds one there takes it from the queue rather than going idle
// (one left there while a worker sat idle would wait for the next
// worker to finish). Closing the hand-over wakes an idle worker to
// leave.
func TestHandoffToIdleWorker(t *testing.T) {
	b, err := clock.NewBell()
	if err != nil {
		t.Skipf("no bell here: %v", err)
	}
	w := &worker{bell: b}
	defer b.Close()
	p := &phaseRun{queue: make(chan ticket, 2)}

	// Nobody idle: queued.
	if !p.offer(ticket{due: 1, units: 1}) || len(p.queue) != 1 || p.direct.Load() != 0 {
		t.Fatalf("no worker idle: queue holds %d, %d handed directly; want the ticket queued", len(p.queue), p.direct.Load())
	}
	// A ticket queued: the worker does not go idle.
	if _, ok, open := p.await(w); ok || !open || len(p.idle) != 0 {
		t.Fatalf("await with a ticket queued: ok %v open %v, %d idle; want it to return to the queue", ok, open, len(p.idle))
	}
	<-p.queue

	type got struct {
		t        ticket
		ok, open bool
	}
	res := make(chan got)
	await := func() {
		t, ok, open := p.await(w)
		res <- got{t, ok, open}
	}
	go await()
	for idle := false; !idle; { // until the worker is idle
		p.handMu.Lock()
		idle = len(p.idle) == 1
		p.handMu.Unlock()
	}
	if !p.offer(ticket{due: 2, units: 3}) {
		t.Fatal("offer refused with a worker idle")
	}
	var g got
	select {
	case g = <-res:
	case <-time.After(10 * time.Second):
		t.Fatalf("worker idle: not handed the ticket (queue holds %d)", len(p.queue))
	}
	if !g.ok || g.t != (ticket{due: 2, units: 3}) || len(p.queue) != 0 || p.direct.Load() != 1 {
		t.Fatalf("worker idle: got %+v, queue holds %d, %d handed directly; want the ticket handed to the worker", g, len(p.queue), p.direct.Load())
	}

	go await()
	for idle := false; !idle; {
		p.handMu.Lock()
		idle = len(p.idle) == 1
		p.handMu.Unlock()
	}
	p.closeQueue()
	if g := <-res; g.ok || g.open {
		t.Fatalf("closed while idle: got %+v, want the worker told to leave", g)
	}
}

// Idle workers wait on the queue when tickets are due more often than
// every bellGap, on their bells otherwise (and while paused).
func TestDenseTicketsWaitOnQueue(t *testing.T) {
	for _, c := range []struct {
		rate   float64
		batch  int
		paused bool
		dense  bool
	}{
		{10000, 1, false, true},   // every 100 µs
		{1000, 1, false, false},   // every 1 ms
		{10000, 10, false, false}, // batches every 1 ms
		{10000, 1, true, false},
	} {
		r := &runner{batchSize: c.batch}
		r.sched.Store(&schedule{profile: pace.Constant(c.rate), paused: c.paused})
		if got := r.dense(); got != c.dense {
			t.Errorf("rate %v, batch %d, paused %v: dense = %v, want %v", c.rate, c.batch, c.paused, got, c.dense)
		}
	}
}
