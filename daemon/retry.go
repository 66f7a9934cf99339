package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/soakd/soakd/internal/backoff"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// write sends w.b, retrying while the sink says resending is safe, and
// counts the outcome in the worker's tally. due is the batch's intended
// start: response latency is measured from it, service latency from the
// send of the attempt that succeeded. It returns how the write ended.
func (r *runner) write(ctx context.Context, w *worker, due time.Duration) WriteOutcome {
	b := w.b
	if r.kind != sources.Series {
		w.counts = [opSlots]int64{}
		for i := range b.Len() {
			w.counts[unitOp(b, i)]++
		}
	}
	for attempt := 0; ; attempt++ {
		sendStart := r.since()
		if attempt == 0 {
			w.dispatch = sendStart - due
		}
		w.wctx = w.wctx.Arm()
		w.t.writing.Store(true)
		n, err := r.sink.Write(w.wctx, b)
		w.t.writing.Store(false)
		w.wctx.Disarm()
		done := r.since()
		if err == nil {
			r.succeeded(w, n, done-due, done-sendStart)
			return WriteOutcome{Acked: true}
		}
		class := sinks.ClassOf(err)
		if units := sinks.FailedUnits(err); len(units) > 0 && r.kind != sources.Series {
			// Some operations failed (reads that found no record); the
			// rest, writes included, were acknowledged. Resending would
			// repeat the writes, so this is the batch's outcome.
			r.noteError(err, class)
			r.errLog.Warn(r.log, string(class), "operations failed", r.scrub(err.Error()))
			r.unitsFailed(w, units, class, n, done-due, done-sendStart)
			return WriteOutcome{Acked: true}
		}
		if (class == sinks.Other || class == sinks.Connection) && errors.Is(w.wctx.Err(), context.DeadlineExceeded) {
			// The write outlived TIMEOUT: whatever the driver reports
			// after that (a connection it closed on the deadline reads
			// as EOF), the write failed because the target did not
			// answer in time.
			class = sinks.Timeout
		}
		r.attemptFailed(w, class, n)
		r.noteError(err, class)
		r.errLog.Warn(r.log, string(class), "write failed", r.scrub(err.Error()))
		retry, after := sinks.Retryable(err)
		if !retry || attempt >= r.cfg.Retries || ctx.Err() != nil ||
			!backoff.Sleep(ctx, backoff.Delay(r.cfg.RetryBackoff, attempt, after)) {
			stored := min(sinks.Stored(err), b.Len())
			r.batchFailed(w, stored, done-due, done-sendStart)
			return WriteOutcome{Stored: stored}
		}
	}
}

// succeeded counts an acknowledged batch and records its latencies.
func (r *runner) succeeded(w *worker, bytes int, response, service time.Duration) {
	b := w.b
	t := w.lockRoom()
	c := &t.c
	c.acked += int64(b.Len())
	c.bytes += int64(bytes)
	units := int32(b.Len()) // the batch's dispatch delay rides on its first sample
	if r.kind == sources.Series {
		c.values += int64(b.NumValues)
		c.ops[writeOp].ok++
		t.lat.add(sample{op: uint8(writeOp), n: 1, units: units, response: response, service: service, dispatch: w.dispatch})
	} else {
		for op, n := range w.counts {
			if n > 0 {
				c.ops[op].ok += n
				t.lat.add(sample{op: uint8(op), n: int32(n), units: units, response: response, service: service, dispatch: w.dispatch})
				units = 0
			}
		}
		countRows(c, b.Queries)
	}
	t.mu.Unlock()
}

