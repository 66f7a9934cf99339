package capacity

import (
	"fmt"
	"math"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
)

// A step passes when, besides the SLO, at least minAchieved of its target
// rate was acknowledged and at most maxDropped of its scheduled units was
// dropped.
const (
	minAchieved = 0.95
	maxDropped  = 0.001
)

// Step is one step of the search.
type Step struct {
	Index  int     `json:"index"`
	Kind   string  `json:"kind"` // step, recheck or refine
	Target float64 `json:"target_rate"`
	// Achieved is the rate acknowledged during the judged part.
	Achieved   float64          `json:"achieved_rate"`
	Seconds    float64          `json:"seconds"`
	Response   report.Quantiles `json:"response_seconds"` // of the op judged (SLO_OP), or of every op
	Service    report.Quantiles `json:"service_seconds"`
	ErrorRatio float64          `json:"error_ratio"`   // failed units / (acknowledged + failed)
	DropRatio  float64          `json:"dropped_ratio"` // dropped / scheduled
	// Dispatch is the delay from each batch's intended start to its send
	// (every op): soakd's own queue.
	Dispatch report.Quantiles `json:"dispatch_seconds"`
	// DrainSeconds is how long the backlog left by the step before took to
	// drain, the rate paused, before this step's SETTLE began: each step
	// starts clean, or a step just under the knee would fail on the queue
	// of the failing step before it.
	DrainSeconds float64 `json:"drain_seconds"`
	// Drained is false when the backlog had not drained within the limit
	// (MAX_LAG + TIMEOUT + HOLD) and the step started anyway.
	Drained bool `json:"drained"`
	// WorkersBusy is the share of the judged part during which every
	// worker was inside a write; CPU soakd's CPU time over the same part,
	// as a share of the cores it may use (GOMAXPROCS); -1 when unknown.
	WorkersBusy float64 `json:"workers_busy_share"`
	CPU         float64 `json:"cpu_share"`
	// TargetMemoryBytes is the target's memory at the end of the judged
	// part (the target watch's latest reading) and TargetCPUCores the
	// cores it used over that part (its CPU time over the time between
	// the readings); nil when not known (no watch, or no reading).
	TargetMemoryBytes *float64 `json:"target_memory_bytes,omitempty"`
	TargetCPUCores    *float64 `json:"target_cpu_cores,omitempty"`
	Pass              bool     `json:"pass"`
	// Reasons say which SLO each failing step broke.
	Reasons []string `json:"reasons,omitempty"`
	// Bottleneck names what limited a failing step: "target" (its service
	// latency rose), "workers" (soakd's workers were all busy while the
	// service latency stayed flat) or "soakd" (soakd sent late with idle
	// workers, or its CPU was saturated); Diagnosis says it in words.
	Bottleneck string `json:"bottleneck,omitempty"`
	Diagnosis  string `json:"diagnosis,omitempty"`
}

// Result is the outcome of a capacity search.
type Result struct {
	Workload    string       `json:"workload"`
	Environment sysinfo.Info `json:"environment"`
	// Servers are the targets' versions, by workload, where a sink can
	// ask (SELECT version(), INFO server, InfluxDB's ping).
	Servers  map[string]string     `json:"servers,omitempty"`
	Settings config.CapacityConfig `json:"settings"`
	// Run lists every setting of the run (secrets hidden) as VAR=value.
	Run   []string `json:"run_settings"`
	Steps []Step   `json:"steps"`
	// Knee is the highest rate that passed; 0 with Found false when none
	// did.
	Knee  float64 `json:"knee_rate"`
	Found bool    `json:"found"`
	// LimitedBy is the bottleneck of the lowest failing step above the
	// knee. Unless it is "target", the knee is soakd's own limit, not the
	// target's capacity, and Advice names the setting to raise.
	LimitedBy string `json:"limited_by,omitempty"`
	Advice    string `json:"advice,omitempty"`
	// Outcome says how the search ended, in words.
	Outcome string `json:"outcome"`
	// Shards is the searched workload's SHARD count N: a step's Target
	// is the rate over the N processes, its Achieved this process's,
	// judged against Target/N.
	Shards int `json:"shards,omitempty"`
	// Stopped says the search was stopped before it ended (a signal,
	// SOAKD_DURATION, the searched workload's data running out): Knee is
	// only a lower bound of the knee.
	Stopped bool `json:"stopped,omitempty"`
}

