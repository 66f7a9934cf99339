package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/settings"
)

// writeGridMarkdown writes a grid sweep's report: the best point, the
// environment, the order the points ran in, for two axes the grid as
// tables (first axis rows, second columns) of the median rates, and for
// any number of axes the long table, one row per point.
func (r *Result) writeGridMarkdown(out io.Writer) {
	sc := r.Settings
	names := make([]string, len(r.Axes))
	for i, a := range r.Axes {
		names[i] = a.Name
	}
	fmt.Fprintf(out, "# Sweep of workload %s: %s, closed loop\n\n", r.Workload, strings.Join(names, " × "))
	for _, p := range r.Points {
		if p.Best {
			by := ""
			if r.RankUnit() != r.Unit {
				by = " by " + r.RankUnit() + "/s"
			}
			fmt.Fprintf(out, "**Best%s: %s: %.0f %s/s", by, r.label(p), p.Median, r.Unit)
			if r.Values {
				fmt.Fprintf(out, ", %.0f values/s", p.ValueMedian)
			}
			fmt.Fprintf(out, "** (median of %s, min %.0f, max %.0f).\n\n", runs(len(p.Rates)), p.Min, p.Max)
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
	fmt.Fprintf(out, "\nOrder: %s. Each point: %s%s; runs without a finite data set last %s.\n", r.order(), runs(sc.Repeats), r.resetNote(), sc.Duration)
	if len(r.Run) > 0 {
		fmt.Fprintf(out, "\nSettings: `%s`\n", strings.Join(r.Run, "` `"))
	}
	tc := r.targetColumns()
	if len(r.Axes) == 2 {
		rate := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		r.writeTable(out, r.Unit+"/s (median)", rate, true, func(p Point) (float64, bool) { return p.Median, true })
		if r.Values {
			r.writeTable(out, "values/s (median)", rate, true, func(p Point) (float64, bool) { return p.ValueMedian, true })
		}
		r.writeTable(out, "p99 latency (median over runs)", pace.FormatSeconds, false, func(p Point) (float64, bool) { return p.P99, true })
		if tc.Memory {
			r.writeTable(out, "target memory (peak)", settings.FormatBytes, false, func(p Point) (float64, bool) {
				if p.TargetMemoryBytes == nil {
					return 0, false
				}
				return *p.TargetMemoryBytes, true
			})
		}
		if r.Judged() {
			r.writeCells(out, "thresholds", func(_ int, p Point) string { return thresholdCell(p) })
		}
	}
	fmt.Fprint(out, "\n## Points\n\n|")
	align := "|"
	for _, a := range r.Axes {
		fmt.Fprintf(out, " %s |", a.Name)
		align += "---|"
	}
	fmt.Fprintf(out, " %s/s median | min | max |", r.Unit)
	align += "---:|---:|---:|"
	if r.Values {
		fmt.Fprint(out, " values/s median | min | max |")
		align += "---:|---:|---:|"
	}
	head, tcAlign := tc.MarkdownHeader()
	th, thAlign := r.thresholdHeader()
	fmt.Fprint(out, " p99 | failed |"+th+" |"+head)
	fmt.Fprintf(out, "\n%s---:|---:|%s---|%s\n", align, thAlign, tcAlign)
	for _, p := range r.Points {
		fmt.Fprint(out, "|")
		for _, v := range p.AxisValues {
			fmt.Fprintf(out, " %s |", v)
		}
		fmt.Fprintf(out, " %.0f | %.0f | %.0f |", p.Median, p.Min, p.Max)
		if r.Values {
			fmt.Fprintf(out, " %.0f | %.0f | %.0f |", p.ValueMedian, p.ValueMin, p.ValueMax)
		}
		fmt.Fprintf(out, " %s | %d |%s %s |%s\n", pace.FormatSeconds(p.P99), p.Failed, r.thresholdCells(p), notes(p),
			tc.MarkdownCells(p.TargetMemoryBytes, p.TargetCPUCores))
	}
	r.writeLeftOut(out)
	if u := r.USL; u != nil {
		where := "WORKERS"
		if len(u.Where) > 0 {
			where += " at " + strings.Join(u.Where, " ")
		}
		r.writeUSL(out, where)
	}
}

// writeTable writes a two-axis grid's figure as a table: the first axis's
// values are the rows, the second's the columns; with top, the highest
// cell in bold (of the points not left out, whose cells say their failed
// share). A point that did not run is empty, one without the figure
// (the target's memory unread) a dash. Cells are keyed by value index:
// two values may show alike.
func (r *Result) writeTable(out io.Writer, title string, format func(float64) string, top bool, figure func(Point) (float64, bool)) {
	high, hv := -1, 0.0
	for i, p := range r.Points {
		if v, ok := figure(p); top && ok && !p.LeftOut && (high < 0 || v > hv) {
			high, hv = i, v
		}
	}
	r.writeCells(out, title, func(i int, p Point) string {
		cell := "–"
		if v, ok := figure(p); ok {
			cell = format(v)
		}
		if i == high {
			cell = "**" + cell + "**"
		}
		if p.LeftOut {
			cell += " (" + leftOutNote(p) + ")"
		}
		return cell
	})
}

// writeCells writes a two-axis grid as a table of cell(i, p) for each
// point p, the i-th: the first axis's values are the rows, the second's
// the columns; a point that did not run is empty. Cells are keyed by
// value index: two values may show alike.
func (r *Result) writeCells(out io.Writer, title string, cell func(int, Point) string) {
	rows, cols := r.Axes[0], r.Axes[1]
	fmt.Fprintf(out, "\n## %s\n\n| %s \\ %s |", title, rows.Name, cols.Name)
	for _, c := range cols.Values {
		fmt.Fprintf(out, " %s |", c)
	}
	fmt.Fprint(out, "\n|---|"+strings.Repeat("---:|", len(cols.Values))+"\n")
	for ri, rv := range rows.Values {
		fmt.Fprintf(out, "| %s |", rv)
		for ci := range cols.Values {
			c := ""
			for i, p := range r.Points {
				if at := r.index(p); at[0] == ri && at[1] == ci {
					c = cell(i, p)
				}
			}
			fmt.Fprintf(out, " %s |", c)
		}
		fmt.Fprint(out, "\n")
	}
}

// writeGridCSV writes one row per run of a grid sweep: the point's axis
// values, its WORKERS and BATCH_SIZE (PIPELINE), the run's rate and
// counts, and the point's median, min and max.
func (r *Result) writeGridCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	tc := r.targetColumns()
	var head []string
	for _, a := range r.Axes {
		head = append(head, a.Name)
	}
	head = append(head, "workers", strings.ToLower(r.BatchName), "run", "units_per_second")
	if r.Values {
		head = append(head, "values_per_second")
	}
	head = append(head, "seconds", "units")
	if r.Values {
		head = append(head, "values")
	}
	head = append(head, "scheduled_units", "failed_units", "dropped_units", "in_flight_units", "p99_seconds", "median", "min", "max")
	if r.Values {
		head = append(head, "values_median", "values_min", "values_max")
	}
	head = append(head, "point_p99_seconds", "best", "throughput_falls")
	head = append(head, r.thresholdCSVHeader()...)
	_ = w.Write(append(head, tc.CSVHeader()...))
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range r.Points {
		for i, x := range p.Rates {
			row := append([]string(nil), p.AxisValues...)
			row = append(row, strconv.Itoa(p.Workers), strconv.Itoa(p.Batch), strconv.Itoa(i+1), f(x))
			if r.Values {
				row = append(row, f(at(p.ValueRates, i)))
			}
			var c RunCounts
			if i < len(p.Runs) {
				c = p.Runs[i]
			}
			row = append(row, f(c.Seconds), n(c.Units))
			if r.Values {
				row = append(row, n(c.Values))
			}
			row = append(row, n(c.Scheduled), n(c.Failed), n(c.Dropped), n(c.InFlight), f(c.P99), f(p.Median), f(p.Min), f(p.Max))
			if r.Values {
				row = append(row, f(p.ValueMedian), f(p.ValueMin), f(p.ValueMax))
			}
			row = append(row, f(p.P99), strconv.FormatBool(p.Best), strconv.FormatBool(p.Falls))
			row = append(row, r.thresholdCSVCells(c)...)
			_ = w.Write(append(row, tc.CSVCells(p.TargetMemoryBytes, p.TargetCPUCores)...))
		}
	}
	w.Flush()
	return w.Error()
}

// at is v[i], or 0 past its end.
func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// notes are a point's marks in the long table: best, slower than with
// fewer workers, or why it was left out.
func notes(p Point) string {
	var note []string
	if p.Best {
		note = append(note, "best")
	}
	if p.BestPassing {
		note = append(note, "best passing the thresholds")
	}
	if p.Falls {
		note = append(note, "slower than with fewer workers")
	}
	if p.LeftOut {
		note = append(note, leftOutNote(p))
	}
	return strings.Join(note, ", ")
}

// leftOutNote says why a point was left out: the share of its units that
// failed, runs a threshold marked ! cut short, or both.
func leftOutNote(p Point) string {
	var note []string
	if p.FailedShare > MaxFailedShare {
		note = append(note, failedNote(p))
	}
	if p.CutShortRuns > 0 {
		note = append(note, fmt.Sprintf("%d of %s cut short", p.CutShortRuns, runs(len(p.Rates))))
	}
	return strings.Join(note, ", ")
}

// thresholdCell says whether the point passed its THRESHOLDS: in how many
// of its runs, and those that failed; a dash for a point without any.
func thresholdCell(p Point) string {
	switch {
	case p.ThresholdsPassed == nil:
		return "–"
	case p.ThresholdsMet():
		return fmt.Sprintf("✓ %d of %s", *p.ThresholdsPassed, runs(len(p.Rates)))
	}
	return fmt.Sprintf("✗ %s; %d of %s passed", strings.Join(p.FailedThresholds, ", "), *p.ThresholdsPassed, runs(len(p.Rates)))
}

// thresholdHeader is the long table's thresholds column, header and
// alignment, each with its leading separator; none when no point was
// judged against THRESHOLDS.
func (r *Result) thresholdHeader() (head, align string) {
	if !r.Judged() {
		return "", ""
	}
	return " thresholds |", "---|"
}

// thresholdCells is the point's thresholds cell, as thresholdHeader.
func (r *Result) thresholdCells(p Point) string {
	if !r.Judged() {
		return ""
	}
	return " " + thresholdCell(p) + " |"
}

// thresholdCSVHeader are the CSV's columns of a run's THRESHOLDS: those
// that failed (none: it passed every one) and what cut it short; none
// when no point was judged.
func (r *Result) thresholdCSVHeader() []string {
	if !r.Judged() {
		return nil
	}
	return []string{"failed_thresholds", "cut_short"}
}

// thresholdCSVCells are the run's cells under thresholdCSVHeader.
func (r *Result) thresholdCSVCells(c RunCounts) []string {
	if !r.Judged() {
		return nil
	}
	return []string{strings.Join(c.FailedThresholds, " "), c.CutShort}
}

// writeThresholds says, of a sweep judged against THRESHOLDS, how many
// points passed every one in each of their runs, and the best of them
// when the best point is not.
func (r *Result) writeThresholds(out io.Writer) {
	met, judged := r.ThresholdsMet()
	if judged == 0 {
		return
	}
	if met == 0 {
		fmt.Fprintf(out, "**Thresholds: no point passed every threshold in each of its runs** (%d judged).\n\n", judged)
		return
	}
	fmt.Fprintf(out, "**Thresholds: %d of %d points passed every threshold in each of their runs.**", met, judged)
	for _, p := range r.Points {
		if p.BestPassing {
			fmt.Fprintf(out, " The best of them: %s, %.0f %s/s", r.label(p), p.Median, r.Unit)
			if r.Values && r.Grid() {
				fmt.Fprintf(out, ", %.0f values/s", p.ValueMedian)
			}
			fmt.Fprintf(out, " (median of %s, min %.0f, max %.0f).", runs(len(p.Rates)), p.Min, p.Max)
		}
	}
	fmt.Fprint(out, "\n\n")
}

// failedNote says the share of a point's units that failed.
func failedNote(p Point) string {
	return strconv.FormatFloat(p.FailedShare*100, 'f', 1, 64) + "% failed"
}

// runs says n runs, in words.
func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}

