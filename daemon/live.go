package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/soakd/soakd/config"
)

// rateSamples keeps one sample per second of a workload's acknowledged
// units, to report the achieved rate over the last 10 s.
const rateSamples = 11

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
	samples  [rateSamples]rateSample
	phase    *phaseStats // the phase the samples and window belong to
	n        int
	achieved float64
	// target is the mean target rate over the same window as achieved
	// (the rate profile's integral over it ÷ its length): on a ramp the
	// instantaneous target runs half a window ahead of any trailing
	// average, so comparing with it shows a shortfall that is not there.
	// < 0: none (closed loop, or before two samples).
	target float64
	window histQuantiles // the last whole window of phase; Count 0 before the first
}

func newSampler(cfg *config.Config, wls []*workload) *sampler {
	s := &sampler{wls: wls, interval: cfg.Progress}
	if s.interval <= 0 {
		s.interval = 10 * time.Second
	}
	for _, w := range wls {
		w.live.st = liveState{target: -1}
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
			*st = liveState{phase: ps, target: -1}
		}
		sch := w.sched.Load()
		// The plan is read at the sample's own time (now, as elapsed on
		// the schedule's clock), not at the moment this line runs: what
		// runs before it takes a varying while, which would make the mean
		// target over a window jitter by a few percent.
		e := now - time.Duration(w.origin.Load())
		st.add(rateSample{at: now, acked: ps.snapshot().acked, planned: sch.planned(e), open: sch.profile != nil})
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

// rateSample is one second's sample of a workload's counts.
type rateSample struct {
	at      time.Duration
	acked   int64
	planned float64 // units the rate profile had due by then (schedule.planned)
	open    bool    // open loop: planned is meaningful
}

// add records a sample and recomputes the achieved rate and the mean
// target over the window from the oldest sample kept to this one.
func (st *liveState) add(s rateSample) {
	st.samples[st.n%rateSamples] = s
	st.n++
	oldest := st.samples[st.n%rateSamples]
	if st.n < rateSamples {
		oldest = st.samples[0]
	}
	st.target = -1
	if dt := (s.at - oldest.at).Seconds(); dt > 0 {
		st.achieved = float64(s.acked-oldest.acked) / dt
		if s.open && oldest.open {
			st.target = (s.planned - oldest.planned) / dt
		}
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
		achieved, window = st.achieved, st.window
	}
	ps := w.cur.Load()
	if ps == nil || window.dispatch.Count > 0 {
		return achieved, window
	}
	ps.snapshot() // merge the workers' latest samples
	return achieved, ps.hist.windows()
}
