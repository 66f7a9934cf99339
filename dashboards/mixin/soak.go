//lint:file-ignore SA1019 dashboardv2 is the schema of Grafana 12 only; these dashboards are for Grafana 10 to 12, which all read the classic one.

package mixin

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Soak is soak.json: a soak test at a glance. Everything is per workload,
// summed over the processes of a sharded run, except the soakd process
// panels, which are per instance to show whether a generator is the
// bottleneck.
func Soak() (dashboard.Dashboard, error) {
	s, ps := panelScope, processScope
	pct := "percentunit"
	b := newDashboard("soakd: soak", "soakd-soak",
		"A soakd soak test: rate, latency, failures and the generators themselves, per workload, summed over shards.")

	b.WithRow(dashboard.NewRowBuilder("Now"))
	b.WithPanel(statPanel("Achieved / target",
		"Acknowledged rate over the target rate (absent in max mode and while paused). Below 95 % the target is not keeping up.",
		pct, steps("red", 0.95, "green"),
		q(fmt.Sprintf("(%s) / (%s > 0)", s.achieved(), s.target()), "{{workload}}")))
	b.WithPanel(statPanel("Response p99",
		"99th percentile of the response latency (intended start to done) over the rate interval, every op together.",
		"s", steps("green", 0.5, "red"),
		q(s.quantile(0.99, "soakd_response_seconds"), "{{workload}}")))
	b.WithPanel(statPanel("Error ratio",
		"Batches (series) or operations (KV) that failed for good, after retries, over all of them.",
		pct, steps("green", 0.001, "orange", 0.01, "red"),
		q(s.errorRatio(), "{{workload}}")))
	b.WithPanel(statPanel("Dropped in range",
		"Scheduled units never sent in the dashboard's time range (later than MAX_LAG, or cut at shutdown).",
		"short", steps("green", 1.0, "red"),
		q(s.sum(fmt.Sprintf("increase(%s[$__range])", s.vec("soakd_dropped_total"))), "{{workload}}")))
	b.WithPanel(statPanel("Targets ready",
		"Share of the workload's processes whose target is prepared and answers its ping (/readyz).",
		pct, steps("red", 1.0, "green"),
		q(s.sum(s.vec("soakd_ready"))+" / "+fmt.Sprintf("count by (%s) (%s)", s.by, s.vec("soakd_ready")), "{{workload}}")))
	b.WithPanel(statPanel("Uptime",
		"Time since the youngest soakd process of the job started: a restart shows here.",
		"s", nil,
		q(fmt.Sprintf(`min by (job) (time() - %s)`, ps.vec("process_start_time_seconds")), "{{job}}")))

	b.WithRow(dashboard.NewRowBuilder("Rate"))
	b.WithPanel(timeSeries("Target vs achieved rate",
		"Target rate (summed over shards) against what the targets acknowledged: rows/s for series workloads, operations/s for KV.",
		"short", 12,
		q(s.target(), "{{workload}} target"),
		q(s.achieved(), "{{workload}} achieved")))
	b.WithPanel(rightAxis(timeSeries("Rows/s and values/s",
		"Rows and field values acknowledged per second (series workloads), and payload bytes sent.",
		"short", 12,
		q(s.rate("soakd_rows_total"), "{{workload}} rows/s"),
		q(s.rate("soakd_values_total"), "{{workload}} values/s"),
		q(s.rate("soakd_bytes_total"), "{{workload}} bytes/s")), "bytes/s", "Bps"))
	b.WithPanel(timeSeries("Operations/s by op",
		"Acknowledged batches (series: op write) and operations (KV: read, update, insert, scan, rmw) per second.",
		"short", 24,
		q(fmt.Sprintf("sum by (%s, op) (rate(%s[%s]))", s.by, s.vec("soakd_ops_total", `result="ok"`), s.win), "{{workload}} {{op}}")))

	b.WithRow(dashboard.NewRowBuilder("Latency"))
	for _, h := range []struct{ metric, title, desc string }{
		{"soakd_response_seconds", "Response latency (intended start → done)",
			"What users feel: from when the request should have started (open loop, no coordinated omission) to done."},
		{"soakd_service_seconds", "Service latency (send → done)", "What the target took: from the actual send to done."},
	} {
		var qs []query
		for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
			qs = append(qs, q(s.quantile(p, h.metric, "op"), fmt.Sprintf("{{workload}} {{op}} p%g", p*100)))
		}
		b.WithPanel(timeSeries(h.title, h.desc+" p50, p90, p99, p99.9 per op.", "s", 12, qs...))
	}
	var dqs []query
	for _, p := range []float64{0.5, 0.99, 0.999} {
		dqs = append(dqs, q(s.quantile(p, "soakd_dispatch_delay_seconds"), fmt.Sprintf("{{workload}} p%g", p*100)))
	}
	b.WithPanel(timeSeries("Dispatch delay (intended start → send)",
		"Response minus service latency: time a unit waited for a free worker plus soakd's own lateness. "+
			"Growing while the service latency is flat: not enough workers; high with idle workers: soakd itself is late. p50, p99, p99.9.",
		"s", 24, dqs...))
	b.WithRow(dashboard.NewRowBuilder("Latency heatmaps: $workload").Repeat("workload"))
	b.WithPanel(heatmapPanel("Response latency heatmap ($workload)",
		"The native histogram of the response latency: how many requests took how long, over time.",
		q(s.heatmap("soakd_response_seconds"), "{{workload}}")))
	b.WithPanel(heatmapPanel("Service latency heatmap ($workload)",
		"The native histogram of the service latency.",
		q(s.heatmap("soakd_service_seconds"), "{{workload}}")))

	b.WithRow(dashboard.NewRowBuilder("Failures and back-pressure"))
	b.WithPanel(timeSeries("Errors by class",
		"Failed write attempts per second by class (timeout, connection, rejected, server, other), retries included; and units that failed for good.",
		"short", 12,
		q(fmt.Sprintf("sum by (%s, class) (rate(%s[%s]))", s.by, s.vec("soakd_errors_total"), s.win), "{{workload}} {{class}}"),
		q(s.rate("soakd_failed_total"), "{{workload}} failed units/s")))
	b.WithPanel(rightAxis(timeSeries("Dropped work and schedule lag",
		"Units dropped per second (later than MAX_LAG), and how far behind its schedule the furthest-behind process is.",
		"short", 12,
		q(s.rate("soakd_dropped_total"), "{{workload}} dropped/s"),
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_schedule_lag_seconds")), "{{workload}} lag")), "lag$", "s"))
	b.WithPanel(rightAxis(timeSeries("In flight vs workers",
		"Writes in flight against configured workers: all busy means the target, not the schedule, sets the pace. Units in flight (queued or being written) on the right.",
		"short", 24,
		q(s.sum(s.vec("soakd_inflight")), "{{workload}} in flight"),
		q(s.sum(s.vec("soakd_workers")), "{{workload}} workers"),
		q(s.sum(s.vec("soakd_inflight_units")), "{{workload}} units in flight")), "units in flight$", "short"))
	b.WithPanel(rightAxis(timeSeries("Read-back verification (VERIFY)",
		"Acknowledged rows or records read back per second and compared with what the seed says they hold (workloads with VERIFY set), "+
			"and the checks that failed by kind: missing (not stored), mismatch (other values), duplicate (stored more than once). "+
			"Any failure is acknowledged data lost or corrupted; soakd verify after the run lists it exactly. "+
			"Skipped: picked but not checked (the checker was behind, a read failed).",
		"short", 24,
		q(s.rate("soakd_verify_checked_total"), "{{workload}} checked/s"),
		q(s.rate("soakd_verify_skipped_total"), "{{workload}} skipped/s"),
		q(fmt.Sprintf("sum by (%s, kind) (rate(%s[%s]))", s.by, s.vec("soakd_verify_failures_total"), s.win), "{{workload}} {{kind}}/s")),
		"(missing|mismatch|duplicate)/s$", "short"))

	// Every shard of a workload reads the same target: its figures are
	// taken once (max), not added up over the shards.
	b.WithRow(dashboard.NewRowBuilder("Target"))
	b.WithPanel(timeSeries("Target memory by kind",
		"The target's own memory, as its sink reads it every WATCH_INTERVAL (e.g. Redis used and rss), and process_rss, the resident set of the process WATCH_PROCESS names. "+
			"Rising over hours while the data set does not: a leak, or a cache without bound (SoakdTargetMemoryGrowing).",
		"bytes", 12,
		q(fmt.Sprintf("max by (%s, kind) (%s)", s.by, s.vec("soakd_target_memory_bytes")), "{{workload}} {{kind}}")))
	b.WithPanel(timeSeries("Target storage by kind",
		"The storage soakd's data takes on the target by kind (e.g. PostgreSQL table, index, wal, database; Redis aof, rdb), as its sink reads it.",
		"bytes", 12,
		q(fmt.Sprintf("max by (%s, kind) (%s)", s.by, s.vec("soakd_target_storage_bytes")), "{{workload}} {{kind}}")))
	b.WithPanel(timeSeries("Target CPU",
		"Cores the target kept busy: the rate of its own CPU time (user + system), or its watched process's. A restarted target starts again from 0, which rate() takes as a reset.",
		"short", 12,
		q(fmt.Sprintf("max by (%s) (rate(%s[%s]))", s.by, s.vec("soakd_target_cpu_seconds_total"), s.win), "{{workload}} cores")))
	b.WithPanel(timeSeries("Target storage per value",
		"The target's storage, summed over kinds (database, wal, compressed and uncompressed aside), per field value (series) or record (KV) acknowledged. "+
			"Each shard divides the whole storage by its own share, so the shares' inverses add up to the whole's: 1 / Σ(1 / per shard).",
		"bytes", 12,
		q(fmt.Sprintf("1 / sum by (%s) (1 / %s)", s.by, s.vec("soakd_target_storage_bytes_per_value")), "{{workload}}")))
	b.WithPanel(timeSeries("Target keys and active series",
		"What the target holds, as its sink reads it: Redis' keys over all its databases, Prometheus' head series or VictoriaMetrics' series written in the current hour. "+
			"Active series rising while the devices do not: churn, or labels without bound.",
		"short", 12,
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_target_keys")), "{{workload}} keys"),
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_target_active_series")), "{{workload}} active series")))
	b.WithPanel(rightAxis(timeSeries("Target evictions, discarded values and memory fragmentation",
		"Keys the target evicts per second to stay under its memory limit (Redis evicted_keys: a KV workload's reads then miss), "+
			"values it answered as written but discards (VictoriaMetrics vm_rows_ignored_total: timestamps outside its retention; acknowledged, not held), "+
			"and its memory fragmentation ratio on the right (Redis mem_fragmentation_ratio: the RSS over what the allocator holds).",
		"short", 12,
		q(fmt.Sprintf("max by (%s) (rate(%s[%s]))", s.by, s.vec("soakd_target_evictions_total"), s.win), "{{workload}} evictions/s"),
		q(fmt.Sprintf("max by (%s) (rate(%s[%s]))", s.by, s.vec("soakd_target_discarded_total"), s.win), "{{workload}} discarded/s"),
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_target_memory_fragmentation_ratio")), "{{workload}} fragmentation")),
		"fragmentation$", "short"))

	b.WithRow(dashboard.NewRowBuilder("soakd processes"))
	b.WithPanel(timeSeries("CPU",
		"CPU used by each soakd process against its GOMAXPROCS (the cores Go may use, cgroup limits included): near the limit, the generator is the bottleneck.",
		"short", 6,
		q(ps.rate("process_cpu_seconds_total"), "{{instance}} cores used"),
		q(ps.sum(ps.vec("go_sched_gomaxprocs_threads")), "{{instance}} GOMAXPROCS")))
	b.WithPanel(timeSeries("Memory",
		"Resident memory and Go heap in use per soakd process: growth over hours is a leak.",
		"bytes", 6,
		q(ps.sum(ps.vec("process_resident_memory_bytes")), "{{instance}} resident"),
		q(ps.sum(ps.vec("go_memstats_heap_inuse_bytes")), "{{instance}} heap in use")))
	b.WithPanel(timeSeries("GC",
		"Share of time each soakd process spent in stop-the-world GC pauses.",
		pct, 6,
		q(ps.rate("go_gc_duration_seconds_sum"), "{{instance}}")))
	b.WithPanel(timeSeries("Goroutines",
		"Goroutines per soakd process: steady in a healthy run.",
		"short", 6,
		q(ps.sum(ps.vec("go_goroutines")), "{{instance}}")))
	return build(b)
}

// controlAnnotation marks changes made through POST /control (a new rate,
// pause, resume) on every time series panel.
func controlAnnotation() *dashboard.AnnotationQueryBuilder {
	s := panelScope
	return dashboard.NewAnnotationQueryBuilder().
		Name("Rate changes (/control)").
		Datasource(datasource()).
		Enable(true).
		IconColor("orange").
		Expr(controlAnnotationExpr(s)).
		Step("$__rate_interval").
		TitleFormat("{{workload}}: {{action}}").
		TextFormat("changed through /control").
		TagKeys("workload,action").
		Hide(false).
		BuiltIn(0)
}

// controlAnnotationExpr is non-zero where a change was made through
// /control within the window.
func controlAnnotationExpr(s scope) string {
	return fmt.Sprintf("sum by (%s, action) (changes(%s[%s])) > 0", s.by, s.vec("soakd_control_total"), s.win)
}
