package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/soakd/soakd/daemon/internal/writectx"
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
}

func (r *runner) newWorker(drainCtx context.Context, p *phaseRun, t *tally) *worker {
	w := &worker{ctx: drainCtx, ps: p.st, t: t, b: newBatch(p.src), wctx: writectx.New(drainCtx, r.cfg.Timeout)}
	if len(r.followers) > 0 {
		w.phase = &Phase{p.st} // made once, not per batch
	}
	return w
}

func (w *worker) close() { w.wctx.Close() }

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
func (r *runner) openWorker(p *phaseRun, w *worker) {
	drainCtx := w.ctx
	maxLag := r.cfg.MaxLag
	for t := range p.queue {
		if drainCtx.Err() != nil {
			w.t.drop(int64(t.units), true) // writes were cut at shutdown: never sent
			continue
		}
		now := r.since()
		lag := now - t.due
		w.t.lag.Store(int64(lag))
		w.t.lagAt.Store(int64(mono()))
		if lag > maxLag {
			w.t.drop(int64(t.units), false)
			r.warnDrop()
			continue
		}
		r.execute(drainCtx, p, w, t)
	}
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
	if n := t.units - b.Len(); held == nil && n > 0 {
		if cut {
			w.t.drop(int64(n), true) // shutdown came before a stream was free
		} else {
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
