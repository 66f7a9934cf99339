package targetwatch

import (
	"time"

	"github.com/soakd/soakd/daemon"
)

var _ daemon.SummaryAdder = (*Watcher)(nil)

// Summary is a workload's "target_figures" field in the summary
// (--summary-json, on the workload's last entry): what the watch of its
// target read over the whole run, every phase; /status shows the same
// so far, with the process watched (Status). Not "target": the entry's
// "target" is the target's URL.
type Summary struct {
	// IntervalSeconds is WATCH_INTERVAL; Readings the readings taken,
	// Errors those in which the sink could read nothing (LastError the
	// last why).
	IntervalSeconds float64 `json:"interval_seconds"`
	Readings        int64   `json:"readings"`
	Errors          int64   `json:"errors"`
	LastError       string  `json:"last_error,omitempty"`
	// FirstAt and LastAt are the first and the last reading with a
	// figure in it: what each figure's growth per hour spans at most.
	FirstAt *time.Time `json:"first_at,omitempty"`
	LastAt  *time.Time `json:"last_at,omitempty"`
	// Memory is the target's memory by kind (process_rss: the watched
	// process's resident set), Storage the storage soakd's data takes by
	// kind, StorageTotal its sum over kinds (database, wal, compressed
	// and uncompressed aside), each its first, last and peak reading and
	// growth per hour. Bytes.
	Memory       map[string]Figure `json:"memory_bytes,omitempty"`
	Storage      map[string]Figure `json:"storage_bytes,omitempty"`
	StorageTotal *Figure           `json:"storage_total_bytes,omitempty"`
	// CPU is the target's CPU time, first and last reading, and the
	// cores it kept busy on average between them.
	CPU *CPU `json:"cpu_seconds,omitempty"`
	// Keys, Evictions, MemoryFragmentationRatio and ActiveSeries are the
	// target's figures that are not bytes (sinks.Stats), where its sink
	// reads them: each its first, last and peak reading and growth per
	// hour. Evictions and Discarded count from the target's start, not
	// the run's.
	Keys                     *Figure `json:"keys,omitempty"`
	Evictions                *Figure `json:"evictions,omitempty"`
	MemoryFragmentationRatio *Figure `json:"memory_fragmentation_ratio,omitempty"`
	ActiveSeries             *Figure `json:"active_series,omitempty"`
	Discarded                *Figure `json:"discarded,omitempty"`
	// Flushes is the target's count of commands that emptied a
	// database (Redis: FLUSHALL and FLUSHDB calls), since it started.
	Flushes *Figure `json:"flushes,omitempty"`
	// DiscardedBy is the rise of Discarded over the run by the target's
	// reason, those that rose (VictoriaMetrics: small_timestamp,
	// too_many_labels, invalid_TYPE, ...).
	DiscardedBy map[string]float64 `json:"discarded_by_reason,omitempty"`
	// Restarts is how often the target's server process was another
	// than at the reading before (Redis: its run_id), LastRestart the
	// reading that saw the last: a target without persistence lost what
	// it held before then.
	Restarts    int64      `json:"restarts,omitempty"`
	LastRestart *time.Time `json:"last_restart,omitempty"`
	// StoragePerValue is StorageTotal's last reading ÷ Acknowledged, the
	// values (series) or records (KV) acknowledged then, as Counted says.
	StoragePerValue *float64 `json:"storage_bytes_per_value,omitempty"`
	Acknowledged    *float64 `json:"acknowledged,omitempty"`
	Counted         string   `json:"counted,omitempty"`
	// Unavailable names each figure not read, with why: the sink's, and
	// "target" (the sink cannot read any) and "process".
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// SummaryField adds "target_figures" to the workload's summary entry when its
// watch is on. The engine asks once the run is over, after Finished has
// stopped the watch: the figures are final.
func (tw *Watcher) SummaryField(workload string) (string, any, bool) {
	w := tw.watchOf(workload)
	if w == nil {
		return "", nil, false
	}
	return "target_figures", w.summary(), true
}

// summary is w's Summary now.
func (w *watch) summary() Summary { return w.status().Summary }
