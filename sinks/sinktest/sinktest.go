package sinktest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Prompt bounds how long a Write, Ping or Close may take once its context
// is done or its server has stopped answering.
const Prompt = 5 * time.Second

// Shape of the writes: the data set is written by workers goroutines at
// once, batchSize units a batch.
const (
	workers   = 2
	batchSize = 50
)

// Harness describes a sink to the suite.
type Harness struct {
	// Kinds are the kinds of workload the sink takes; the suite runs once
	// for each.
	Kinds []sources.Kind
	// Open opens the sink on a fresh, empty target (a new database, file or
	// key prefix) and returns it with a way to count what that target
	// holds. addr is "" for Server itself; otherwise the sink must reach
	// its server at addr (host:port): a proxy the suite puts in front of
	// Server, or a port that refuses connections. The suite sets o's Kind,
	// Schemas, Workers, BatchSize and, for KV, KeyPrefix (unique to this
	// call) and DataType; Open may change the sink-specific ones
	// (DataType). The suite closes the sink.
	Open func(t *testing.T, addr string, o sinks.Options) Target
	// Server is the address (host:port) of the real server behind Open's
	// sinks; "" when the sink has no network target (null, file), which
	// skips the stalled and refused subtests.
	Server string
}

// Target is a sink opened by Harness.Open.
type Target struct {
	Sink sinks.Sink
	// Count returns how many units the target holds: rows in its tables,
	// points in its database, keys under the key prefix, lines in its
	// files. nil when the sink keeps nothing to read back (null): the
	// suite then checks that writes succeed without comparing counts.
	Count func(t *testing.T) int
}

// Run runs the conformance suite on the sink h describes, one subtest per
// kind and property (see the package documentation).
func Run(t *testing.T, h Harness) {
	if h.Open == nil || len(h.Kinds) == 0 {
		t.Fatal("BUG: sinktest.Harness needs Open and Kinds")
	}
	for _, kind := range h.Kinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Run("stored", func(t *testing.T) { testStored(t, h, kind) })
			t.Run("close", func(t *testing.T) { testClose(t, h, kind) })
			t.Run("cancelled", func(t *testing.T) { testCancelled(t, h, kind) })
			t.Run("stalled", func(t *testing.T) { testStalled(t, h, kind) })
			t.Run("refused", func(t *testing.T) { testRefused(t, h, kind) })
		})
	}
}

// testStored writes the whole data set from concurrent workers, closes the
// sink and compares what the target holds with what Write acknowledged.
// Counting after Close shows that Close flushes.
func testStored(t *testing.T, h Harness, kind sources.Kind) {
	src, o := dataSet(t, kind)
	tg := open(t, h, "", o)
	prepare(t, tg.Sink)
	if p, ok := tg.Sink.(sinks.Pinger); ok {
		ctx, cancel := context.WithTimeout(context.Background(), Prompt)
		if err := p.Ping(ctx); err != nil {
			t.Errorf("Ping of a healthy target: %v", err)
		}
		cancel()
	}
	acked := writeAll(t, tg.Sink, src, o)
	if want := int(src.Total()); acked != want {
		t.Errorf("%d units acknowledged, the data set has %d", acked, want)
	}
	if _, ok := tg.Sink.(sinks.TargetWatcher); ok {
		TargetFigures(t, tg.Sink)
	}
	closeSink(t, tg.Sink)
	if tg.Count == nil {
		t.Logf("%d units acknowledged; the sink keeps nothing to count", acked)
		return
	}
	if got := tg.Count(t); got != acked {
		t.Errorf("the target holds %d units, Write acknowledged %d", got, acked)
	}
}

// testClose closes a sink that never wrote (opened only, and prepared),
// then closes it again: every sink documents a second Close as a no-op.
func testClose(t *testing.T, h Harness, kind sources.Kind) {
	_, o := dataSet(t, kind)
	closeSink(t, open(t, h, "", o).Sink)
	_, o = dataSet(t, kind)
	tg := open(t, h, "", o)
	prepare(t, tg.Sink)
	closeSink(t, tg.Sink)
	closeSink(t, tg.Sink)
	if tg.Count != nil {
		if n := tg.Count(t); n != 0 {
			t.Errorf("the target holds %d units after a sink that never wrote closed", n)
		}
	}
}

