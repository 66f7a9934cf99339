package targetwatch

import "time"

// CPU is the last reading of the CPU time (user + system, in seconds) of
// the workload's target: the target's own when it gives one, else its
// watched process's, as /status's cpu_seconds.last. It is a counter: a
// reader takes the difference of two readings over the time between them
// for the cores used. ok is false while there is none (the watch is off,
// has read nothing yet, or no longer reads a CPU time).
func (tw *Watcher) CPU(workload string) (seconds float64, at time.Time, ok bool) {
	return tw.lastOf(workload, func(st *state) (float64, time.Time, bool) { return current(st.cpu) })
}
