// Package live samples a run as it goes, for what shows it live: each
// workload's achieved rate over the last 10 s against its mean target
// over the same span, and its latency over the last progress interval.
// A Sampler is an observer of the run (daemon.Deps.Observers) that
// follows the engine's clock (daemon.Ticker) and reads the engine through
// daemon.Handle and daemon.Phase alone: Handle.Planned, Phase.Snapshot
// and a Window of each phase. The progress line and the bar (package
// progress) and /status (package serve) read one Sampler; it comes
// before them among the observers, so that on each tick they read what
// it has just sampled.
package live

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// Sampler samples each workload of a run every second; see the package
// comment.
type Sampler struct {
	mu sync.Mutex
	ws map[*daemon.Handle]*workload
}

// workload is what a Sampler keeps of one workload.
type workload struct {
	// phase is the phase rate and last belong to: the one running at the
	// last tick.
	phase *daemon.Phase
	rate  rateWindow
	last  LatencyWindow // the last whole progress interval of phase; zero before the first

	// win collects the latency of the progress interval in progress of
	// winPhase, the phase begun last: a response and a service time
	// distribution per op of ops, then the dispatch delay.
	win      *daemon.Window
	winPhase *daemon.Phase
	ops      []string
}

// Live is what a Sampler sampled of a workload: what /status shows as
// achieved_rate and latency, and the progress line.
type Live struct {
	// Current reports whether the rates and window belong to the phase
	// running now (false before the first sample of a phase).
	Current bool
	// Achieved is the units acknowledged per second over the last 10 s;
	// Target the mean target rate over the same window (the rate
	// profile's integral over it), < 0 when there is none (max, or not
	// known yet).
	Achieved, Target float64
	// Window is the latency of the last whole progress interval.
	Window LatencyWindow
}

// LatencyWindow is the latency of a phase over one progress interval.
type LatencyWindow struct {
	// Ops are the ops with acknowledged units in the window, in the
	// engine's order of ops.
	Ops      []OpQuantiles
	Dispatch report.Quantiles
}

// OpQuantiles are one op's response and service latency.
type OpQuantiles struct {
	Op                string
	Response, Service report.Quantiles
}

// New returns a Sampler, to put among a run's observers.
func New() *Sampler { return &Sampler{ws: map[*daemon.Handle]*workload{}} }

// Opened follows w.
func (s *Sampler) Opened(w *daemon.Handle) error {
	s.mu.Lock()
	s.ws[w] = &workload{rate: newRateWindow()}
	s.mu.Unlock()
	return nil
}

// Started forgets the workloads of an earlier run the sampler followed,
// so that one sampler over many runs holds one run's windows at most.
func (s *Sampler) Started(_ context.Context, ws []*daemon.Handle, _ func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, st := range s.ws {
		if !slices.Contains(ws, h) {
			if st.win != nil {
				st.win.Stop()
			}
			delete(s.ws, h)
		}
	}
}

// PhaseBegun begins p's first latency window: it holds what p does
// from its start to the end of the progress interval in progress.
func (s *Sampler) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	ops := w.ReportedOps()
	// Read-back checks have latencies of their own, after the writes'
	// ops in the engine's order; a query workload writes nothing to read
	// back.
	if w.Verifies() && w.Kind() != sources.Queries {
		ops = append(ops, daemon.VerifyOp)
	}
	keys := make([]daemon.LatencyKey, 0, 2*len(ops)+1)
	for _, op := range ops {
		keys = append(keys, daemon.LatencyKey{Op: op}, daemon.LatencyKey{Op: op, Service: true})
	}
	win := p.StartWindow(append(keys, daemon.LatencyKey{Dispatch: true})...)
	s.mu.Lock()
	st := s.ws[w]
	if st == nil { // not opened through this sampler
		s.mu.Unlock()
		win.Stop()
		return
	}
	old := st.win
	st.win, st.winPhase, st.ops = win, p, ops
	s.mu.Unlock()
	if old != nil {
		old.Stop()
	}
}

// PhaseEnded does nothing: the phase's last window is cut on the next
// interval's end, as a running phase's.
func (s *Sampler) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Tick samples each workload's acknowledged units and its plan, and when
// a progress interval has ended cuts each phase's latency window and
// begins the next.
func (s *Sampler) Tick(_ time.Time, intervalEnded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, st := range s.ws {
		p := h.Phase()
		if p == nil {
			continue
		}
		// The plan is read at the sample's own time, so the mean target
		// over a window does not jitter with the time between readings.
		at, planned, open := h.Planned()
		acked := p.Acked()
		if !p.Same(st.phase) {
			st.phase, st.rate, st.last = p, newRateWindow(), LatencyWindow{}
		}
		st.rate.add(sample{at: at, acked: acked, planned: planned, open: open})
		if intervalEnded && st.win != nil && p.Same(st.winPhase) {
			st.last = latencyWindow(st.ops, st.win.Cut().Latency)
		}
	}
}

// Live is w's live state as last sampled.
func (s *Sampler) Live(w *daemon.Handle) Live {
	p := w.Phase()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.ws[w]
	if st == nil {
		return Live{Target: -1}
	}
	return Live{Current: p != nil && p.Same(st.phase), Achieved: st.rate.achieved, Target: st.rate.target, Window: st.last}
}

// Recent is w's achieved rate over the last 10 s and its current phase's
// latency as /status shows them: over the last whole progress interval,
// or the interval so far while the phase is younger than one. Both are
// zero before the first phase.
func (s *Sampler) Recent(w *daemon.Handle) (achieved float64, window LatencyWindow) {
	l := s.Live(w)
	if l.Current {
		achieved, window = l.Achieved, l.Window
	}
	p := w.Phase()
	if p == nil || window.Dispatch.Count > 0 {
		return achieved, window
	}
	s.mu.Lock()
	var win *daemon.Window
	var ops []string
	if st := s.ws[w]; st != nil && p.Same(st.winPhase) {
		win, ops = st.win, st.ops
	}
	s.mu.Unlock()
	if win == nil {
		return achieved, window
	}
	return achieved, latencyWindow(ops, win.Peek())
}

// latencyWindow names the ops of q (a window's quantiles, keyed as
// PhaseBegun starts it) that acknowledged units.
func latencyWindow(ops []string, q []report.Quantiles) LatencyWindow {
	w := LatencyWindow{Dispatch: q[len(q)-1]}
	for i, op := range ops {
		if r := q[2*i]; r.Count > 0 {
			w.Ops = append(w.Ops, OpQuantiles{Op: op, Response: r, Service: q[2*i+1]})
		}
	}
	return w
}
