package sinks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/sources"
)

func TestPartialAndEmpty(t *testing.T) {
	base := NewError(Connection, true, errors.New("connection reset"))
	if Partial(0, base) != base {
		t.Error("Partial(0, err) must be err itself")
	}
	if Partial(3, nil) != nil {
		t.Error("Partial(3, nil) must be nil")
	}
	p := Partial(3, base)
	if Stored(p) != 3 || ClassOf(p) != Connection {
		t.Errorf("Partial(3, connection): stored %d class %s", Stored(p), ClassOf(p))
	}
	if ok, _ := Retryable(p); !ok {
		t.Error("Partial must keep the wrapped error's retry verdict")
	}
	q := &sources.Query{Type: sources.Lastpoint}
	e := EmptyResult(2, q, 0, 0)
	if ClassOf(e) != Empty || Stored(e) != 2 {
		t.Errorf("EmptyResult: class %s stored %d", ClassOf(e), Stored(e))
	}
	if ok, _ := Retryable(e); ok {
		t.Error("an empty answer is not worth retrying")
	}
	e = EmptyResult(0, &sources.Query{Type: sources.DoubleGroupby1}, 1e9, 2e9)
	if want := "empty: query double-groupby-1 returned no rows in [1970-01-01T00:00:01Z, 1970-01-01T00:00:02Z), though the data it reads must exist"; e.Error() != want {
		t.Errorf("EmptyResult text %q, want %q", e.Error(), want)
	}
}

func TestRangeWatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	var calls atomic.Int64
	fail := atomic.Bool{}
	w := NewRangeWatch(5*time.Millisecond, func(ctx context.Context) (sources.DataRange, error) {
		n := calls.Add(1)
		if fail.Load() {
			return sources.DataRange{}, errors.New("down")
		}
		return sources.DataRange{Oldest: 1, Newest: n, Known: true}, nil
	})
	if w.Range().Known {
		t.Fatal("known before any refresh")
	}
	if err := w.Refresh(context.Background()); err != nil || w.Range().Newest != 1 {
		t.Fatalf("Refresh: %v, range %+v", err, w.Range())
	}
	w.Start()
	w.Start() // once
	// Refreshes come every 5 ms; 30 s leaves a loaded machine its delays
	// and only lengthens a failing run.
	deadline := time.Now().Add(30 * time.Second)
	for calls.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if w.Range().Newest < 2 {
		t.Errorf("the background refresh did not update the range: %+v", w.Range())
	}
	fail.Store(true)
	before := calls.Load()
	for calls.Load() < before+2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !w.Range().Known || w.Err() == nil {
		t.Errorf("a failed refresh must keep the last range and report its error: %+v, %v", w.Range(), w.Err())
	}
	w.Stop()
	w.Stop()
	after := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != after {
		t.Error("refreshing after Stop")
	}
	w.Start() // not after Stop
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != after {
		t.Error("Start after Stop restarted the watch")
	}
}

func retryable(err error) bool { ok, _ := Retryable(err); return ok }

