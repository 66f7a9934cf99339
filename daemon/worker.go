package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/soakd/soakd/internal/clock"
	"github.com/soakd/soakd/internal/writectx"
	"github.com/soakd/soakd/sources"
)

// worker holds what one worker reuses across batches.
type worker struct {
	ctx      context.Context // the drain context: done when writes in flight must stop
	ps       *phaseStats
	t        *tally // this worker's share of the phase's counts
	b        *sources.Batch
	wctx     *writectx.Ctx
	counts   [opSlots]int64 // units per op slot in the current KV or query batch
	dispatch time.Duration  // the current batch's intended start → first send
	used     []StreamSpan   // what the current batch was filled from
	phase    *Phase         // what the workload's followers see of ps, when it has any
	freeAt   time.Duration  // when this worker's last ticket ended (since the origin)

	// An open-loop worker's own bell, on which it waits while idle (nil
	// where there is none: it waits on the queue), and the ticket the
	// scheduler handed it (has), both under the phase's handMu.
	bell *clock.Bell
	next ticket
	has  bool
}

func (r *runner) newWorker(drainCtx context.Context, p *phaseRun, t *tally, open bool) *worker {
	w := &worker{ctx: drainCtx, ps: p.st, t: t, b: newBatch(p.src), wctx: writectx.New(drainCtx, r.cfg.Timeout)}
	if len(r.followers) > 0 {
		w.phase = &Phase{p.st} // made once, not per batch
	}
	if open {
		if b, err := clock.NewBell(); err == nil {
			w.bell = b
		}
	}
	return w
}

func (w *worker) close() {
	w.wctx.Close()
	if w.bell != nil {
		w.bell.Close()
	}
}

// newBatch returns an empty batch shaped for src.
func newBatch(src sources.Source) *sources.Batch {
	if bs, ok := src.(sources.Batcher); ok {
		return bs.NewBatch()
	}
	return sources.NewSeriesBatch(src.Schemas())
}

// openWorker takes tickets until the scheduler closes the queue. It never
// leaves early: every ticket the scheduler released is accounted for
// (written, dropped, or taken back when the data set has ended).
//
// A worker with a bell of its own (an eventfd), once the queue is empty,
// waits on it as an idle worker, and the scheduler hands it its next
// ticket directly and rings the bell. The kernel then makes the bell
// readable and the runtime's network poller gives the worker to the
// thread that polls, most often the scheduler's own as it goes idle: no
// goroutine readies another. At dense rates (see bellTickets) it waits on
// the queue instead. Readying a worker from the scheduler, as a channel send does,
// also wakes a second, idle thread to look for work it never finds: at
// 10,000 tickets a second those wake-ups, spins and sleeps cost more CPU
// than soakd's own code.
func (r *runner) openWorker(p *phaseRun, w *worker) {
	if w.bell == nil {
		for t := range p.queue {
			r.take(p, w, t)
		}
		return
	}
	for {
		select {
		case t, ok := <-p.queue:
			if !ok {
				return
			}
			r.take(p, w, t)
			continue
		default:
		}
		if r.dense() {
			t, ok := <-p.queue
			if !ok {
				return
			}
			r.take(p, w, t)
			continue
		}
		t, ok, open := p.await(w)
		switch {
		case ok:
			r.take(p, w, t)
		case !open:
			for t := range p.queue { // what is left, until close
				r.take(p, w, t)
			}
			return
		}
	}
}

// bellTickets is the most tickets a wake-up of the scheduler hands over
// at which idle workers wait on their bells. A handover of one or two
// leaves the runtime's threads all idle between wake-ups, so each channel
// send would wake a second thread to look for work it never finds; at
// more, that thread finds work, and the bell's three system calls per
// ticket (ring, and the worker's read before and after its wait) cost
// more than they save. Measured on a quiet 2-core VM against Redis, 16
// workers, SLACK 100 µs (a wake-up at most every 100 µs): the bell took
// 40 % off soakd's CPU per operation at 3,000 tickets/s, 18 % at 10,000
// and 5 % at 15,000, was even at 20,000 (two per wake-up) and cost 10 %
// more at 30,000; with SLACK 1ms at 10,000 (ten per wake-up) it was even.
const bellTickets = 2

