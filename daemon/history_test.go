package daemon_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/readmodel"
)

// The history's memory is measured here, on a simulated workload of the
// engine, rather than in package history: only the engine can simulate
// its own counts.

// BenchmarkHistoryHour samples one hour of a workload writing 100,000
// rows/s (100 batches of 1000 per second) into a history and reports the
// memory the history holds: history-bytes as it counts its own arrays
// (the workload's series, soakd's own and the previous sample's
// buckets), heap-bytes as the Go heap grew from creating the history to
// the hour's end. The workload (its histograms) exists before either is
// measured. TestHistoryMemoryIsBounded checks it stays the same later.
func BenchmarkHistoryHour(b *testing.B) {
	for b.Loop() {
		w := daemon.BenchHandle()
		simulate(nil, w, 1) // the workload's histograms exist before measuring
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		h := history.New()
		h.Started(context.Background(), []*daemon.Handle{w}, nil)
		simulate(h, w, 3600)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(h.Bytes()), "history-bytes")
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)), "heap-bytes")
		runtime.KeepAlive(h)
		runtime.KeepAlive(w)
	}
}

func benchHistory() (*history.History, *daemon.Handle) {
	w := daemon.BenchHandle()
	h := history.New()
	h.Started(context.Background(), []*daemon.Handle{w}, nil)
	return h, w
}

// simulate advances w by secs seconds of 100,000 rows/s, sampling h
// every second.
func simulate(h *history.History, w *daemon.Handle, secs int) {
	if h == nil {
		daemon.Simulate(w, secs, func(int) { readmodel.Totals(w) })
		return
	}
	origin := h.Snapshot().Started
	daemon.Simulate(w, secs, func(s int) { h.Tick(origin.Add(time.Duration(s)*time.Second), false) })
}

// TestHistoryMemoryIsBounded samples three simulated hours (the whole
// tier compacts four times) and checks the history holds no more than
// after the first hour; TestSeriesTiersStayBounded covers a week.
func TestHistoryMemoryIsBounded(t *testing.T) {
	t.Parallel()
	h, w := benchHistory()
	simulate(h, w, 3600)
	hour := h.Bytes()
	simulate(h, w, 2*3600)
	if later := h.Bytes(); later != hour {
		t.Errorf("history holds %d bytes after 3 hours, %d after one", later, hour)
	}
	if hour > 512<<10 {
		t.Errorf("history of one series workload holds %d bytes, more than the 0.5 MiB stated", hour)
	}
	doc := h.Snapshot()
	if got := doc.Workloads[0].Whole.Step; got != 16 {
		t.Errorf("whole tier step %v after 3 hours, want 16", got)
	}
	if got := doc.Workloads[0].Phases[0].Acked; got != 3*3600*100_000 {
		t.Errorf("acked %d", got)
	}
}
