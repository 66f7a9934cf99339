package mixin

import (
	"fmt"
	"strings"
)

// scope is where a query runs: its label matchers, the labels it keeps
// and its rate window. Dashboards filter by their variables and keep
// workload; rules see everything and keep job and workload. Queries always
// aggregate with sum by (or min/max where adding makes no sense), so the
// shards of a sharded run (many soakd processes, one workload name) add up.
type scope struct {
	sel string // label matchers without braces, e.g. job=~"$job"
	by  string // grouping labels, e.g. workload
	win string // range of rate() and friends, e.g. $__rate_interval or 5m
}

var (
	// panelScope is a dashboard panel's: the job and workload variables,
	// Grafana's rate interval.
	panelScope = scope{sel: `job=~"$job",workload=~"$workload"`, by: "workload", win: "$__rate_interval"}
	// ruleScope is an alert rule's: every soakd, per job and workload.
	ruleScope = scope{by: "job, workload", win: "5m"}
	// processScope is a dashboard's per-process panels: soakd itself.
	processScope = scope{sel: `job=~"$job"`, by: "instance", win: "$__rate_interval"}
)

// vec is metric with the scope's matchers and extra ones.
func (s scope) vec(metric string, extra ...string) string {
	var m []string
	if s.sel != "" {
		m = append(m, s.sel)
	}
	m = append(m, extra...)
	if len(m) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(m, ",") + "}"
}

// sum is sum by (the scope's labels) of expr.
func (s scope) sum(expr string) string { return fmt.Sprintf("sum by (%s) (%s)", s.by, expr) }

// rate is the per-second rate of a counter, summed.
func (s scope) rate(metric string, extra ...string) string {
	return s.sum(fmt.Sprintf("rate(%s[%s])", s.vec(metric, extra...), s.win))
}

// target is the target rate summed over shards (each runs 1/N of it):
// rows/s or ops/s, 0 in max mode and while paused.
func (s scope) target() string { return s.sum(s.vec("soakd_target_rate")) }

// targetAvg is the target rate averaged over the window, what the achieved
// rate over the same window should be, also along a ramp.
func (s scope) targetAvg() string {
	return s.sum(fmt.Sprintf("avg_over_time(%s[%s])", s.vec("soakd_target_rate"), s.win))
}

// achieved is the acknowledged units per second in the unit of the target
// rate: operations for KV workloads (whose soakd_rows_total stays 0),
// rows for series workloads (whose only op, write, counts batches).
func (s scope) achieved() string {
	return s.rate("soakd_ops_total", `result="ok"`, `op!="write"`) + " or " + s.rate("soakd_rows_total")
}

// errorRatio is the share of batches (series) or operations (KV) that
// failed for good, after retries.
func (s scope) errorRatio() string {
	return s.rate("soakd_ops_total", `result="error"`) + " / " + s.rate("soakd_ops_total")
}

// quantile is the q-quantile of histogram metric per the scope's labels
// and extra ones: from the native histogram, or from the classic buckets
// on a Prometheus that does not ingest native histograms.
func (s scope) quantile(q float64, metric string, extra ...string) string {
	by := strings.Join(append([]string{s.by}, extra...), ", ")
	native := fmt.Sprintf("histogram_quantile(%g, sum by (%s) (rate(%s[%s])))", q, by, s.vec(metric), s.win)
	classic := fmt.Sprintf("histogram_quantile(%g, sum by (%s, le) (rate(%s[%s])))", q, by, s.vec(metric+"_bucket"), s.win)
	return native + " or " + classic
}

// heatmap is the rate of a native histogram's observations, one histogram
// per the scope's labels: what Grafana's heatmap panel draws.
func (s scope) heatmap(metric string) string {
	return s.sum(fmt.Sprintf("rate(%s[%s])", s.vec(metric), s.win))
}