// resetNote says what the sweep reset before each run: nothing without
// SOAKD_SWEEP_RESET, never a query workload's target, and, of the
// others, not those whose sink cannot (NotReset).
func (r *Result) resetNote() string {
	switch {
	case !r.Settings.Reset:
		return ""
	case r.Unit == "queries":
		return ", the target never reset (a query workload reads data it did not write)"
	}
	s := ", the target emptied of soakd's data before each"
	if r.Grid() && r.Values {
		s += " (its tables dropped when made for another shape)"
	}
	if len(r.NotReset) > 0 {
		s += fmt.Sprintf(", but not %s, whose sink cannot empty it: a point there starts where the ones before left it", strings.Join(r.NotReset, " nor "))
	}
	return s
}

// writeLeftOut says why the points marked "failed" were left out, and
// why each point's units failed: its runs' last error.
func (r *Result) writeLeftOut(out io.Writer) {
	if slices.ContainsFunc(r.Points, func(p Point) bool { return p.FailedShare > MaxFailedShare }) {
		fmt.Fprintf(out, "\nPoints marked %% failed had more than %g%% of their scheduled units fail: they are left out of the best, of the comparison with fewer workers and of the USL fit, as their rates measure failing as much as writing.\n",
			MaxFailedShare*100)
	}
	if slices.ContainsFunc(r.Points, func(p Point) bool { return p.CutShortRuns > 0 }) {
		fmt.Fprint(out, "\nPoints marked cut short had runs that a failed threshold marked `!`, or the sweep's stop, ended before their end: their rates are over the time those runs lasted, not a whole run's, so they are left out of the best, of the comparison with fewer workers and of the USL fit.\n")
	}
	head := false
	for _, p := range r.Points {
		last := ""
		for _, c := range p.Runs {
			if c.LastError != "" {
				last = c.LastError
			}
		}
		if p.Failed == 0 || last == "" {
			continue
		}
		if !head {
			fmt.Fprint(out, "\n## Failures\n\n")
			head = true
		}
		fmt.Fprintf(out, "- %s: %d %s failed; the last error: %s\n", r.label(p), p.Failed, r.Unit, last)
	}
}
