package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/internal/ratewin"
)

// sampler is the engine's one-second clock while a run schedules: every
// second it samples each workload's counts for the achieved rate, every
// progress interval it closes the phases' latency windows, and after each
// tick it calls the observers that follow the clock (Ticker). /status
// reads what it keeps; so do the progress line and the bar, through
// Handle.Live.
type sampler struct {
	wls      []*workload
	interval time.Duration // PROGRESS_INTERVAL, else 10 s
}

// liveBox is a workload's liveState behind its lock.
type liveBox struct {
	mu sync.Mutex
	st liveState
}

// liveState is what /status and the progress line show of a workload
// beyond its counts, refreshed every second.
type liveState struct {
	phase  *phaseStats    // the phase the rates and window belong to
	rate   ratewin.Window // the achieved and the target rate over the last 10 s
	window histQuantiles  // the last whole window of phase; Count 0 before the first
}

func newSampler(cfg *config.Config, wls []*workload) *sampler {
	s := &sampler{wls: wls, interval: cfg.Progress}
	if s.interval <= 0 {
		s.interval = 10 * time.Second
	}
	for _, w := range wls {
		w.live.st = liveState{rate: ratewin.New()}
	}
	return s
}

// run ticks every second until ctx ends.
func (s *sampler) run(ctx context.Context, observers []Observer) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := mono()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			at, now := time.Now(), mono()
			s.tick(now)
			ended := now-last >= s.interval-s.interval/10
			if ended {
				last = now
				s.closeWindows()
			}
			for _, o := range observers {
				if tk, ok := o.(Ticker); ok {
					tk.Tick(at, ended)
				}
			}
		}
	}
}

// tick samples the acknowledged counts.
func (s *sampler) tick(now time.Duration) {
	for _, w := range s.wls {
		ps := w.cur.Load()
		if ps == nil {
			continue
		}
		w.live.mu.Lock()
		st := &w.live.st
		if st.phase != ps {
			*st = liveState{phase: ps, rate: ratewin.New()}
		}
		sch := w.sched.Load()
		// The plan is read at the sample's own time (now, as elapsed on
		// the schedule's clock), not at the moment this line runs: what
		// runs before it takes a varying while, which would make the mean
		// target over a window jitter by a few percent.
		e := now - time.Duration(w.origin.Load())
		st.rate.Add(ratewin.Sample{At: now, Acked: ps.snapshot().acked, Planned: sch.planned(e), Open: sch.profile != nil})
		w.live.mu.Unlock()
	}
}

// closeWindows closes each workload's latency window of its current
// phase and begins the next.
func (s *sampler) closeWindows() {
	for _, w := range s.wls {
		w.live.mu.Lock()
		if ps := w.cur.Load(); ps != nil && w.live.st.phase == ps {
			ps.snapshot() // merge the workers' latest samples
			w.live.st.window = ps.hist.swapWindows()
		}
		w.live.mu.Unlock()
	}
}

// liveNow returns w's live state as last sampled, a copy, and whether it
// belongs to the phase running now.
func (w *workload) liveNow() (st liveState, current bool) {
	ps := w.cur.Load()
	w.live.mu.Lock()
	st = w.live.st
	w.live.mu.Unlock()
	return st, ps != nil && st.phase == ps
}

// statusLive returns a workload's achieved rate and its current phase's
// latency window for /status: the last whole window, or the one in
// progress while the phase is younger than one window.
func (w *workload) statusLive() (achieved float64, window histQuantiles) {
	st, current := w.liveNow()
	if current {
		achieved, window = st.rate.Achieved, st.window
	}
	ps := w.cur.Load()
	if ps == nil || window.dispatch.Count > 0 {
		return achieved, window
	}
	ps.snapshot() // merge the workers' latest samples
	return achieved, ps.hist.windows()
}