// minWakeGap is the gap between the scheduler's wake-ups dense assumes
// when SLACK is shorter (0: a wake-up per ticket), so that it does not
// take every rate for sparse.
const minWakeGap = 100 * time.Microsecond

// dense says whether a wake-up of the scheduler now hands over more than
// bellTickets tickets (its wake-ups are at least SLACK apart): an idle
// worker then waits on the queue.
func (r *runner) dense() bool {
	gap := minWakeGap
	if r.cfg != nil {
		gap = max(gap, r.cfg.Slack)
	}
	return r.sched.Load().rateAt(r.since())*gap.Seconds() > bellTickets*float64(r.batchSize)
}

// take runs ticket t, or drops it when it is later than MAX_LAG or the
// writes were cut at shutdown.
func (r *runner) take(p *phaseRun, w *worker, t ticket) {
	if w.ctx.Err() != nil {
		w.t.drop(int64(t.units), true) // writes were cut at shutdown: never sent
		return
	}
	now := r.since()
	lag := now - t.due
	w.t.lag.Store(int64(lag))
	w.t.lagAt.Store(int64(mono()))
	if lag > r.cfg.MaxLag {
		if w.freeAt > t.due+r.cfg.MaxLag {
			// This worker was still on its last ticket when t went
			// stale: t waited for busy workers (the scheduler queues a
			// ticket only when none is idle).
			w.t.dropWaited(int64(t.units))
		} else {
			// The worker was free in time and got to t late, or t was
			// handed to it as it idled: soakd itself was late.
			w.t.drop(int64(t.units), false)
		}
		r.warnDrop()
		return
	}
	w.t.started.Store(int64(now) + 1)
	r.execute(w.ctx, p, w, t)
	w.t.started.Store(0)
	w.freeAt = r.since()
	w.t.busy.Add(int64(w.freeAt - now))
}

// await waits, as an idle worker, for a ticket handed over directly (ok).
// It returns without one at once when the queue holds one (the caller
// takes it from there), and with open false once no more tickets come.
func (p *phaseRun) await(w *worker) (t ticket, ok, open bool) {
	p.handMu.Lock()
	switch {
	case p.closed:
		p.handMu.Unlock()
		return ticket{}, false, false
	case len(p.queue) > 0:
		// The scheduler puts a ticket in the queue only when no worker
		// is idle (offer, under handMu): one there now was put before
		// this worker could be chosen.
		p.handMu.Unlock()
		return ticket{}, false, true
	}
	p.idle = append(p.idle, w)
	p.handMu.Unlock()
	for {
		alive := w.bell.Wait()
		p.handMu.Lock()
		if w.has {
			t, w.has = w.next, false
			p.handMu.Unlock()
			return t, true, true
		}
		if p.closed || !alive {
			p.handMu.Unlock()
			return ticket{}, false, false
		}
		p.handMu.Unlock() // a ring of an earlier ticket, taken already: wait on
	}
}

// offer hands t to the longest idle worker, else puts it in the queue if
// there is room; false when there is none.
func (p *phaseRun) offer(t ticket) bool {
	p.handMu.Lock()
	if w := p.popIdle(); w != nil {
		w.next, w.has = t, true
		p.handMu.Unlock()
		p.direct.Add(1)
		w.bell.Ring()
		return true
	}
	// Under handMu: a worker that finds the queue empty there becomes
	// idle, and is offered the next ticket, never this one.
	select {
	case p.queue <- t:
		p.handMu.Unlock()
		return true
	default:
		p.handMu.Unlock()
		return false
	}
}

// popIdle takes the longest idle worker off the idle list, under handMu;
// nil when none is idle.
func (p *phaseRun) popIdle() *worker {
	if len(p.idle) == 0 {
		return nil
	}
	w := p.idle[0]
	n := copy(p.idle, p.idle[1:])
	p.idle[n] = nil
	p.idle = p.idle[:n]
	return w
}