// TestQueryState: a sink not opened for a query workload refuses every
// query method with the same message (Rejected in Write); once opened, the
// methods read the watch and render with the sink's function.
func TestQueryState(t *testing.T) {
	defer goleak.VerifyNone(t)
	var qs QueryState
	const msg = "this sink was not opened for a query workload"
	if _, err := qs.QueryRange(); err == nil || err.Error() != msg {
		t.Errorf("QueryRange: %v", err)
	}
	if _, err := qs.BatchRange(); ClassOf(err) != Rejected || retryable(err) || !strings.Contains(err.Error(), msg) {
		t.Errorf("BatchRange: %v, class %s", err, ClassOf(err))
	}
	ran := false
	if _, err := qs.RunBatch(t.Context(), &sources.Batch{Queries: make([]sources.Query, 1)}, func(*sources.Query, sources.DataRange, string) (int, int64, error) {
		ran = true
		return 0, 1, nil
	}); ClassOf(err) != Rejected || ran {
		t.Errorf("RunBatch: %v, class %s, ran a query: %v", err, ClassOf(err), ran)
	}
	if _, err := qs.QueryText(&sources.Query{}); err == nil || err.Error() != msg {
		t.Errorf("QueryText: %v", err)
	}
	if err := qs.RefreshRange(t.Context()); err == nil || err.Error() != msg {
		t.Errorf("RefreshRange: %v", err)
	}
	if qs.DataRange() != (sources.DataRange{}) {
		t.Errorf("DataRange: %+v", qs.DataRange())
	}
	if err := qs.StartRangeWatch(t.Context()); err != nil {
		t.Errorf("StartRangeWatch: %v", err)
	}
	qs.StopRangeWatch()

	want := sources.DataRange{Oldest: 1, Newest: 2, Known: true}
	qs.OpenQueries(NewRangeWatch(time.Hour, func(context.Context) (sources.DataRange, error) { return want, nil }),
		func(b *strings.Builder, q *sources.Query, rng sources.DataRange) error {
			fmt.Fprintf(b, "%s %d..%d", q.Type, rng.Oldest, rng.Newest)
			return nil
		})
	if qs.DataRange().Known {
		t.Error("range known before the first read")
	}
	if err := qs.StartRangeWatch(t.Context()); err != nil || qs.DataRange() != want {
		t.Fatalf("StartRangeWatch: %v, %+v", err, qs.DataRange())
	}
	defer qs.StopRangeWatch()
	if rng, err := qs.BatchRange(); err != nil || rng != want {
		t.Errorf("BatchRange: %+v, %v", rng, err)
	}
	if text, err := qs.QueryText(&sources.Query{Type: sources.Lastpoint}); err != nil || text != sources.Lastpoint.String()+" 1..2" {
		t.Errorf("QueryText: %q, %v", text, err)
	}
	// RunBatch renders in the watch's range and hands run that range.
	b := &sources.Batch{Queries: []sources.Query{{Type: sources.Lastpoint}}}
	var got []string
	if n, err := qs.RunBatch(t.Context(), b, func(_ *sources.Query, rng sources.DataRange, text string) (int, int64, error) {
		got = append(got, fmt.Sprintf("%s in %d..%d", text, rng.Oldest, rng.Newest))
		return 4, 3, nil
	}); err != nil || n != 4 || b.Queries[0].Rows != 3 || len(got) != 1 || got[0] != sources.Lastpoint.String()+" 1..2 in 1..2" {
		t.Errorf("RunBatch: %d bytes, %v, rows %d, ran %q", n, err, b.Queries[0].Rows, got)
	}
}

// FindTSBSTables sorts tables by their measurement; the main table is
// cpu, else readings, else none.
func TestFindTSBSTables(t *testing.T) {
	name := func(s string) string { return s }
	if tt := FindTSBSTables([]string{"mem", "cpu"}, name); tt != (TSBSTables[string]{CPU: "cpu", Main: "cpu"}) {
		t.Errorf("devops: %+v", tt)
	}
	want := TSBSTables[string]{Readings: "readings", Diagnostics: "diagnostics", Main: "readings"}
	if tt := FindTSBSTables([]string{"diagnostics", "readings"}, name); tt != want {
		t.Errorf("iot: %+v", tt)
	}
	if tt := FindTSBSTables([]string{"mem"}, name); tt != (TSBSTables[string]{}) {
		t.Errorf("no TSBS table: %+v", tt)
	}
}

// RunQueries sets each query's rows and stops at the first query that
// fails, cannot be rendered or finds nothing it must find, counting the
// queries before it as answered.
func TestRunQueries(t *testing.T) {
	var qs QueryState
	rng := sources.DataRange{Oldest: 0, Newest: int64(24 * time.Hour), Known: true}
	qs.OpenQueries(NewRangeWatch(time.Hour, nil), func(b *strings.Builder, q *sources.Query, _ sources.DataRange) error {
		if q.Fleet == "unrenderable" {
			return errors.New("cannot render")
		}
		b.WriteString(q.Fleet)
		return nil
	})
	batch := func(fleets ...string) *sources.Batch {
		b := &sources.Batch{}
		for _, f := range fleets {
			b.Queries = append(b.Queries, sources.Query{Type: sources.Lastpoint, Fleet: f, Expect: true})
		}
		return b
	}
	down := errors.New("down")
	run := func(q *sources.Query, text string) (int, int64, error) {
		switch text {
		case "fails":
			return 3, 0, NewError(Connection, true, down)
		case "empty":
			return 3, 0, nil
		}
		return len(text), 7, nil
	}
	var sb strings.Builder
	b := batch("ab", "cde")
	if n, err := qs.RunQueries(b, rng, &sb, run); err != nil || n != 5 || b.Queries[0].Rows != 7 || b.Queries[1].Rows != 7 {
		t.Errorf("RunQueries: %d bytes, %v, rows %d %d", n, err, b.Queries[0].Rows, b.Queries[1].Rows)
	}
	for _, tc := range []struct {
		second string
		class  Class
	}{{"fails", Connection}, {"unrenderable", Rejected}, {"empty", Empty}} {
		b := batch("ab", tc.second, "cde")
		_, err := qs.RunQueries(b, rng, &sb, run)
		if ClassOf(err) != tc.class || Stored(err) != 1 || b.Queries[0].Rows != 7 || b.Queries[2].Rows != 0 {
			t.Errorf("%s: %v (class %s, %d answered), rows %d and %d", tc.second, err, ClassOf(err), Stored(err), b.Queries[0].Rows, b.Queries[2].Rows)
		}
	}
}

