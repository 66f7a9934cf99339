package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/soakd/soakd/daemon/pace"
)

// WriteMarkdown writes the sweep as a markdown report: environment,
// settings, every point, the best, and the USL fit.
func (r *Result) WriteMarkdown(out io.Writer) {
	sc := r.Settings
	fmt.Fprintf(out, "# Sweep of workload %s: WORKERS × %s, closed loop\n\n", r.Workload, r.BatchName)
	for _, p := range r.Points {
		if p.Best {
			fmt.Fprintf(out, "**Best: %d workers, %s %d: %.0f %s/s** (median of %d runs, min %.0f, max %.0f).\n\n",
				p.Workers, r.BatchName, p.Batch, p.Median, r.Unit, len(p.Rates), p.Min, p.Max)
		}
	}
	fmt.Fprint(out, "## Environment\n\n| | |\n|---|---|\n")
	for _, row := range r.Environment.Rows() {
		fmt.Fprintf(out, "| %s | %s |\n", row[0], row[1])
	}
	fmt.Fprintf(out, "\nEach point: %d runs", sc.Repeats)
	if sc.Reset {
		fmt.Fprint(out, ", the target emptied of soakd's data before each")
	}
	fmt.Fprintf(out, "; runs without a finite data set last %s.\n", sc.Duration)
	if len(r.Run) > 0 {
		fmt.Fprintf(out, "\nSettings: `%s`\n", strings.Join(r.Run, "` `"))
	}
	fmt.Fprintf(out, "\n## Points (%s/s)\n\n| workers | %s | median | min | max | p99 | failed | |\n|---:|---:|---:|---:|---:|---:|---:|---|\n",
		r.Unit, r.BatchName)
	for _, p := range r.Points {
		var note []string
		if p.Best {
			note = append(note, "best")
		}
		if p.Falls {
			note = append(note, "slower than with fewer workers")
		}
		fmt.Fprintf(out, "| %d | %d | %.0f | %.0f | %.0f | %s | %d | %s |\n", p.Workers, p.Batch, p.Median, p.Min, p.Max,
			pace.FormatSeconds(p.P99), p.Failed, strings.Join(note, ", "))
	}
	if u := r.USL; u != nil {
		fmt.Fprintf(out, "\n## Universal Scalability Law (%s %d)\n\n", r.BatchName, u.Batch)
		if u.Lambda > 0 {
			peak := "none (no coherency cost)"
			if !math.IsInf(u.PeakN, 1) {
				peak = fmt.Sprintf("%.1f workers, %.0f %s/s", u.PeakN, u.PeakX, r.Unit)
			}
			fmt.Fprintf(out, "X(N) = λN / (1 + σ(N−1) + κN(N−1)) with λ = %.4g %s/s, σ (contention) = %.4g, κ (coherency) = %.4g; R² = %.3f; predicted peak: %s.\n\n",
				u.Lambda, r.Unit, u.Sigma, u.Kappa, u.R2, peak)
		}
		if u.Poor {
			fmt.Fprint(out, "**Poor fit**: ")
		}
		fmt.Fprintf(out, "%s.\n", capitalize(u.Note))
	}
}

// WriteCSV writes one row per run.
func (r *Result) WriteCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	_ = w.Write([]string{"workers", strings.ToLower(r.BatchName), "run", "units_per_second", "median", "min", "max", "p99_seconds", "best", "throughput_falls"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range r.Points {
		for i, x := range p.Rates {
			_ = w.Write([]string{strconv.Itoa(p.Workers), strconv.Itoa(p.Batch), strconv.Itoa(i + 1), f(x), f(p.Median), f(p.Min), f(p.Max),
				f(p.P99), strconv.FormatBool(p.Best), strconv.FormatBool(p.Falls)})
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

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
