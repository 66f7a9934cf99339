package targetwatch

import (
	"maps"
	"math"
	"time"

	"github.com/soakd/soakd/sinks"
)

// Status is a workload's "target_figures" field in /status: what the
// watch of its target has read so far (Summary), and the process it
// watches.
type Status struct {
	Summary
	// Process is the process WATCH_PROCESS names and the pid watched now
	// (0 while there is none).
	Process *Process `json:"process,omitempty"`
}

// Figure is one figure over the run: its first reading, its last, its
// peak, the seconds between its first reading and its last (a figure may
// first be read after the others: a file the target creates late), and
// its growth per hour, linear over them ((last - first) ÷ hours between
// them; absent until two readings a second apart or more).
type Figure struct {
	First         float64  `json:"first"`
	Last          float64  `json:"last"`
	Peak          float64  `json:"peak"`
	Seconds       float64  `json:"seconds,omitempty"`
	GrowthPerHour *float64 `json:"growth_per_hour,omitempty"`
	// Rise is what a counter (evictions, discarded, flushes) rose by
	// over the run, counted across the target's restarts (its counter
	// from 0 again), which last - first is not.
	Rise *float64 `json:"rise,omitempty"`
}

// CPU is the target's CPU time (user + system) over the run: from the
// target itself, or from its process (From); Cores is how many cores it
// kept busy on average between the first reading and the last (absent
// until they are a second apart or more).
type CPU struct {
	First float64  `json:"first"`
	Last  float64  `json:"last"`
	From  string   `json:"from"`
	Cores *float64 `json:"cores,omitempty"`
}

// Process is the watched process.
type Process struct {
	Watch string `json:"watch"`
	Pid   int    `json:"pid"`
}

// status is w's Status now.
func (w *watch) status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &w.st
	s := Status{Summary: Summary{IntervalSeconds: w.interval.Seconds(), Readings: st.readings, Errors: st.errors,
		LastError: st.lastError, Counted: w.counted}}
	if !st.firstAt.IsZero() {
		first, last := st.firstAt, st.lastAt
		s.FirstAt, s.LastAt = &first, &last
	}
	figs := func(m map[string]*figure) map[string]Figure {
		out := make(map[string]Figure, len(m))
		for k, f := range m {
			out[k] = f.status()
		}
		return out
	}
	s.Memory, s.Storage = figs(st.memory), figs(st.storage)
	if st.rss != nil {
		s.Memory[processRSS] = st.rss.status()
	}
	if st.storageTotal != nil {
		t := st.storageTotal.status()
		s.StorageTotal = &t
	}
	if st.cpu != nil {
		s.CPU = &CPU{First: st.cpu.first, Last: st.cpu.last, From: st.cpuFrom}
		if span := st.cpu.lastAt.Sub(st.cpu.firstAt); span >= minSpan {
			s.CPU.Cores = finite(st.cpuUsed / span.Seconds())
		}
	}
	for name, dst := range map[string]**Figure{sinks.StatKeys: &s.Keys, sinks.StatEvictions: &s.Evictions,
		sinks.StatFragmentation: &s.MemoryFragmentationRatio, sinks.StatActiveSeries: &s.ActiveSeries, sinks.StatDiscarded: &s.Discarded,
		sinks.StatFlushes: &s.Flushes} {
		if f := st.stats[name]; f != nil {
			v := f.status()
			if counterStats[name] {
				rise := f.rise
				v.Rise = &rise
			}
			*dst = &v
		}
	}
	s.DiscardedBy = st.discardedBy()
	if st.restarts > 0 {
		at := st.lastRestart
		s.Restarts, s.LastRestart = st.restarts, &at
	}
	if st.hasPerValue {
		s.StoragePerValue, s.Acknowledged = finite(st.perValue), finite(st.acknowledged)
	}
	if w.proc != nil {
		s.Process = &Process{Watch: w.proc.setValue(), Pid: st.pid}
	}
	if len(st.unavailable) > 0 {
		s.Unavailable = maps.Clone(st.unavailable)
	}
	return s
}

func (f *figure) status() Figure {
	span := f.lastAt.Sub(f.firstAt)
	s := Figure{First: f.first, Last: f.last, Peak: f.peak, Seconds: span.Seconds()}
	if span >= minSpan {
		s.GrowthPerHour = finite((f.last - f.first) / span.Hours())
	}
	return s
}

// minSpan is the least time between a figure's first reading and its last
// over which a rate is given (growth per hour, cores): readings every
// WATCH_INTERVAL are at least that far apart, but the last one, taken at
// the workload's end, may follow the first by less (a run phase shorter
// than a second), and a counter's last few ticks over a few milliseconds
// are no rate.
const minSpan = time.Second

// counterStats are the stats that are counters, whose Rise is given.
var counterStats = map[string]bool{sinks.StatEvictions: true, sinks.StatDiscarded: true, sinks.StatFlushes: true}

// finite is &v, or nil for a value JSON cannot hold.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
