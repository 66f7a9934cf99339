// Package summary presents the summary the engine hands back when a run
// ends (report.Summary): the text soakd prints for people, the
// --summary-json file, and the threshold values and windows as the text
// and the judge's warnings spell them. The engine only gathers the
// figures; how they read is decided here.
package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// WriteText prints the summary for people.
func WriteText(out io.Writer, s *report.Summary) {
	for _, w := range s.Workloads {
		verb := "loaded"
		if w.Kind != sources.Series.String() {
			verb = "ran"
		}
		phase := ""
		if w.Phase != "run" {
			phase = " (" + w.Phase + " phase)"
		}
		fmt.Fprintf(out, "\n== workload %s%s: source %s -> %s, rate %s, %d workers, batch %d\n",
			w.Name, phase, w.Source, w.Target, w.Rate, w.Workers, w.Batch)
		for _, n := range w.Notes {
			fmt.Fprintf(out, "note: %s\n", n)
		}
		fmt.Fprintf(out, "%s %d %s in %.1fsec with %d workers (mean rate %.2f %s/sec)\n",
			verb, w.Units, w.UnitName, w.Seconds, w.Workers, w.UnitRate, w.UnitName)
		if w.Values > 0 {
			fmt.Fprintf(out, "values: %d (mean rate %.2f values/sec)\n", w.Values, w.ValueRate)
		}
		dropped := ""
		if w.DroppedAtShutdown > 0 {
			dropped = fmt.Sprintf(" (%d of them cut at shutdown)", w.DroppedAtShutdown)
		}
		fmt.Fprintf(out, "scheduled %d = acknowledged %d + failed %d + dropped %d%s + in flight %d; bytes sent %d\n",
			w.Scheduled, w.Units, w.Failed, w.Dropped, dropped, w.InFlight, w.Bytes)
		if w.StoppedBy != "" {
			fmt.Fprintf(out, "stopped by: %s\n", w.StoppedBy)
		}
		if !w.Prepared && w.Failure == nil {
			fmt.Fprintln(out, "the target never became ready (stopped while waiting for it)")
		}
		if d := w.DropCause; d != nil {
			fmt.Fprintf(out, "dropped work: bottleneck %s: %s\n", d.Bottleneck, d.Diagnosis)
		}
		var errs []string
		for _, c := range sinks.Classes {
			if n := w.Errors[string(c)]; n > 0 {
				errs = append(errs, fmt.Sprintf("%s %d", c, n))
			}
		}
		switch {
		case len(errs) == 0 && w.Failure == nil && !thresholdFailed(w.Thresholds):
			fmt.Fprintln(out, "errors: none")
		case len(errs) == 0:
			// Not "none" beside a failure: the failure is not a failed
			// operation (a threshold, lost records, a target never ready).
			fmt.Fprintln(out, "errors (failed attempts): 0, but the workload failed (below)")
		default:
			fmt.Fprintf(out, "errors (failed attempts): %s\n", strings.Join(errs, ", "))
		}
		if e := w.LastError; e != nil {
			what := "last error"
			if e.Setup {
				what = "last setup error (waiting for the target)"
			}
			fmt.Fprintf(out, "%s (%s, %s): %s\n", what, e.Class, e.Last.Format(time.RFC3339), e.Text)
		}
		if v := w.Verify; v != nil && v.Fraction > 0 {
			fmt.Fprintf(out, "verify (%g of acknowledged %s read back): checked %d, missing %d, mismatch %d, duplicate %d; skipped %d\n",
				v.Fraction, w.UnitName, v.Checked, v.Missing, v.Mismatch, v.Duplicate, v.Skipped)
		}
		for _, o := range w.Ops {
			for _, l := range []struct {
				name string
				q    report.Quantiles
			}{{"response", o.Response}, {"service", o.Service}} {
				q := l.q
				extra := ""
				if w.Kind == sources.Queries.String() {
					// tsbs_run_queries' figures: stddev, and what came back.
					extra = fmt.Sprintf(", StdDev(us): %.0f, Rows: %d", q.StdDev*1e6, o.Rows)
				}
				fmt.Fprintf(out, "%-6s %-8s - Takes(s): %.1f, Count: %d, OPS: %.1f, Avg(us): %.0f, Min(us): %.0f, Max(us): %.0f, 50th(us): %.0f, 90th(us): %.0f, 99th(us): %.0f, 99.9th(us): %.0f%s\n",
					strings.ToUpper(o.Op), l.name, w.Seconds, q.Count, o.PerSec, q.Mean*1e6, q.Min*1e6, q.Max*1e6, q.P50*1e6, q.P90*1e6, q.P99*1e6, q.P999*1e6, extra)
			}
		}
		if q := w.Dispatch; q.Count > 0 {
			fmt.Fprintf(out, "%-15s - Count: %d, Avg(us): %.0f, Min(us): %.0f, Max(us): %.0f, 50th(us): %.0f, 90th(us): %.0f, 99th(us): %.0f, 99.9th(us): %.0f\n",
				"DISPATCH delay", q.Count, q.Mean*1e6, q.Min*1e6, q.Max*1e6, q.P50*1e6, q.P90*1e6, q.P99*1e6, q.P999*1e6)
		}
		writeTarget(out, targetFigures(w.Extra))
		writeChurn(out, w.Extra)
		writeThresholds(out, w.Thresholds)
		if f := w.Failure; f != nil {
			fmt.Fprintf(out, "FAILED: %s\n", f.Reason)
			if f.LastError != "" {
				fmt.Fprintf(out, "  last error (%s): %s\n  %d failed attempts over %.1fs\n", f.Class, f.LastError, f.Attempts, f.Seconds)
			}
		}
	}
}

