package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
)

// WriteMarkdown writes the sweep as a markdown report: environment,
// settings, every point, the best, and the USL fit.
func (r *Result) WriteMarkdown(out io.Writer) {
	if r.Grid() {
		r.writeGridMarkdown(out)
		return
	}
	sc := r.Settings
	fmt.Fprintf(out, "# Sweep of workload %s: WORKERS × %s, closed loop\n\n", r.Workload, r.BatchName)
	for _, p := range r.Points {
		if p.Best {
			fmt.Fprintf(out, "**Best: %d workers, %s %d: %.0f %s/s** (median of %s, min %.0f, max %.0f).\n\n",
				p.Workers, r.BatchName, p.Batch, p.Median, r.Unit, runs(len(p.Rates)), p.Min, p.Max)
		}
	}
	r.writeStopped(out)
	r.writeThresholds(out)
	fmt.Fprint(out, "## Environment\n\n| | |\n|---|---|\n")
	for _, row := range r.Environment.Rows() {
		fmt.Fprintf(out, "| %s | %s |\n", row[0], row[1])
	}
	if r.BuiltinTarget != "" {
		fmt.Fprintf(out, "| target | %s |\n", r.BuiltinTarget)
	}
	fmt.Fprintf(out, "\nEach point: %s%s; runs without a finite data set last %s.\n", runs(sc.Repeats), r.resetNote(), sc.Duration)
	if len(r.Run) > 0 {
		fmt.Fprintf(out, "\nSettings: `%s`\n", strings.Join(r.Run, "` `"))
	}
	tc := r.targetColumns()
	head, align := tc.MarkdownHeader()
	th, thAlign := r.thresholdHeader()
	fmt.Fprintf(out, "\n## Points (%s/s)\n\n| workers | %s | median | min | max | p99 | failed |%s |%s", r.Unit, r.BatchName, th, head)
	fmt.Fprintf(out, "\n|---:|---:|---:|---:|---:|---:|---:|%s---|%s\n", thAlign, align)
	for _, p := range r.Points {
		fmt.Fprintf(out, "| %d | %d | %.0f | %.0f | %.0f | %s | %d |%s %s |", p.Workers, p.Batch, p.Median, p.Min, p.Max,
			pace.FormatSeconds(p.P99), p.Failed, r.thresholdCells(p), notes(p))
		fmt.Fprintf(out, "%s\n", tc.MarkdownCells(p.TargetMemoryBytes, p.TargetCPUCores))
	}
	r.writeLeftOut(out)
	r.writeUSL(out, fmt.Sprintf("%s %d", r.BatchName, r.USL.batch()))
}

// writeStopped says, in a sweep stopped before every point ran, that the
// report holds only the runs made, and which run was cut short.
func (r *Result) writeStopped(out io.Writer) {
	if r.Outcome == "" || r.Outcome == "done" {
		return
	}
	fmt.Fprintf(out, "**Partial: %s.** The report holds the runs made", r.Outcome)
	if r.CutShort != "" {
		fmt.Fprintf(out, "; the last one was cut short (%s)", r.CutShort)
	}
	fmt.Fprint(out, ".\n\n")
}

// batch is the fit's batch size; 0 without a fit.
func (u *USL) batch() int {
	if u == nil {
		return 0
	}
	return u.Batch
}

// writeUSL writes the fit's section, titled with where it was made.
func (r *Result) writeUSL(out io.Writer, where string) {
	if u := r.USL; u != nil {
		fmt.Fprintf(out, "\n## Universal Scalability Law (%s)\n\n", where)
		if u.Lambda > 0 {
			peak := "none (no coherency cost)"
			if !math.IsInf(u.PeakN, 1) {
				peak = fmt.Sprintf("%.1f workers, %.0f %s/s", u.PeakN, u.PeakX, r.RankUnit())
			}
			fmt.Fprintf(out, "X(N) = λN / (1 + σ(N−1) + κN(N−1)) with λ = %.4g %s/s, σ (contention) = %.4g, κ (coherency) = %.4g; R² = %.3f; predicted peak: %s.\n\n",
				u.Lambda, r.RankUnit(), u.Sigma, u.Kappa, u.R2, peak)
		}
		if u.Poor {
			fmt.Fprint(out, "**Poor fit**: ")
		}
		fmt.Fprintf(out, "%s.\n", capitalize(u.Note))
	}
}

// WriteCSV writes one row per run.
func (r *Result) WriteCSV(out io.Writer) error {
	if r.Grid() {
		return r.writeGridCSV(out)
	}
	w := csv.NewWriter(out)
	tc := r.targetColumns()
	head := []string{"workers", strings.ToLower(r.BatchName), "run", "units_per_second", "median", "min", "max", "p99_seconds", "best", "throughput_falls"}
	head = append(head, r.thresholdCSVHeader()...)
	_ = w.Write(append(head, tc.CSVHeader()...))
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range r.Points {
		for i, x := range p.Rates {
			row := []string{strconv.Itoa(p.Workers), strconv.Itoa(p.Batch), strconv.Itoa(i + 1), f(x), f(p.Median), f(p.Min), f(p.Max),
				f(p.P99), strconv.FormatBool(p.Best), strconv.FormatBool(p.Falls)}
			var c RunCounts
			if i < len(p.Runs) {
				c = p.Runs[i]
			}
			row = append(row, r.thresholdCSVCells(c)...)
			// The target's figures are the point's, on each of its
			// runs' rows.
			_ = w.Write(append(row, tc.CSVCells(p.TargetMemoryBytes, p.TargetCPUCores)...))
		}
	}
	w.Flush()
	return w.Error()
}

// WriteJSON writes the whole result, indented.
func (r *Result) WriteJSON(out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	// JSON has no infinity: a peak without coherency cost is left out.
	c := *r
	if c.USL != nil && math.IsInf(c.USL.PeakN, 0) {
		u := *c.USL
		u.PeakN = 0
		c.USL = &u
	}
	return enc.Encode(&c)
}

// targetColumns are the columns of the target watch's figures the
// points have.
func (r *Result) targetColumns() report.TargetColumns {
	return report.TargetColumnsOf(r.Points, func(p *Point) (*float64, *float64) { return p.TargetMemoryBytes, p.TargetCPUCores })
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
