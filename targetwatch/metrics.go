package targetwatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/sinks"
)

// collector exports each watched target's last reading. Names and labels
// are a contract with dashboards and alert rules (see README).
type collector struct{ w *Watcher }

// The metrics' help texts.
const (
	memoryHelp = "The target's own memory in bytes by kind, at the last reading (every SOAKD_<W>_WATCH_INTERVAL): " +
		"the kinds its sink reads (e.g. used, rss), and process_rss, the resident set of the process SOAKD_<W>_WATCH_PROCESS names."
	storageHelp = "The storage soakd's data takes on the target in bytes by kind (e.g. table, index, wal), as its sink reads it, at the last reading."
	cpuHelp     = "The target's CPU time (user + system) in seconds, as the target reports it, else its watched process's; " +
		"absent where neither is known. A restarted target starts again from 0."
	perValueHelp = "The target's storage summed over kinds (database, wal, compressed and uncompressed left out: wholes or views of the others), " +
		"in bytes, divided by what the workload had acknowledged at that reading: " +
		"field values for series workloads, records (insert operations, load phase included) for KV workloads."
	keysHelp          = "The keys the target holds over all its databases, at the last reading (Redis: INFO keyspace)."
	evictionsHelp     = "The keys the target has evicted to stay under its memory limit since it started, at the last reading (Redis: INFO stats evicted_keys)."
	fragmentationHelp = "The target's memory fragmentation ratio, the memory the system gives it over what its allocator holds, " +
		"at the last reading (Redis: INFO memory mem_fragmentation_ratio; a cluster's highest master's)."
	activeSeriesHelp = "The series the target holds as active, at the last reading " +
		"(Prometheus: prometheus_tsdb_head_series; VictoriaMetrics: the series with a sample in the current hour)."
	flushesHelp   = "The commands that emptied a database of the target since it started, at the last reading (Redis: FLUSHALL and FLUSHDB calls, INFO commandstats)."
	discardedHelp = "The rows or samples the target answered as written but did not store, since it started, at the last reading " +
		"(VictoriaMetrics: vm_rows_ignored_total, e.g. timestamps older than its retention): acknowledged, and not held."
)

var (
	memoryDesc   = prometheus.NewDesc("soakd_target_memory_bytes", memoryHelp, []string{"workload", "kind"}, nil)
	storageDesc  = prometheus.NewDesc("soakd_target_storage_bytes", storageHelp, []string{"workload", "kind"}, nil)
	cpuDesc      = prometheus.NewDesc("soakd_target_cpu_seconds_total", cpuHelp, []string{"workload"}, nil)
	perValueDesc = prometheus.NewDesc("soakd_target_storage_bytes_per_value", perValueHelp, []string{"workload"}, nil)
)

// statMetrics are the families of the sinks' Stats, by name; a stat a
// sink gives outside them is not exported.
var statMetrics = map[string]struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}{
	sinks.StatKeys:          {prometheus.NewDesc("soakd_target_keys", keysHelp, []string{"workload"}, nil), prometheus.GaugeValue},
	sinks.StatEvictions:     {prometheus.NewDesc("soakd_target_evictions_total", evictionsHelp, []string{"workload"}, nil), prometheus.CounterValue},
	sinks.StatFragmentation: {prometheus.NewDesc("soakd_target_memory_fragmentation_ratio", fragmentationHelp, []string{"workload"}, nil), prometheus.GaugeValue},
	sinks.StatActiveSeries:  {prometheus.NewDesc("soakd_target_active_series", activeSeriesHelp, []string{"workload"}, nil), prometheus.GaugeValue},
	sinks.StatDiscarded:     {prometheus.NewDesc("soakd_target_discarded_total", discardedHelp, []string{"workload"}, nil), prometheus.CounterValue},
	sinks.StatFlushes:       {prometheus.NewDesc("soakd_target_flushes_total", flushesHelp, []string{"workload"}, nil), prometheus.CounterValue},
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memoryDesc
	ch <- storageDesc
	ch <- cpuDesc
	ch <- perValueDesc
	for _, name := range sinks.Stats {
		ch <- statMetrics[name].desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.w.current() {
		w.collect(ch)
	}
}

// collect sends w's current figures: those the last reading of their
// source held.
func (w *watch) collect(ch chan<- prometheus.Metric) {
	name := w.h.Name()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &w.st
	hasRSS := st.rss != nil && st.rss.current
	kinds := func(d *prometheus.Desc, m map[string]*figure) {
		for k, f := range m {
			// The process watch's kind wins over a sink's of that name.
			if f.current && !(d == memoryDesc && k == processRSS && hasRSS) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f.last, name, k)
			}
		}
	}
	kinds(memoryDesc, st.memory)
	if hasRSS {
		ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, st.rss.last, name, processRSS)
	}
	kinds(storageDesc, st.storage)
	if st.cpu != nil && st.cpu.current {
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, st.cpu.last, name)
	}
	if st.hasPerValue {
		ch <- prometheus.MustNewConstMetric(perValueDesc, prometheus.GaugeValue, st.perValue, name)
	}
	for k, f := range st.stats {
		if m, ok := statMetrics[k]; ok && f.current {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, f.last, name)
		}
	}
}