// WriteJSONFile writes the summary as indented JSON.
func WriteJSONFile(path string, s *report.Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write summary: %w", err)
	}
	return nil
}

func thresholdFailed(ts []report.ThresholdResult) bool {
	for _, t := range ts {
		if !t.OK {
			return true
		}
	}
	return false
}

// writeThresholds prints each threshold with ✓ or ✗ and what was
// measured, then how many failed.
func writeThresholds(out io.Writer, ts []report.ThresholdResult) {
	if len(ts) == 0 {
		return
	}
	width := 0 // in runes: a label may hold µ
	for _, t := range ts {
		width = max(width, utf8.RuneCountInString(t.Threshold))
	}
	fmt.Fprintln(out, "thresholds (run phase):")
	failed := 0
	for _, t := range ts {
		mark := "✓"
		if !t.OK {
			mark = "✗"
			failed++
		}
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(t.Threshold))
		fmt.Fprintf(out, "  %s %s%s  %s\n", mark, t.Threshold, pad, DescribeThreshold(&t))
	}
	if failed > 0 {
		fmt.Fprintf(out, "THRESHOLDS FAILED: %d of %d\n", failed, len(ts))
	} else {
		fmt.Fprintf(out, "thresholds: all %d passed\n", len(ts))
	}
}

// DescribeThreshold says what a threshold measured, as the text summary
// and the HTML report show it.
func DescribeThreshold(t *report.ThresholdResult) string {
	v := func(x float64) string { return FormatThresholdValue(t.Unit, x, false) }
	switch {
	case t.Value == nil:
		return t.Note
	case t.EarlyWindow != nil && t.LatestWindow != nil: // drift
		m := func(x float64) string { return FormatThresholdValue(t.WindowUnit, x, false) }
		return fmt.Sprintf("%s (%s in %s, %s in %s; %d of %d late windows failed)",
			FormatThresholdValue(t.Unit, *t.Value, true), m(t.EarlyWindow.Value), FormatWindow(t.EarlyWindow),
			m(t.LatestWindow.Value), FormatWindow(t.LatestWindow), t.FailedWindows, t.Windows)
	case t.WorstWindow != nil:
		return fmt.Sprintf("worst %s in window %s (%d of %d windows failed)",
			v(*t.Value), FormatWindow(t.WorstWindow), t.FailedWindows, t.Windows)
	}
	return v(*t.Value)
}
