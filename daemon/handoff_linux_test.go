//go:build linux

package daemon

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/clock"
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

// Idle workers wait on the queue when a wake-up of the scheduler hands
// over more than two tickets (its wake-ups at least SLACK apart, and at
// least 100 µs), on their bells otherwise (and while paused).
func TestDenseTicketsWaitOnQueue(t *testing.T) {
	for _, c := range []struct {
		rate   float64
		batch  int
		slack  time.Duration
		paused bool
		dense  bool
	}{
		{30000, 1, 100 * time.Microsecond, false, true},  // 3 per wake-up
		{20000, 1, 100 * time.Microsecond, false, false}, // 2 per wake-up
		{10000, 1, 100 * time.Microsecond, false, false}, // every 100 µs
		{10000, 1, 0, false, false},                      // a wake-up per ticket, at most every 100 µs
		{30000, 1, 0, false, true},
		{10000, 1, time.Millisecond, false, true}, // 10 per wake-up
		{2000, 1, time.Millisecond, false, false}, // 2 per wake-up
		{300000, 10, 100 * time.Microsecond, false, true},
		{100000, 10, 100 * time.Microsecond, false, false}, // batches every 100 µs
		{30000, 1, 100 * time.Microsecond, true, false},
	} {
		r := &runner{batchSize: c.batch, cfg: &config.Workload{Slack: c.slack}}
		r.sched.Store(&schedule{profile: pace.Constant(c.rate), paused: c.paused})
		if got := r.dense(); got != c.dense {
			t.Errorf("rate %v, batch %d, slack %v, paused %v: dense = %v, want %v", c.rate, c.batch, c.slack, c.paused, got, c.dense)
		}
	}
}

// A ticket the scheduler put in the queue by its blocking send, after
// offer had found the queue full, while the workers emptied it and went
// idle on their bells, is handed to an idle worker; with nobody idle it
// stays in the queue for the next worker that looks.
func TestUnstrandQueuedTicket(t *testing.T) {
	b, err := clock.NewBell()
	if err != nil {
		t.Skipf("no bell here: %v", err)
	}
	w := &worker{bell: b}
	defer b.Close()
	p := &phaseRun{queue: make(chan ticket, 1)}

	p.queue <- ticket{due: 1, units: 1}
	p.unstrand()
	if len(p.queue) != 1 || p.direct.Load() != 0 {
		t.Fatalf("nobody idle: queue holds %d, %d handed directly; want the ticket left queued", len(p.queue), p.direct.Load())
	}
	<-p.queue

	type got struct {
		t        ticket
		ok, open bool
	}
	res := make(chan got)
	go func() {
		t, ok, open := p.await(w)
		res <- got{t, ok, open}
	}()
	for idle := false; !idle; { // until the worker is idle
		p.handMu.Lock()
		idle = len(p.idle) == 1
		p.handMu.Unlock()
	}
	p.queue <- ticket{due: 2, units: 3} // the scheduler's send, outside handMu
	p.unstrand()
	select {
	case g := <-res:
		if !g.ok || g.t != (ticket{due: 2, units: 3}) || len(p.queue) != 0 || len(p.idle) != 0 {
			t.Fatalf("got %+v, queue holds %d, %d idle; want the queued ticket handed to the idle worker", g, len(p.queue), len(p.idle))
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the idle worker was not handed the queued ticket (queue holds %d)", len(p.queue))
	}
}

// A /control request whose sender gave up before any scheduler took it
// (between phases, say) is reported as failed and never changes the plan
// afterwards, when the next phase's scheduler finds it in ctl.
func TestAbandonedControlNotApplied(t *testing.T) {
	r := &runner{ctl: make(chan controlReq, 1)}
	r.sched.Store(&schedule{profile: pace.Constant(10)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.control(ctx, controlReq{pause: true}) }()
	for len(r.ctl) == 0 { // until the request waits in ctl
		runtime.Gosched()
	}
	cancel() // its sender gives up before any scheduler runs
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("control with no scheduler, its sender gone: %v, want context.Canceled", err)
	}
	r.applyControl(<-r.ctl, 0, new(tally), false, r.since()) // the next phase's scheduler finds it
	if r.sched.Load().paused {
		t.Fatal("a pause reported as failed paused the workload later")
	}

	// A request taken in time is applied and answered.
	go func() { done <- r.control(context.Background(), controlReq{pause: true}) }()
	r.applyControl(<-r.ctl, 0, new(tally), false, r.since())
	if err := <-done; err != nil || !r.sched.Load().paused {
		t.Fatalf("control taken by the scheduler: %v, paused %v; want it applied", err, r.sched.Load().paused)
	}
}