// unstrand hands a ticket waiting in the queue to an idle worker. The
// scheduler calls it after a send it made outside handMu, once offer had
// found the queue full: the workers may have emptied the queue (dropping
// late tickets takes them no time) and gone idle on their bells before
// that send, and would not look at the queue again until a ticket was
// handed to one of them.
func (p *phaseRun) unstrand() {
	p.handMu.Lock()
	defer p.handMu.Unlock()
	for len(p.idle) > 0 {
		select {
		case t := <-p.queue:
			w := p.popIdle()
			w.next, w.has = t, true
			p.direct.Add(1)
			w.bell.Ring() // an eventfd write: it never blocks
		default:
			return
		}
	}
}

// closeQueue ends the hand-over once the scheduler has returned: idle
// workers are woken to leave, the others leave once the queue is empty.
func (p *phaseRun) closeQueue() {
	p.handMu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.handMu.Unlock()
	for _, w := range idle {
		w.bell.Ring()
	}
	close(p.queue)
}

// closedWorker sends batch after batch as fast as the target answers
// (RATE=max); the intended start of a batch is when the worker starts it,
// and the worker schedules its own units.
func (r *runner) closedWorker(genCtx context.Context, p *phaseRun, w *worker, duration time.Duration) {
	drainCtx := w.ctx
	for genCtx.Err() == nil && drainCtx.Err() == nil && !isClosed(p.exhausted) {
		now := r.since()
		if duration > 0 && now >= duration {
			return
		}
		w.t.release(int64(r.batchSize))
		r.execute(drainCtx, p, w, ticket{due: now, units: r.batchSize})
	}
}

// execute fills one batch from a free stream and writes it.
func (r *runner) execute(ctx context.Context, p *phaseRun, w *worker, t ticket) {
	b := w.b
	b.Reset()
	// A stream that ends (or owns no devices at all) before the ticket is
	// full hands over to the next live stream, so no scheduled unit is
	// lost while data remains.
	var held *stream
	cut := false
	w.used = w.used[:0]
	for held == nil && b.Len() < t.units {
		var st *stream
		select {
		case st = <-p.streams:
		case <-p.exhausted:
		case <-ctx.Done():
			cut = true
		}
		if st == nil {
			break
		}
		span := StreamSpan{Stream: st.i}
		if st.pos != nil {
			span.From = st.pos.Position()
		}
		err := st.Fill(b, t.units-b.Len(), r.startWall.Load()+int64(t.due))
		if st.pos != nil {
			span.To = st.pos.Position()
		}
		w.used = append(w.used, span)
		if err == nil {
			held = st
			break
		}
		if !errors.Is(err, sources.ErrDone) {
			r.errLog.Warn(r.log, "source", "cannot generate a batch; retiring the stream", r.scrub(err.Error()))
		}
		if p.live.Add(-1) == 0 {
			close(p.exhausted)
		}
	}
	if n := t.units - b.Len(); n > 0 {
		switch {
		case held != nil:
			// The stream gave fewer units than asked, with more to come
			// (a wall clock's devices holding their readings, offline or
			// late): the rest were not made at this time, and would
			// otherwise stay in flight for good.
			w.t.release(-int64(n))
		case cut:
			w.t.drop(int64(n), true) // shutdown came before a stream was free
		default:
			// The data set ended inside this ticket: those units never
			// existed.
			w.t.release(-int64(n))
		}
	}
	if b.Len() > 0 {
		r.written(w, r.write(ctx, w, t.due))
	}
	if held != nil {
		// The stream goes back only after the write, so one device's rows
		// reach the target in time order.
		p.streams <- held
	}
}

// written tells the workload's followers, if any, how the write of the
// worker's batch ended.
func (r *runner) written(w *worker, o WriteOutcome) {
	if len(r.followers) == 0 {
		return
	}
	o.Streams = w.used
	for _, f := range r.followers {
		f.Written(w.phase, w.b, o)
	}
}
