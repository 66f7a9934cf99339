package targetwatch

import "time"

// MemoryKinds are the kinds of memory that stand for the target's memory
// as one figure, in order of preference: the first the last reading has
// is the one. Kinds overlap (rss holds used, sys holds heap_inuse), so
// their sum would count bytes twice; the resident set is what the
// machine gives the target, then what it says it uses.
var MemoryKinds = []string{"rss", processRSS, "used", "heap_inuse", "sys"}

// Memory is the last reading of the memory of the workload's target: the
// first kind of MemoryKinds the reading has. ok is false while there is
// none (the watch is off, has read nothing yet, or its target gives none
// of those kinds).
func (tw *Watcher) Memory(workload string) (v float64, at time.Time, ok bool) {
	return tw.lastOf(workload, func(st *state) (float64, time.Time, bool) {
		for _, k := range MemoryKinds {
			f := st.memory[k]
			if k == processRSS {
				f = st.rss
			}
			if f != nil && f.current {
				return current(f)
			}
		}
		return 0, time.Time{}, false
	})
}

// Storage is the last reading of the storage the workload's data takes
// on its target: the total over kinds, as /status's storage_total_bytes.
func (tw *Watcher) Storage(workload string) (v float64, at time.Time, ok bool) {
	return tw.lastOf(workload, func(st *state) (float64, time.Time, bool) { return current(st.storageTotal) })
}

// Stat is the last reading of the stat name (one of sinks.Stats: keys,
// active series, ...) of the workload's target. ok is false while there
// is none (the watch is off, has read nothing yet, or its target does
// not give that figure).
func (tw *Watcher) Stat(workload, name string) (v float64, at time.Time, ok bool) {
	return tw.lastOf(workload, func(st *state) (float64, time.Time, bool) { return current(st.stats[name]) })
}

// StoragePerValue is the last reading of the storage per value (or
// record) acknowledged, as /status's storage_bytes_per_value.
func (tw *Watcher) StoragePerValue(workload string) (v float64, at time.Time, ok bool) {
	return tw.lastOf(workload, func(st *state) (float64, time.Time, bool) {
		if f := st.storageTotal; f != nil && f.current && st.hasPerValue && finite(st.perValue) != nil {
			return st.perValue, f.lastAt, true
		}
		return 0, time.Time{}, false
	})
}

// lastOf is what get finds in the workload's watch state, read under the
// watch's lock; ok is false without a watch.
func (tw *Watcher) lastOf(workload string, get func(st *state) (v float64, at time.Time, ok bool)) (float64, time.Time, bool) {
	w := tw.watchOf(workload)
	if w == nil {
		return 0, time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return get(&w.st)
}

// current is f's last reading, while f is current (a reading had it).
func current(f *figure) (float64, time.Time, bool) {
	if f != nil && f.current {
		return f.last, f.lastAt, true
	}
	return 0, time.Time{}, false
}
