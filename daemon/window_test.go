package daemon

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// feed counts n acknowledged units of op with latency lat (feedPhase).
func feed(ps *phaseStats, op int, n int, lat time.Duration) { feedPhase(ps, op, n, lat) }

// Windows cut from a recorder follow each other: each unit and each
// sample lands in exactly one, their counts add up to the phase's, and a
// window's latency is that of the samples merged in it, per op and for
// every op at once.
func TestWindowRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newPhaseStats("run", "1000", 2)
		read, update := int(sources.OpRead), int(sources.OpUpdate)
		all := distKey{op: allOps}
		readSvc := distKey{op: read, service: true}
		rec := ps.startWindow(all, readSvc)
		feed(ps, read, 300, time.Millisecond)
		feed(ps, update, 100, 3*time.Millisecond)
		time.Sleep(time.Second)
		w1 := ps.cutWindows(nil, rec)[0]
		feed(ps, read, 50, 7*time.Millisecond)
		time.Sleep(500 * time.Millisecond)
		var phase counts
		var phaseRead int64
		w2 := ps.cutWindows(func(c *counts, h *phaseHist) {
			phase = *c
			phaseRead = h.ops[read].response.total.Count()
		}, rec)[0]
		ps.stopWindow(rec)
		feed(ps, read, 10, time.Millisecond) // after stopWindow: seen by the phase only

		if w1.seconds() != 1 || w2.seconds() != 0.5 || w2.from != w1.to {
			t.Errorf("windows %v..%v and %v..%v: want 1 s then 0.5 s, back to back", w1.from, w1.to, w2.from, w2.to)
		}
		if w1.c.acked != 400 || w1.c.ops[read].ok != 300 || w1.c.ops[update].ok != 100 || w2.c.acked != 50 || w2.c.ops[update].ok != 0 {
			t.Errorf("window counts %+v, %+v", w1.c, w2.c)
		}
		if phase.acked != w1.c.acked+w2.c.acked || phaseRead != 350 {
			t.Errorf("phase acked %d (read latency count %d), windows %d + %d", phase.acked, phaseRead, w1.c.acked, w2.c.acked)
		}
		if n := w1.lat[0].Count(); n != 400 {
			t.Errorf("window 1 holds %d samples of every op, want 400", n)
		}
		if n := w1.lat[1].Count(); n != 300 {
			t.Errorf("window 1 holds %d read samples, want 300", n)
		}
		h := report.NewHistogram()
		w2.lat[1].AddTo(h)
		if h.TotalCount() != 50 || h.ValueAtQuantile(50) < int64(3500*time.Microsecond) || h.ValueAtQuantile(50) > int64(3510*time.Microsecond) {
			t.Errorf("window 2 read service time: %d samples, p50 %v; want 50 at 3.5ms", h.TotalCount(), time.Duration(h.ValueAtQuantile(50)))
		}
		if len(ps.hist.recs) != 0 {
			t.Error("the recorder is still attached")
		}

		// Cut after the phase ended: the window ends at the phase's end and
		// a second cut is empty.
		ps2 := newPhaseStats("run", "1000", 1)
		r2 := ps2.startWindow(all)
		time.Sleep(time.Second)
		ps2.end("DURATION")
		time.Sleep(time.Second)
		last := ps2.cutWindows(nil, r2)[0]
		if last.seconds() != 1 || last.empty() {
			t.Errorf("the window cut after the end lasts %vs, want 1 s", last.seconds())
		}
		if after := ps2.cutWindows(nil, r2)[0]; !after.empty() {
			t.Errorf("a window after the end is not empty: %+v", after)
		}
	})
}
