package live

import "time"

// samples is one more than the rate window's seconds: the rates are over
// the span from the oldest sample kept to the newest.
const samples = 11

// sample is one second's sample of a workload's counts.
type sample struct {
	at      time.Duration // since its phase's schedule began
	acked   int64
	planned float64 // units the rate profile had due by then
	open    bool    // open loop: planned is meaningful
}

// rateWindow keeps the last samples of a phase and the rates over them.
type rateWindow struct {
	samples [samples]sample
	n       int
	// achieved is the units acknowledged per second over the window.
	achieved float64
	// target is the mean target rate over the same window (the rate
	// profile's integral over it ÷ its length): on a ramp the
	// instantaneous target runs half a window ahead of any trailing
	// average, so comparing with it shows a shortfall that is not there.
	// < 0: none (closed loop, or before two samples).
	target float64
}

func newRateWindow() rateWindow { return rateWindow{target: -1} }

// add records a sample and recomputes the achieved rate and the mean
// target over the window from the oldest sample kept to this one.
func (st *rateWindow) add(s sample) {
	st.samples[st.n%samples] = s
	st.n++
	oldest := st.samples[st.n%samples]
	if st.n < samples {
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
