package sinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sources"
)

// A sink that accepts query workloads (sources.Queries) runs the queries
// of a batch one after the other in Write, sets each one's Rows, and
// returns the bytes of the requests it sent. When a query fails, the
// queries before it were answered: the error says so with Partial, and
// the engine counts them as acknowledged (the rest of the batch failed).

// Partial wraps err, the failure of a batch whose first done units were
// stored or answered before it, so that Stored(err) is done. It returns
// err unchanged when done is 0.
func Partial(done int, err error) error {
	if done <= 0 || err == nil {
		return err
	}
	return &partialError{err: err, done: done}
}

type partialError struct {
	err  error
	done int
}

func (e *partialError) Error() string { return e.err.Error() }
func (e *partialError) Unwrap() error { return e.err }
func (e *partialError) Stored() int   { return e.done }

// EmptyResult is the error of a query that returned no rows where the
// data it reads must exist (sources.Query.MustFind): class empty, not
// worth retrying. done is the number of queries of the batch answered
// before it.
func EmptyResult(done int, q *sources.Query, start, end int64) error {
	err := fmt.Errorf("query %s returned no rows, though the data it reads must exist", q.Type)
	if end > start {
		err = fmt.Errorf("query %s returned no rows in [%s, %s), though the data it reads must exist", q.Type,
			time.Unix(0, start).UTC().Format(time.RFC3339Nano), time.Unix(0, end).UTC().Format(time.RFC3339Nano))
	}
	return Partial(done, &Error{Class: Empty, Err: err})
}

// ChurnRange returns the fetch of a RangeWatch over a data set with
// CHURN (churn non-nil), whose device 0 is replaced: the oldest data is
// device 0's (the data set's START under the simulated clock, where the
// churn intervals count from), the newest that of the device holding
// slot 0 last. device reads one device's range (it may read only its
// data after after, the newest seen so far, when after > 0). Each call
// reads the holder of slot 0 at the newest data seen, then its
// successors (slot 0 holds devices 0, Scale, 2×Scale, ...) until one
// has no data yet: two reads in steady state. Until device 0 has data,
// whole reads the range as without churn.
func ChurnRange(churn *sources.QueryChurn, device func(ctx context.Context, d uint32, after int64) (sources.DataRange, error),
	whole func(ctx context.Context) (sources.DataRange, error)) func(ctx context.Context) (sources.DataRange, error) {
	var mu sync.Mutex
	var cur sources.DataRange // from device 0 on, once known
	return func(ctx context.Context) (sources.DataRange, error) {
		mu.Lock()
		defer mu.Unlock()
		if !cur.Known {
			r, err := device(ctx, 0, 0)
			if err != nil {
				return r, err
			}
			if !r.Known {
				return whole(ctx)
			}
			cur = r
		}
		d := churn.Identity(0, cur.Oldest, cur.Newest)
		for i := range 64 { // bounded: the rest at the next call
			r, err := device(ctx, d, cur.Newest)
			if err != nil {
				return cur, err
			}
			if !r.Known && i > 0 {
				break // d has not reported yet
			}
			if r.Known {
				cur.Newest = max(cur.Newest, r.Newest)
			}
			d += churn.Scale
		}
		return cur, nil
	}
}

// MissingData wraps what a query sink's read of the data's range finds
// in place of data when the target lacks what the target URL names (a
// database that does not exist, a label= that no series carries), so
// that the watch tells it from a target that merely holds no data yet.
// err should name the setting at fault.
func MissingData(err error) error { return &missingError{err} }

type missingError struct{ err error }

func (e *missingError) Error() string { return e.err.Error() }
func (e *missingError) Unwrap() error { return e.err }

// RangeWatch keeps a query sink's view of the time range of the data it
// queries: a goroutine asks the target (fetch) every period, so that
// queries place their windows in the data written so far without waiting
// for that question themselves. Until the target holds data the range is
// not Known. Methods are safe for concurrent use.
type RangeWatch struct {
	fetch  func(ctx context.Context) (sources.DataRange, error)
	period time.Duration

	cur     atomic.Pointer[sources.DataRange]
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
	lastErr error
	// missing is what the last read found in place of data
	// (MissingData), nil when it found data or none yet. Atomic: every
	// query batch looks at it.
	missing atomic.Pointer[missingError]
	// seen is set once a read has found data.
	seen atomic.Bool
}

// NewRangeWatch returns a watch that calls fetch every period once
// started. fetch should be cheap (an index lookup): it runs beside the
// workload it measures.
func NewRangeWatch(period time.Duration, fetch func(ctx context.Context) (sources.DataRange, error)) *RangeWatch {
	w := &RangeWatch{fetch: fetch, period: period}
	w.cur.Store(&sources.DataRange{})
	return w
}

// Range is the data's time range as last seen.
func (w *RangeWatch) Range() sources.DataRange { return *w.cur.Load() }