// testCancelled writes one batch, then another with a context that is
// already done: that write must send nothing and fail as a timeout (or
// connection) error, so the target holds only the first batch.
func testCancelled(t *testing.T, h Harness, kind sources.Kind) {
	src, o := dataSet(t, kind)
	tg := open(t, h, "", o)
	prepare(t, tg.Sink)
	next := batches(t, src, o)
	first := next()
	write(t, tg.Sink, first)
	acked := first.Len()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := tg.Sink.Write(ctx, next())
	if d := time.Since(start); d > Prompt {
		t.Errorf("Write with a cancelled context took %v", d.Round(time.Millisecond))
	}
	wantClass(t, "Write with a cancelled context", err, sinks.Timeout, sinks.Connection)
	closeSink(t, tg.Sink)
	if tg.Count != nil {
		if got := tg.Count(t); got != acked {
			t.Errorf("the target holds %d units, %d acknowledged before the cancelled write", got, acked)
		}
	}
}

// testStalled puts a proxy between the sink and its server, writes a batch
// through it, then freezes the proxy (no byte passes either way, as when
// the server is stopped with SIGSTOP) and writes again with a context
// cancelled shortly after: the write must end within Prompt of the cancel
// with a timeout or connection error. Ping does the same, and Close with
// a 1 s deadline returns within Prompt while the server is still frozen.
func testStalled(t *testing.T, h Harness, kind sources.Kind) {
	if h.Server == "" {
		t.Skip("the sink has no network target")
	}
	src, o := dataSet(t, kind)
	p := newProxy(t, h.Server)
	tg := open(t, h, p.Addr(), o)
	prepare(t, tg.Sink)
	next := batches(t, src, o)
	write(t, tg.Sink, next())
	p.Freeze()
	defer p.Thaw()

	const after = 300 * time.Millisecond
	stalled := func(what string, f func(context.Context) error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(after, cancel)
		start := time.Now()
		err := f(ctx)
		if d := time.Since(start) - after; d > Prompt {
			t.Errorf("%s returned %v after its context was cancelled", what, d.Round(time.Millisecond))
		}
		wantClass(t, what, err, sinks.Timeout, sinks.Connection)
	}
	stalled("Write to a frozen server", func(ctx context.Context) error {
		_, err := tg.Sink.Write(ctx, next())
		return err
	})
	if pg, ok := tg.Sink.(sinks.Pinger); ok {
		stalled("Ping of a frozen server", pg.Ping)
	}
	if w, ok := tg.Sink.(sinks.TargetWatcher); ok {
		// A watcher reads with a deadline, not a cancel: the interval's.
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), after)
		_, err := w.TargetFigures(ctx)
		cancel()
		if d := time.Since(start) - after; d > Prompt {
			t.Errorf("TargetFigures of a frozen server returned %v after its deadline", d.Round(time.Millisecond))
		}
		wantClass(t, "TargetFigures of a frozen server", err, sinks.Timeout, sinks.Connection)
	}
	// Close may give up on connections that do not answer when its
	// context ends, and say so.
	start := time.Now()
	err := closeWithin(tg.Sink, time.Second)
	if d := time.Since(start); d > Prompt {
		t.Errorf("Close with the server frozen and a 1s deadline took %v", d.Round(time.Millisecond))
	}
	if err != nil {
		checkClass(t, "Close with the server frozen", err)
	}
}

// testRefused opens the sink on a port nobody listens on: Prepare (where
// it connects), Ping, Write and TargetFigures fail promptly with class
// connection, and Close succeeds.
func testRefused(t *testing.T, h Harness, kind sources.Kind) {
	if h.Server == "" {
		t.Skip("the sink has no network target")
	}
	src, o := dataSet(t, kind)
	tg := open(t, h, closedAddr(t), o)
	refused := func(what string, f func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*Prompt)
		defer cancel()
		start := time.Now()
		err := f(ctx)
		if d := time.Since(start); d > Prompt {
			t.Errorf("%s took %v", what, d.Round(time.Millisecond))
		}
		if err == nil && what == "Prepare" {
			return // the sink connects on the first write
		}
		wantClass(t, what+" with the connection refused", err, sinks.Connection)
	}
	if p, ok := tg.Sink.(sinks.Preparer); ok {
		refused("Prepare", p.Prepare)
	}
	if p, ok := tg.Sink.(sinks.Pinger); ok {
		refused("Ping", p.Ping)
	}
	b := batches(t, src, o)()
	refused("Write", func(ctx context.Context) error {
		_, err := tg.Sink.Write(ctx, b)
		return err
	})
	targetDown(t, tg.Sink, sinks.Connection)
	closeSink(t, tg.Sink)
}

