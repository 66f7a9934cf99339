package live

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
)

// tick is what the test's observer, after the sampler, read on a tick.
type tick struct {
	ended             bool
	live              Live
	recent            LatencyWindow
	writesOK, settled int64 // batches acknowledged; units acknowledged or failed
	acked             int64
}

// reader follows the run after the sampler and reads both it and the
// phase's own counts on each tick.
type reader struct {
	s     *Sampler
	w     *daemon.Handle
	ticks []tick
}

func (r *reader) Opened(w *daemon.Handle) error                          { r.w = w; return nil }
func (r *reader) Started(context.Context, []*daemon.Handle, func(error)) {}
func (r *reader) PhaseBegun(*daemon.Handle, *daemon.Phase)               {}
func (r *reader) PhaseEnded(*daemon.Handle, *daemon.Phase, string)       {}
func (r *reader) Tick(_ time.Time, ended bool) {
	p := r.w.Phase()
	if p == nil {
		return
	}
	c := p.Snapshot()
	tk := tick{ended: ended, live: r.s.Live(r.w), acked: c.Acked, settled: c.Acked + c.Failed}
	_, tk.recent = r.s.Recent(r.w)
	for _, o := range c.Ops {
		if o.Op == "write" {
			tk.writesOK = o.OK
		}
	}
	r.ticks = append(r.ticks, tk)
}

// The sampler's figures are the phase's own counts over the same spans:
// the achieved rate over the last 10 s, the mean target, and each
// progress interval's latency window, whose write count is the batches
// acknowledged in it and whose dispatch delay counts every unit sent,
// failed batches' too. Before the first interval ends, /status's window
// is the one in progress.
func TestSamplerMatchesThePhasesCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "14500ms", "SOAKD_SEQ_RETRIES", "0", "SOAKD_SEQ_TARGET", "null://?latency=2ms&fail=0.2",
			"SOAKD_PROGRESS_INTERVAL", "3s"), p)
		s := New()
		r := &reader{s: s}
		if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{s, r}}); err != nil {
			t.Fatal(err)
		}
		if len(r.ticks) != 14 {
			t.Fatalf("%d ticks in 14.5 s, want 14", len(r.ticks))
		}
		first := r.ticks[0]
		if first.ended || len(first.recent.Ops) != 1 || first.recent.Ops[0].Response.Count != first.writesOK || first.recent.Dispatch.Count != first.settled {
			t.Errorf("after 1 s /status's window %+v; want the interval so far: %d writes, %d units dispatched", first.recent, first.writesOK, first.settled)
		}
		var lastOK, lastSettled int64
		intervals := 0
		for i, tk := range r.ticks {
			// One sample is no span: no target until the second.
			if want := map[bool]float64{true: -1, false: 1000}[i == 0]; !tk.live.Current || tk.live.Target != want {
				t.Errorf("tick %d: current %v, target %v; want the phase's, %v", i+1, tk.live.Current, tk.live.Target, want)
			}
			from := r.ticks[max(i-10, 0)].acked
			if span := min(i, 10); span > 0 {
				if want := float64(tk.acked-from) / float64(span); tk.live.Achieved != want {
					t.Errorf("tick %d: achieved %v, want %v (units acknowledged over the last %d s)", i+1, tk.live.Achieved, want, span)
				}
			}
			if !tk.ended {
				continue
			}
			intervals++
			win := tk.live.Window
			if len(win.Ops) != 1 || win.Ops[0].Op != "write" || win.Ops[0].Response.Count != tk.writesOK-lastOK ||
				win.Ops[0].Service.Count != tk.writesOK-lastOK || win.Dispatch.Count != tk.settled-lastSettled {
				t.Errorf("tick %d: window %+v; want %d writes and %d units dispatched", i+1, win, tk.writesOK-lastOK, tk.settled-lastSettled)
			}
			if tk.recent.Dispatch != win.Dispatch {
				t.Errorf("tick %d: /status shows %+v, the progress line %+v", i+1, tk.recent.Dispatch, win.Dispatch)
			}
			lastOK, lastSettled = tk.writesOK, tk.settled
		}
		if intervals != 4 || lastSettled == lastOK*10 {
			t.Errorf("%d intervals ended, %d units settled in %d good batches: want 4, and failed batches", intervals, lastSettled, lastOK)
		}
	})
}

// One sampler over runs one after another (a sweep's) keeps what it
// sampled of a run until the next one starts, then holds that run's
// workloads alone.
func TestSamplerForgetsEarlierRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "3500ms", "SOAKD_SEQ_TARGET", "null://"), p)
		s := New()
		var runs []*reader
		for range 2 {
			r := &reader{s: s}
			runs = append(runs, r)
			if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{s, r}}); err != nil {
				t.Fatal(err)
			}
			if l := s.Live(r.w); !l.Current || l.Achieved <= 0 || l.Target != 100 {
				t.Errorf("after the run: %+v, want the run phase's rates kept", l)
			}
		}
		if n := len(s.ws); n != 1 {
			t.Errorf("the sampler holds %d workloads after two runs of one, want 1", n)
		}
		if l := s.Live(runs[0].w); l.Achieved != 0 || l.Target >= 0 {
			t.Errorf("the first run's workload is still sampled: %+v", l)
		}
	})
}
