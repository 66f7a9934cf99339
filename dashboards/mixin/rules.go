package mixin

import (
	"fmt"
)

// Alert thresholds. A user with other SLOs edits the generated rule file
// (or these and regenerates).
const (
	// RateShortfall: achieved below this share of the target for 5 m.
	RateShortfall = 0.95
	// ErrorRatioMax: more than this share of batches or operations
	// failing for good, after retries, for 5 m.
	ErrorRatioMax = 0.01
	// ResponseP99SLO: the response latency p99 of an op above this many
	// seconds for 5 m.
	ResponseP99SLO = 0.5
	// CPUSaturation: a soakd process using more than this share of its
	// GOMAXPROCS for 10 m is the bottleneck of its own test.
	CPUSaturation = 0.9
	// TargetMemoryGrowth: a target's memory (of one kind) grew by more
	// than this share of its level over TargetMemoryWindow, and rose
	// over every half hour of the TargetMemoryWindow before the alert
	// fires: steady growth, not a warm-up that levels off or a spike.
	TargetMemoryGrowth = 0.1
	TargetMemoryWindow = "2h"
)

// Rule is one Prometheus alerting rule.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// RuleGroup is a group of rules in a Prometheus rule file.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// RuleGroups are soakd's alert rules: each watches every soakd Prometheus
// scrapes, per job and workload (summed over the processes of a sharded
// run) or per process.
func RuleGroups() []RuleGroup {
	r := ruleScope
	warn := map[string]string{"severity": "warning"}
	return []RuleGroup{{Name: "soakd", Rules: []Rule{
		{
			Alert: "SoakdBelowTargetRate",
			Expr:  fmt.Sprintf("(%s) < %g * (%s)", r.achieved(), RateShortfall, r.targetAvg()),
			For:   "5m", Labels: warn,
			Annotations: map[string]string{
				"summary":     fmt.Sprintf("soakd workload {{ $labels.workload }} achieves less than %g %% of its target rate", RateShortfall*100),
				"description": "Job {{ $labels.job }}, workload {{ $labels.workload }}: {{ $value | humanize }} units/s acknowledged over 5m, below the target. The target database (or soakd, see SoakdCPUSaturated) cannot keep up.",
			},
		},
		{
			Alert: "SoakdErrorRatioHigh",
			Expr:  fmt.Sprintf("(%s) > %g", r.errorRatio(), ErrorRatioMax),
			For:   "5m", Labels: warn,
			Annotations: map[string]string{
				"summary":     fmt.Sprintf("soakd workload {{ $labels.workload }} fails more than %g %% of its writes", ErrorRatioMax*100),
				"description": "Job {{ $labels.job }}, workload {{ $labels.workload }}: {{ $value | humanizePercentage }} of batches or operations failed for good over 5m (soakd_errors_total says why).",
			},
		},
		{
			Alert: "SoakdResponseP99AboveSLO",
			Expr:  fmt.Sprintf("(%s) > %g", r.quantile(0.99, "soakd_response_seconds", "op"), ResponseP99SLO),
			For:   "5m", Labels: warn,
			Annotations: map[string]string{
				"summary":     fmt.Sprintf("soakd workload {{ $labels.workload }} %s p99 above %gs", "{{ $labels.op }}", ResponseP99SLO),
				"description": "Job {{ $labels.job }}, workload {{ $labels.workload }}, op {{ $labels.op }}: response p99 (intended start to done) is {{ $value | humanizeDuration }} over 5m.",
			},
		},
		{
			Alert: "SoakdDroppingWork",
			Expr:  fmt.Sprintf("sum by (%s) (increase(soakd_dropped_total[%s])) > 0", r.by, r.win),
			For:   "1m", Labels: warn,
			Annotations: map[string]string{
				"summary":     "soakd workload {{ $labels.workload }} drops scheduled work",
				"description": "Job {{ $labels.job }}, workload {{ $labels.workload }}: {{ $value | humanize }} units dropped over 5m, later than MAX_LAG: the run no longer offers its stated rate.",
			},
		},
		{
			Alert:  "SoakdVerifyFailures",
			Expr:   fmt.Sprintf("sum by (%s, kind) (increase(soakd_verify_failures_total[%s])) > 0", r.by, r.win),
			Labels: map[string]string{"severity": "critical"},
			Annotations: map[string]string{
				"summary":     "soakd workload {{ $labels.workload }} read back acknowledged data {{ $labels.kind }}",
				"description": "Job {{ $labels.job }}, workload {{ $labels.workload }}: {{ $value | humanize }} acknowledged units read back {{ $labels.kind }} over 5m (VERIFY): the target lost, changed or repeated data it acknowledged. soakd verify after the run lists exactly what.",
			},
		},
		{
			Alert: "SoakdCPUSaturated",
			Expr: fmt.Sprintf("(sum by (job, instance) (rate(process_cpu_seconds_total[%s])) / sum by (job, instance) (go_sched_gomaxprocs_threads) > %g) and on (job, instance) soakd_build_info",
				r.win, CPUSaturation),
			For: "10m", Labels: warn,
			Annotations: map[string]string{
				"summary":     "soakd {{ $labels.instance }} is CPU-bound: the generator, not the target, limits the test",
				"description": "Job {{ $labels.job }}, instance {{ $labels.instance }} used {{ $value | humanizePercentage }} of its GOMAXPROCS over 5m. Give it more CPU or shard the run.",
			},
		},
		{
			// Every shard of a workload reads the same target: max takes
			// its figure once. The share is of the level now, so a target
			// that doubles from little alerts as soon as one that grows
			// by a tenth from much.
			Alert: "SoakdTargetMemoryGrowing",
			Expr: fmt.Sprintf("(max by (%[1]s, kind) (delta(soakd_target_memory_bytes[%[2]s])) / max by (%[1]s, kind) (soakd_target_memory_bytes) > %[3]g)"+
				" and (max by (%[1]s, kind) (deriv(soakd_target_memory_bytes[30m])) > 0)",
				r.by, TargetMemoryWindow, TargetMemoryGrowth),
			For: TargetMemoryWindow, Labels: warn,
			Annotations: map[string]string{
				"summary": fmt.Sprintf("the target of soakd workload {{ $labels.workload }}: memory {{ $labels.kind }} grows steadily (more than %g %% over %s)",
					TargetMemoryGrowth*100, TargetMemoryWindow),
				"description": fmt.Sprintf("Job {{ $labels.job }}, workload {{ $labels.workload }}: the target's memory {{ $labels.kind }} grew by {{ $value | humanizePercentage }} of its level over %[1]s, and rose over every half hour of the %[1]s before (soakd_target_memory_bytes). A leak, or a cache or buffer without bound: the run's end summary gives its first, last and peak.",
					TargetMemoryWindow),
			},
		},
		{
			Alert: "SoakdTargetNotReady",
			Expr:  "soakd_ready == 0",
			For:   "5m", Labels: warn,
			Annotations: map[string]string{
				"summary":     "soakd workload {{ $labels.workload }}: target not ready",
				"description": "Job {{ $labels.job }}, instance {{ $labels.instance }}, workload {{ $labels.workload }}: the target is not prepared or does not answer its ping (/readyz says why).",
			},
		},
		{
			Alert:  "SoakdDown",
			Expr:   "up == 0 and on (job, instance) max_over_time(soakd_build_info[1h])",
			For:    "2m",
			Labels: map[string]string{"severity": "critical"},
			Annotations: map[string]string{
				"summary":     "soakd {{ $labels.instance }} is not scraped",
				"description": "Job {{ $labels.job }}, instance {{ $labels.instance }} ran soakd within the last hour and its scrape fails now.",
			},
		},
	}}}
}
