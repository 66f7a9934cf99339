// Package ratewin is the engine's achieved rate over a trailing window:
// one sample a second of a workload's acknowledged units and of the units
// its rate profile had due, over the last 10 s.
package ratewin

import "time"

// samples is one more than the window's seconds: the rates are over
// the span from the oldest sample kept to the newest.
const samples = 11

// Sample is one second's sample of a workload's counts.
type Sample struct {
	At      time.Duration
	Acked   int64
	Planned float64 // units the rate profile had due by then
	Open    bool    // open loop: Planned is meaningful
}

// Window keeps the last samples and the rates over them. The zero Window
// has no target (Target < 0 until two open-loop samples).
type Window struct {
	samples [samples]Sample
	n       int
	// Achieved is the units acknowledged per second over the window.
	Achieved float64
	// Target is the mean target rate over the same window (the rate
	// profile's integral over it ÷ its length): on a ramp the
	// instantaneous target runs half a window ahead of any trailing
	// average, so comparing with it shows a shortfall that is not there.
	// < 0: none (closed loop, or before two samples).
	Target float64
}

// New is an empty window.
func New() Window { return Window{Target: -1} }

// Add records a sample and recomputes the achieved rate and the mean
// target over the window from the oldest sample kept to this one.
func (st *Window) Add(s Sample) {
	st.samples[st.n%samples] = s
	st.n++
	oldest := st.samples[st.n%samples]
	if st.n < samples {
		oldest = st.samples[0]
	}
	st.Target = -1
	if dt := (s.At - oldest.At).Seconds(); dt > 0 {
		st.Achieved = float64(s.Acked-oldest.Acked) / dt
		if s.Open && oldest.Open {
			st.Target = (s.Planned - oldest.Planned) / dt
		}
	}
}