// TargetCapacity reports whether the knee measures the target: found, and
// not bounded by soakd's workers or soakd itself.
func (r *Result) TargetCapacity() bool {
	return r.Found && (r.LimitedBy == "" || r.LimitedBy == report.LimitTarget)
}

// search steps the rate up from START until a step fails twice in a row
// (one failure among passing steps is judged again: it may be noise), then
// bisects REFINE times between the last passing and the failing rate.
// step runs one step and says whether it passed, and false as its second
// result when the search must stop (the run is ending). It returns the
// highest rate that passed.
func search(cc config.CapacityConfig, limit float64, step func(rate float64, kind string) (pass, ok bool)) (knee float64, found bool, outcome string) {
	const stopped = "stopped before the search ended"
	var firstFail float64
	for r := cc.Start; ; {
		pass, ok := step(r, "step")
		if ok && !pass {
			pass, ok = step(r, "recheck")
		}
		if !ok {
			return knee, found, stopped
		}
		if !pass {
			firstFail = r
			break
		}
		knee, found = r, true
		if r >= limit {
			return knee, true, fmt.Sprintf("every step passed up to the highest rate allowed (%s/s): the knee is at least that", pace.FormatRate(r))
		}
		r = math.Min(cc.Step.Next(r), limit)
	}
	if !found {
		return 0, false, fmt.Sprintf("the first step (%s/s) failed twice: the target does not meet the SLO even at CAPACITY_START", pace.FormatRate(cc.Start))
	}
	lo, hi := knee, firstFail
	for i := 0; i < cc.Refine; i++ {
		mid := (lo + hi) / 2
		pass, ok := step(mid, "refine")
		if !ok {
			return lo, true, "stopped while refining"
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true, fmt.Sprintf("the knee is between %s/s (passed) and %s/s (failed)", pace.FormatRate(lo), pace.FormatRate(hi))
}

// Thresholds of diagnose: a median service time this many times the
// baseline is the target slowing down; workers all busy for this share of
// a step are the workers' limit; soakd using this share of its cores is
// CPU-bound.
const (
	serviceRise = 2.0
	busyLimit   = 0.5
	cpuLimit    = 0.9
)

// diagnose names the bottleneck of a failing step, in this order: the
// target when its service latency rose (or it failed requests), soakd
// when its CPU was saturated, the workers when every one was busy while
// the service latency stayed flat, and soakd otherwise (it sent late with
// workers idle: its scheduler or runtime fell behind).
func diagnose(st *Step, baseService float64, workers int, sloErrors config.Ratio) (string, string) {
	svc := st.Service.P99
	switch {
	case st.ErrorRatio > 0 && st.Response.Count == 0:
		return report.LimitTarget, "the target failed every request"
	case st.Service.Count == 0 && st.Response.Count == 0 && st.WorkersBusy > 0:
		// Writes sent and none answered, not even with an error (a
		// target that hangs, TIMEOUT longer than HOLD): the workers were
		// busy waiting on the target.
		return report.LimitTarget, fmt.Sprintf("the target answered no write during the step while the workers waited on it (busy %.0f%% of the time)",
			100*st.WorkersBusy)
	case st.Service.Count > 0 && baseService > 0 && st.Service.P50 > serviceRise*baseService:
		return report.LimitTarget, fmt.Sprintf("the target's median service time rose from %s to %s (p99 %s)",
			pace.FormatSeconds(baseService), pace.FormatSeconds(st.Service.P50), pace.FormatSeconds(svc))
	case st.ErrorRatio > float64(sloErrors):
		return report.LimitTarget, fmt.Sprintf("the target failed %.3g%% of units", 100*st.ErrorRatio)
	case st.CPU >= cpuLimit:
		return report.LimitSoakd, fmt.Sprintf("soakd used %.0f%% of its CPU; service p99 stayed %s", 100*st.CPU, pace.FormatSeconds(svc))
	case st.WorkersBusy >= busyLimit:
		return report.LimitWorkers, fmt.Sprintf("all %d workers were busy %.0f%% of the time and dispatch p99 was %s, while service p99 stayed %s",
			workers, 100*st.WorkersBusy, pace.FormatSeconds(st.Dispatch.P99), pace.FormatSeconds(svc))
	}
	return report.LimitSoakd, fmt.Sprintf("soakd sent late (dispatch p99 %s) while its workers were idle %.0f%% of the time and service p99 stayed %s",
		pace.FormatSeconds(st.Dispatch.P99), 100*(1-st.WorkersBusy), pace.FormatSeconds(svc))
}