// Refresh asks the target now and keeps the answer; on error the range
// last seen stays.
func (w *RangeWatch) Refresh(ctx context.Context) error {
	r, err := w.fetch(ctx)
	var missing *missingError
	if errors.As(err, &missing) {
		// The read worked and found nothing to query: no data yet, and
		// why none will come unless something creates it.
		r, err = sources.DataRange{}, nil
	}
	w.mu.Lock()
	w.lastErr = err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.missing.Store(missing)
	if r.Known {
		w.seen.Store(true)
	}
	w.cur.Store(&r)
	return nil
}

// Missing is what the last read found in place of data (an error of
// MissingData), nil when it found data or merely none yet.
func (w *RangeWatch) Missing() error {
	if m := w.missing.Load(); m != nil {
		return m
	}
	return nil
}

// Err is the error of the last refresh, if it failed.
func (w *RangeWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// Start starts refreshing in the background (once; not after Stop).
func (w *RangeWatch) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil || w.stopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.loop(ctx)
}

func (w *RangeWatch) loop(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, max(5*w.period, 5*time.Second))
		_ = w.Refresh(rctx) // the error stays in Err; the last range stays in use
		cancel()
	}
}

// Stop ends the background refresh and waits for it. Safe to call more
// than once, and without Start.
func (w *RangeWatch) Stop() {
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// QueryResult is what a query returned, in a form common to every query
// target, for tests that compare targets: column names, and rows of
// values (nil, string, float64, bool or time.Time). Query sinks return it
// from QueryRows (Querier); the engine only counts rows.
type QueryResult struct {
	Columns []string
	Rows    [][]any
}

// TSBSTables are the tables a query workload reads (TSBS's data sets),
// by role: cpu for devops, readings and diagnostics for iot. Main is the
// one whose rows tell the data's time range: cpu, else readings. A role
// the source lacks is T's zero value.
type TSBSTables[T comparable] struct {
	CPU, Readings, Diagnostics, Main T
}

// FindTSBSTables sorts a query sink's tables (schemas, or its own plans of
// them) by role, from their measurement names.
func FindTSBSTables[T comparable](tables []T, measurement func(T) string) TSBSTables[T] {
	var r TSBSTables[T]
	for _, t := range tables {
		switch measurement(t) {
		case "cpu":
			r.CPU = t
		case "readings":
			r.Readings = t
		case "diagnostics":
			r.Diagnostics = t
		}
	}
	var none T
	r.Main = r.CPU
	if r.Main == none {
		r.Main = r.Readings
	}
	return r
}

// RenderFunc writes q as a sink sends it to its target, its window placed
// in rng.
type RenderFunc func(b *strings.Builder, q *sources.Query, rng sources.DataRange) error

// errNotQueries is what a query method answers on a sink opened for
// another kind of workload.
var errNotQueries = errors.New("this sink was not opened for a query workload")

// QueryState is the part of a query sink's state that every query target
// shares: the watch of the data's range and how the sink renders a query.
// A sink embeds it and calls OpenQueries when it is opened for a query
// workload; its zero value is a sink opened for another kind, whose query
// methods fail. It gives the sink Querier's methods but QueryRows.
type QueryState struct {
	watch  *RangeWatch
	render RenderFunc
	// log and place are for the warnings that the data queried is not
	// there (SetDataPlace).
	log   *zap.Logger
	place string
	// started: StartRangeWatch read the range; told: the run's end
	// warned of no data.
	started, told atomic.Bool
}

// OpenQueries makes the sink a query sink that places its windows in
// what watch sees and renders queries with render.
func (qs *QueryState) OpenQueries(watch *RangeWatch, render RenderFunc) {
	qs.watch, qs.render = watch, render
}

// SetDataPlace says where the sink looks for the data it queries and
// which setting names that place (`database "bench" (the target URL's
// db=)`), for the warnings StartRangeWatch and StopRangeWatch log to log
// when it holds no data: a query workload aimed at the wrong place would
// otherwise answer every query with no rows and no word of why.
func (qs *QueryState) SetDataPlace(log *zap.Logger, place string) {
	qs.log, qs.place = log, place
}

// QueryRange is the data's range as last seen, for a query to place its
// window in; it fails on a sink not opened for a query workload.
func (qs *QueryState) QueryRange() (sources.DataRange, error) {
	if qs.watch == nil {
		return sources.DataRange{}, errNotQueries
	}
	return qs.watch.Range(), nil
}

// BatchRange is QueryRange for Write: its error is Rejected, since
// resending the batch cannot help.
func (qs *QueryState) BatchRange() (sources.DataRange, error) {
	rng, err := qs.QueryRange()
	return rng, NewError(Rejected, false, err)
}

// QueryText renders q as the sink sends it, over the data range it saw
// last.
func (qs *QueryState) QueryText(q *sources.Query) (string, error) {
	rng, err := qs.QueryRange()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	rq := q.Resolved(rng)
	err = qs.render(&sb, &rq, rng)
	return sb.String(), err
}

// RunBatch is RunQueries over the range BatchRange gives, with a
// builder of its own: the whole Write of a sink that needs nothing
// before its first query (a connection, a lock). run also gets the range.
// While the last read found the data missing (MissingData), it reads the
// range again first: a writer started beside this workload may have
// created the database since, and its queries must not fail for a
// second meanwhile.
func (qs *QueryState) RunBatch(ctx context.Context, b *sources.Batch,
	run func(q *sources.Query, rng sources.DataRange, text string) (sent int, rows int64, err error)) (int, error) {
	if qs.watch != nil && qs.watch.Missing() != nil {
		if err := qs.watch.Refresh(ctx); err != nil {
			return 0, err
		}
	}
	rng, err := qs.BatchRange()
	if err != nil {
		return 0, err
	}
	var sb strings.Builder
	return qs.RunQueries(b, rng, &sb, func(q *sources.Query, text string) (int, int64, error) {
		return run(q, rng, text)
	})
}

// RunQueries is the loop of a query sink's Write: it renders b's
// queries one after the other into sb, their windows placed in rng (from
// BatchRange), and runs each with run, which returns the bytes it sent
// and the rows the query answered, or its error. It sets each query's
// Rows and returns the bytes sent. A query that cannot be rendered or
// fails, or answers no rows where its data must exist, ends the batch
// with an error that counts the queries before it as answered (Partial).
func (qs *QueryState) RunQueries(b *sources.Batch, rng sources.DataRange, sb *strings.Builder,
	run func(q *sources.Query, text string) (sent int, rows int64, err error)) (int, error) {
	sent := 0
	for i := range b.Queries {
		q := &b.Queries[i]
		sb.Reset()
		// With CHURN the devices are those of q's window (q keeps its
		// slots, so a retried batch resolves them anew).
		if !rng.Known {
			// The target lacks what the URL names: the query cannot
			// find its data, which is what the class empty counts.
			if missing := qs.watch.Missing(); missing != nil {
				return sent, Partial(i, &Error{Class: Empty, Err: fmt.Errorf("query %s: no data to read: %w", q.Type, missing)})
			}
		}
		rq := q.Resolved(rng)
		if err := qs.render(sb, &rq, rng); err != nil {
			return sent, Partial(i, NewError(Rejected, false, err))
		}
		n, rows, err := run(&rq, sb.String())
		sent += n
		if err != nil {
			return sent, Partial(i, err)
		}
		q.Rows = rows
		if rows == 0 && q.MustFind(rng) {
			start, end := q.Window(rng)
			return sent, EmptyResult(i, q, start, end)
		}
	}
	return sent, nil
}

// DataRange is the data's time range as the sink saw it last (the zero
// range on a sink not opened for a query workload).
func (qs *QueryState) DataRange() sources.DataRange {
	rng, _ := qs.QueryRange()
	return rng
}

// RefreshRange reads the data's time range now.
func (qs *QueryState) RefreshRange(ctx context.Context) error {
	if _, err := qs.QueryRange(); err != nil {
		return err
	}
	return qs.watch.Refresh(ctx)
}

// StartRangeWatch reads the data's range once, then keeps reading it in
// the background until StopRangeWatch; a query sink's Prepare calls it.
// It does nothing on a sink not opened for a query workload.
func (qs *QueryState) StartRangeWatch(ctx context.Context) error {
	if qs.watch == nil {
		return nil
	}
	if err := qs.watch.Refresh(ctx); err != nil {
		return err
	}
	if !qs.watch.Range().Known && qs.log != nil {
		// Not an error: the workload that writes the data may start
		// after this one.
		msg := "no data to query yet in " + qs.place + ": queries find nothing until a workload writes there; if none will, fix that setting"
		if missing := qs.watch.Missing(); missing != nil {
			msg = "nothing to query: " + missing.Error()
		}
		qs.log.Warn(msg)
	}
	qs.started.Store(true)
	qs.watch.Start()
	return nil
}

// StopRangeWatch ends the background reads of the data's range; a query
// sink's Close calls it. Safe on any sink, and more than once.
func (qs *QueryState) StopRangeWatch() {
	if qs.watch == nil {
		return
	}
	qs.watch.Stop()
	if note := qs.noDataNote(); note != "" && qs.log != nil && qs.told.CompareAndSwap(false, true) {
		qs.log.Warn(note)
	}
}

// QueryNotes are the notes of a query sink for the summary (see
// Noter): that its queries never found data in the place SetDataPlace
// named, and why when the target said (no such database). The summary
// is made as the run ends, before the sinks close: the note says what
// was found by then.
func (qs *QueryState) QueryNotes() []string {
	if note := qs.noDataNote(); note != "" {
		return []string{note}
	}
	return nil
}

// noDataNote says that no data was found to query during the run, or ""
// when some was (or the watch never started).
func (qs *QueryState) noDataNote() string {
	if qs.watch == nil || qs.place == "" || !qs.started.Load() || qs.watch.seen.Load() {
		return ""
	}
	note := "no data found to query in " + qs.place + " during the whole run: every query read nothing; check that setting"
	if missing := qs.watch.Missing(); missing != nil {
		note += " (" + missing.Error() + ")"
	}
	return note
}