// open opens a sink through h and closes it when the test ends (again,
// for the subtests that closed it already).
func open(t *testing.T, h Harness, addr string, o sinks.Options) Target {
	t.Helper()
	tg := h.Open(t, addr, o)
	if tg.Sink == nil {
		t.Fatal("Harness.Open returned no sink")
	}
	t.Cleanup(func() { _ = closeWithin(tg.Sink, Prompt) })
	return tg
}

// prepare runs Prepare once when the sink has it.
func prepare(t *testing.T, s sinks.Sink) {
	t.Helper()
	p, ok := s.(sinks.Preparer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Prepare(ctx); err != nil {
		checkClass(t, "Prepare", err)
		t.Fatalf("Prepare: %v", err)
	}
}

func closeWithin(s sinks.Sink, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.Close(ctx)
}

// closeSink closes s and fails the test unless Close succeeds.
func closeSink(t *testing.T, s sinks.Sink) {
	t.Helper()
	if err := closeWithin(s, Prompt); err != nil {
		checkClass(t, "Close", err)
		t.Errorf("Close: %v", err)
	}
}

// write writes b, which must succeed.
func write(t *testing.T, s sinks.Sink, b *sources.Batch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := s.Write(ctx, b)
	if err != nil {
		checkClass(t, "Write", err)
		t.Fatalf("Write of %d units: %v", b.Len(), err)
	}
	if n < 0 {
		t.Errorf("Write reported %d bytes sent", n)
	}
}

// writeAll writes every unit of src through s from o.Workers goroutines,
// each with its own stream and batch, and returns the units acknowledged.
func writeAll(t *testing.T, s sinks.Sink, src sources.Source, o sinks.Options) int {
	t.Helper()
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range o.Workers {
		st, err := src.Stream(w, o.Workers)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			b := newBatch(src)
			for {
				b.Reset()
				ferr := st.Fill(b, o.BatchSize, time.Now().UnixNano())
				if b.Len() > 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					n, err := s.Write(ctx, b)
					cancel()
					if err != nil {
						checkClass(t, "Write", err)
						t.Errorf("Write of %d units: %v", b.Len(), err)
						return
					}
					if n < 0 {
						t.Errorf("Write reported %d bytes sent", n)
					}
					acked.Add(int64(b.Len()))
				}
				if ferr != nil {
					if !errors.Is(ferr, sources.ErrDone) {
						t.Errorf("Fill: %v", ferr)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	return int(acked.Load())
}

// batches returns a function that fills a new batch from the first stream
// of src each time it is called.
func batches(t *testing.T, src sources.Source, o sinks.Options) func() *sources.Batch {
	t.Helper()
	st, err := src.Stream(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return func() *sources.Batch {
		b := newBatch(src)
		if err := st.Fill(b, o.BatchSize, time.Now().UnixNano()); err != nil || b.Len() == 0 {
			t.Fatalf("the data set ran out: %v", err)
		}
		return b
	}
}

func newBatch(src sources.Source) *sources.Batch {
	if bs, ok := src.(sources.Batcher); ok {
		return bs.NewBatch()
	}
	return sources.NewSeriesBatch(src.Schemas())
}

// checkClass fails t unless err classifies to one of sinks.Classes.
func checkClass(t *testing.T, what string, err error) {
	t.Helper()
	if c := sinks.ClassOf(err); !slices.Contains(sinks.Classes[:], c) {
		t.Errorf("%s: error %q has class %q, not one of %v", what, err, c, sinks.Classes)
	}
}

// wantClass fails t unless err is an error of one of the classes.
func wantClass(t *testing.T, what string, err error, classes ...sinks.Class) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded, want a %v error", what, classes)
		return
	}
	checkClass(t, what, err)
	if c := sinks.ClassOf(err); !slices.Contains(classes, c) {
		t.Errorf("%s: class %s, want %v: %v", what, c, classes, err)
	}
}
