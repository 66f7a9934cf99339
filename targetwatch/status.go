package targetwatch

import (
	"maps"
	"math"
	"time"
)

// Status is a workload's "target_figures" field in /status: what the watch of its
// target has read so far.
type Status struct {
	// IntervalSeconds is WATCH_INTERVAL; Readings the readings taken,
	// Errors those in which the sink could read nothing (LastError why).
	IntervalSeconds float64 `json:"interval_seconds"`
	Readings        int64   `json:"readings"`
	Errors          int64   `json:"errors"`
	LastError       string  `json:"last_error,omitempty"`
	// FirstAt and LastAt are the first and the last reading with a
	// figure in it.
	FirstAt *time.Time `json:"first_at,omitempty"`
	LastAt  *time.Time `json:"last_at,omitempty"`
	// Memory is the target's memory by kind: the sink's kinds, and
	// process_rss, the watched process's resident set; Storage the
	// storage soakd's data takes by kind, StorageTotal its sum over
	// kinds (those of notSummed aside). Bytes.
	Memory       map[string]Figure `json:"memory_bytes,omitempty"`
	Storage      map[string]Figure `json:"storage_bytes,omitempty"`
	StorageTotal *Figure           `json:"storage_total_bytes,omitempty"`
	CPU          *CPU              `json:"cpu_seconds,omitempty"`
	// StoragePerValue is StorageTotal's last reading ÷ Acknowledged, the
	// values (series) or records (KV) acknowledged then, as Counted says.
	StoragePerValue *float64 `json:"storage_bytes_per_value,omitempty"`
	Acknowledged    *float64 `json:"acknowledged,omitempty"`
	Counted         string   `json:"counted,omitempty"`
	// Process is the process WATCH_PROCESS names and the pid watched now
	// (0 while there is none).
	Process *Process `json:"process,omitempty"`
	// Unavailable names each figure not read, with why: the sink's, and
	// "target" (the sink cannot read any) and "process".
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// Figure is one figure over the run: its first reading, its last, its
// peak, and its growth per hour, linear over the run ((last - first) ÷
// hours between them; absent until two readings apart).
type Figure struct {
	First         float64  `json:"first"`
	Last          float64  `json:"last"`
	Peak          float64  `json:"peak"`
	GrowthPerHour *float64 `json:"growth_per_hour,omitempty"`
}

// CPU is the target's CPU time (user + system) over the run: from the
// target itself, or from its process (From); Cores is how many cores it
// kept busy on average between the first reading and the last.
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
	s := Status{IntervalSeconds: w.interval.Seconds(), Readings: st.readings, Errors: st.errors, LastError: st.lastError,
		Counted: w.counted}
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
		if secs := st.cpu.lastAt.Sub(st.cpu.firstAt).Seconds(); secs > 0 {
			s.CPU.Cores = finite((st.cpu.last - st.cpu.first) / secs)
		}
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
	s := Figure{First: f.first, Last: f.last, Peak: f.peak}
	if h := f.lastAt.Sub(f.firstAt).Hours(); h > 0 {
		s.GrowthPerHour = finite((f.last - f.first) / h)
	}
	return s
}

// finite is &v, or nil for a value JSON cannot hold.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