// unitsFailed counts a KV or query batch of which the units at the
// positions units failed (class class) and the others were acknowledged,
// and records the acknowledged ones' latencies.
func (r *runner) unitsFailed(w *worker, units []int, class sinks.Class, bytes int, response, service time.Duration) {
	b := w.b
	var bad [opSlots]int64
	n := 0
	for _, i := range units {
		if i >= 0 && i < b.Len() && (n == 0 || i > units[n-1]) {
			bad[unitOp(b, i)]++
			units[n] = i
			n++
		}
	}
	t := w.lockRoom()
	c := &t.c
	c.acked += int64(b.Len() - n)
	c.failed += int64(n)
	c.bytes += int64(bytes)
	ci := class.Index()
	first := int32(b.Len()) // the batch's dispatch delay rides on its first sample
	for op, all := range w.counts {
		c.ops[op].errors[ci] += bad[op]
		c.ops[op].failed += bad[op]
		ok := all - bad[op]
		c.ops[op].ok += ok
		if ok > 0 {
			t.lat.add(sample{op: uint8(op), n: int32(ok), units: first, response: response, service: service, dispatch: w.dispatch})
			first = 0
		}
	}
	if first > 0 { // nothing acknowledged: sent, whatever became of it
		t.lat.add(sample{units: first, dispatch: w.dispatch})
	}
	countRows(c, b.Queries)
	t.mu.Unlock()
}

// unitOp is the op slot of unit i of a KV or query batch.
func unitOp(b *sources.Batch, i int) int {
	if len(b.Queries) > 0 {
		return queryOp0 + int(b.Queries[i].Type)
	}
	return int(b.Ops[i].Op)
}

// countRows adds the rows that acknowledged queries returned.
func countRows(c *counts, qs []sources.Query) {
	for i := range qs {
		c.ops[queryOp0+int(qs[i].Type)].rows += qs[i].Rows
	}
}

// attemptFailed counts one failed attempt by class (for KV and queries
// once per operation or query of each op in the batch, as
// soakd_errors_total does).
func (r *runner) attemptFailed(w *worker, class sinks.Class, bytes int) {
	ci := class.Index()
	t := w.t
	t.mu.Lock()
	t.c.bytes += int64(bytes)
	if r.kind == sources.Series {
		t.c.ops[writeOp].errors[ci]++
	} else {
		for op, n := range w.counts {
			t.c.ops[op].errors[ci] += n
		}
	}
	t.mu.Unlock()
}

// batchFailed counts a batch that failed for good. stored is how many of
// its units the target kept anyway (a partial write): those are
// acknowledged, with their values, the rest failed. For KV and queries the stored units are
// taken to be the first ones of the batch, which a target executes in
// order.
func (r *runner) batchFailed(w *worker, stored int, response, service time.Duration) {
	b := w.b
	t := w.lockRoom()
	c := &t.c
	c.acked += int64(stored)
	c.failed += int64(b.Len() - stored)
	t.lat.add(sample{units: int32(b.Len()), dispatch: w.dispatch}) // sent, whatever became of it
	if r.kind == sources.Series {
		// Which rows the target kept it does not say (InfluxDB's
		// "partial write ... dropped=N" counts them): their values are
		// the stored rows' share of the batch's, exact where every row
		// has as many values (no MISSING).
		if stored > 0 && b.Len() > 0 {
			c.values += int64(b.NumValues) * int64(stored) / int64(b.Len())
		}
		c.ops[writeOp].failed++
		t.mu.Unlock()
		return
	}
	var ok [opSlots]int64
	for i := range stored {
		ok[unitOp(b, i)]++
	}
	countRows(c, b.Queries[:min(stored, len(b.Queries))])
	for op, n := range w.counts {
		c.ops[op].ok += ok[op]
		c.ops[op].failed += n - ok[op]
		if ok[op] > 0 {
			t.lat.add(sample{op: uint8(op), n: int32(ok[op]), response: response, service: service})
		}
	}
	t.mu.Unlock()
}

// lockRoom locks the worker's tally with room for a sample per op. When
// the sample buffer is full it is merged into the phase's histograms
// first, taking the histogram lock before the tally's as every reader
// does.
func (w *worker) lockRoom() *tally {
	t := w.t
	t.mu.Lock()
	if t.lat.n+opSlots <= len(t.lat.s) {
		return t
	}
	t.mu.Unlock()
	h := &w.ps.hist
	h.mu.Lock()
	t.mu.Lock()
	h.mergeLocked(&t.lat)
	h.mu.Unlock()
	return t
}
