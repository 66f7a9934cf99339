package capacity

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
)

// WriteMarkdown writes the search as a markdown report: the environment,
// the settings, every step with its verdict and the knee.
func (r *Result) WriteMarkdown(out io.Writer) {
	cc := r.Settings
	fmt.Fprintf(out, "# Capacity of workload %s\n\n", r.Workload)
	switch {
	case r.Found && r.Stopped:
		// A lower bound: read as "Knee:", a stopped search would size the
		// target by where it was cut off.
		fmt.Fprintf(out, "**The knee is at least %s units/s**, the highest rate whose response p99 stayed within %s so far",
			pace.FormatRate(r.Knee), cc.SLOP99)
	case r.Found && !r.TargetCapacity():
		// Not the target's capacity: saying "knee" would have a reader
		// size the target from soakd's own limit.
		fmt.Fprintf(out, "**No knee of the target: soakd's %s limited the search at %s units/s**, the highest rate whose response p99 stayed within %s",
			map[string]string{report.LimitWorkers: "workers", report.LimitSoakd: "own CPU or scheduling"}[r.LimitedBy], pace.FormatRate(r.Knee), cc.SLOP99)
	case r.Found:
		fmt.Fprintf(out, "**Knee: %s units/s**: the highest rate whose response p99 stayed within %s", pace.FormatRate(r.Knee), cc.SLOP99)
	case len(r.Steps) == 0:
		// Stopped during the warm-up, or before the run phase began:
		// "no step met the SLO" read as the target failing it.
		fmt.Fprintf(out, "**No knee: no step was judged** (the SLO: response p99 ≤ %s", cc.SLOP99)
	default:
		fmt.Fprintf(out, "**No knee**: no step met the SLO (response p99 ≤ %s", cc.SLOP99)
	}
	if cc.SLOOp != "" {
		fmt.Fprintf(out, " (op %s)", cc.SLOOp)
	}
	fmt.Fprintf(out, ", errors ≤ %.3g%%, achieved ≥ 95%% of target, dropped ≤ 0.1%%", 100*float64(cc.SLOErrors))
	if r.Found {
		fmt.Fprint(out, ".")
	} else {
		fmt.Fprint(out, ").")
	}
	fmt.Fprintf(out, " %s.\n\n", capitalize(r.Outcome))
	if r.Advice != "" {
		fmt.Fprintf(out, "**%s.**\n\n", capitalize(r.Advice))
	} else if r.LimitedBy == report.LimitTarget {
		fmt.Fprint(out, "The steps above the knee failed on the target: its service latency rose, or it failed requests.\n\n")
	}

	fmt.Fprint(out, "## Environment\n\n| | |\n|---|---|\n")
	for _, row := range r.Environment.Rows() {
		fmt.Fprintf(out, "| %s | %s |\n", row[0], row[1])
	}
	for w, v := range r.Servers {
		fmt.Fprintf(out, "| target of %s | %s |\n", w, strings.ReplaceAll(v, "|", "/"))
	}
	fmt.Fprintf(out, "\nSearch: start %s/s, step %s, warm-up %s, %s to settle then %s judged per step, at most %s/s, %d refining steps.\n",
		pace.FormatRate(cc.Start), cc.Step.String(), cc.Warmup, cc.Settle, cc.Hold, pace.FormatRate(cc.Max), cc.Refine)
	if len(r.Run) > 0 {
		fmt.Fprintf(out, "\nSettings: `%s`\n", strings.Join(r.Run, "` `"))
	}

	tc := r.targetColumns()
	fmt.Fprint(out, "\n## Steps\n\nEach step begins once the backlog of the one before has drained (the rate paused; the drain column says how long it took).")
	if tc.Any() {
		fmt.Fprint(out, " The target's memory is the target watch's latest reading at the step's end, its CPU the cores it used over the judged part.")
	}
	if r.Shards > 1 {
		// Otherwise a passing step reads as half its target achieved.
		fmt.Fprintf(out, " Under SHARD (%d processes), target/s is the rate of all %d together and achieved/s this process's alone: a step is judged against its share, target/s ÷ %d.",
			r.Shards, r.Shards, r.Shards)
	}
	head, align := tc.MarkdownHeader()
	fmt.Fprintf(out, "\n\n| # | kind | target/s | drain | achieved/s | p50 | p99 | service p99 | dispatch p99 | workers all busy | errors | dropped | verdict |%s", head)
	fmt.Fprintf(out, "\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|%s\n", align)
	for _, s := range r.Steps {
		verdict := "pass"
		if !s.Pass {
			verdict = "fail: " + strings.Join(s.Reasons, "; ")
			if s.Bottleneck != "" {
				verdict += "; bottleneck: " + s.Bottleneck + " (" + s.Diagnosis + ")"
			}
		}
		drain := pace.FormatSeconds(s.DrainSeconds)
		if !s.Drained {
			drain += " (not drained)"
		}
		fmt.Fprintf(out, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f%% | %.3g%% | %.3g%% | %s |", s.Index, s.Kind, pace.FormatRate(s.Target), drain, pace.FormatRate(s.Achieved),
			pace.FormatSeconds(s.Response.P50), pace.FormatSeconds(s.Response.P99), pace.FormatSeconds(s.Service.P99), pace.FormatSeconds(s.Dispatch.P99), 100*s.WorkersBusy,
			100*s.ErrorRatio, 100*s.DropRatio, verdict)
		fmt.Fprintf(out, "%s\n", tc.MarkdownCells(s.TargetMemoryBytes, s.TargetCPUCores))
	}
}

// targetColumns are the columns of the target watch's figures the steps
// have.
func (r *Result) targetColumns() report.TargetColumns {
	return report.TargetColumnsOf(r.Steps, func(s *Step) (*float64, *float64) { return s.TargetMemoryBytes, s.TargetCPUCores })
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteCSV writes one row per step.
func (r *Result) WriteCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	tc := r.targetColumns()
	head := []string{"index", "kind", "target_rate", "achieved_rate", "seconds", "p50_seconds", "p90_seconds", "p99_seconds",
		"p99_9_seconds", "max_seconds", "service_p50_seconds", "service_p99_seconds", "error_ratio", "dropped_ratio", "pass", "reasons",
		"drain_seconds", "dispatch_p99_seconds", "workers_busy_share", "cpu_share", "bottleneck", "diagnosis"}
	_ = w.Write(append(head, tc.CSVHeader()...))
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, s := range r.Steps {
		row := []string{strconv.Itoa(s.Index), s.Kind, f(s.Target), f(s.Achieved), f(s.Seconds), f(s.Response.P50), f(s.Response.P90),
			f(s.Response.P99), f(s.Response.P999), f(s.Response.Max), f(s.Service.P50), f(s.Service.P99), f(s.ErrorRatio), f(s.DropRatio),
			strconv.FormatBool(s.Pass), strings.Join(s.Reasons, "; "),
			f(s.DrainSeconds), f(s.Dispatch.P99), f(s.WorkersBusy), f(s.CPU), s.Bottleneck, s.Diagnosis}
		_ = w.Write(append(row, tc.CSVCells(s.TargetMemoryBytes, s.TargetCPUCores)...))
	}
	w.Flush()
	return w.Error()
}

// WriteJSON writes the whole result, indented.
func (r *Result) WriteJSON(out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