// With CHURN a query's devices are slots: RunQueries and QueryText
// render the devices holding them in the query's window, and leave the
// batch's slots as they were (a retry resolves them anew).
func TestRunQueriesChurn(t *testing.T) {
	var qs QueryState
	hour := int64(time.Hour)
	rng := sources.DataRange{Oldest: 5 * hour, Newest: 5*hour + 100*hour, Known: true}
	qs.OpenQueries(NewRangeWatch(time.Hour, func(context.Context) (sources.DataRange, error) { return rng, nil }),
		func(b *strings.Builder, q *sources.Query, _ sources.DataRange) error {
			fmt.Fprint(b, q.Devices[:q.NDevices])
			return nil
		})
	if err := qs.StartRangeWatch(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer qs.StopRangeWatch()
	// 10 slots, half replaced every hour: slot s gets a new device every
	// two hours. The 1-hour window at the middle of the data, from hour
	// 49.5 after the oldest, has its middle 50 hours after it: 250
	// replacements: slots 0 and 3 replaced 25 times each.
	churn := &sources.QueryChurn{Scale: 10, PerMillion: 500_000, Every: hour}
	q := sources.Query{Type: sources.SingleGroupby111, Pos: 0.5, Churn: churn, NDevices: 2, Devices: [8]uint32{0, 3}}
	want := "[250 253]"
	var got []string
	b := &sources.Batch{Queries: []sources.Query{q}}
	var sb strings.Builder
	if _, err := qs.RunQueries(b, rng, &sb, func(_ *sources.Query, text string) (int, int64, error) {
		got = append(got, text)
		return len(text), 1, nil
	}); err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("RunQueries rendered %q (%v), want %q", got, err, want)
	}
	if b.Queries[0].Devices != q.Devices {
		t.Errorf("the batch's slots became %v", b.Queries[0].Devices[:2])
	}
	if text, err := qs.QueryText(&q); err != nil || text != want {
		t.Errorf("QueryText: %q, %v, want %q", text, err, want)
	}
	q.Churn = nil
	if text, _ := qs.QueryText(&q); text != "[0 3]" {
		t.Errorf("without churn: %q", text)
	}
}

// ChurnRange follows slot 0's devices: the oldest data stays device 0's,
// the newest is that of the device holding slot 0 last, also when the
// holder at the newest time seen has sent nothing since (a sink that
// reads only what came after), with two reads a call in steady state.
func TestChurnRange(t *testing.T) {
	const step = int64(10 * time.Second)
	// 2 of 10 slots replaced every 10 minutes, slot 0 first: device 0
	// holds slot 0 for 10 minutes, each successor for 50.
	first, tenure := int64(10*time.Minute), int64(50*time.Minute)
	churn := &sources.QueryChurn{Scale: 10, PerMillion: 200_000, Every: int64(10 * time.Minute)}
	origin := int64(1000 * time.Hour)
	var written int64 // data written up to origin + written (exclusive)
	reads := 0
	device := func(_ context.Context, d uint32, after int64) (sources.DataRange, error) {
		reads++
		if d%10 != 0 {
			t.Fatalf("read device %d, which never holds slot 0", d)
		}
		from, to := origin, origin+first
		if g := int64(d / 10); g > 0 {
			from = origin + first + (g-1)*tenure
			to = from + tenure
		}
		to = min(to, origin+written) // exclusive
		if after > 0 {
			from = max(from, (after/step+1)*step)
		}
		if from >= to {
			return sources.DataRange{}, nil
		}
		return sources.DataRange{Oldest: from, Newest: (to - 1) / step * step, Known: true}, nil
	}
	whole := func(context.Context) (sources.DataRange, error) { return sources.DataRange{}, nil }
	fetch := ChurnRange(churn, device, whole)
	if r, err := fetch(t.Context()); err != nil || r.Known {
		t.Fatalf("no data: %+v, %v", r, err)
	}
	for written = int64(time.Minute); written < int64(6*time.Hour); written += int64(time.Minute) {
		reads = 0
		r, err := fetch(t.Context())
		want := origin + (written-1)/step*step
		if err != nil || !r.Known || r.Oldest != origin || r.Newest != want {
			t.Fatalf("after %s: range %d..%d (%v), want %d..%d", time.Duration(written), r.Oldest, r.Newest, err, origin, want)
		}
		if reads > 3 {
			t.Fatalf("after %s: %d reads", time.Duration(written), reads)
		}
	}
	// Far behind: ten hours at once, in one call.
	written += int64(10 * time.Hour)
	if r, _ := fetch(t.Context()); r.Newest != origin+(written-1)/step*step {
		t.Errorf("after a 10-hour jump: newest %d, want %d", r.Newest, origin+(written-1)/step*step)
	}
}
