package summary

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/targetwatch"
)

// targetFigures is the workload entry's target_figures field
// (targetwatch's SummaryAdder), or nil.
func targetFigures(extra map[string]any) *targetwatch.Summary {
	switch v := extra["target_figures"].(type) {
	case targetwatch.Summary:
		return &v
	case *targetwatch.Summary:
		return v
	}
	return nil
}

// writeTarget prints the target's own figures over the run: memory by
// kind (first → last, peak, growth per hour), the storage soakd's data
// takes (first → last, growth per hour, per value or record), CPU time,
// the figures that are not bytes (keys, evictions, fragmentation, active
// series: first → last, peak, growth per hour), and the figures not read. A watch that never took a reading (its sink
// reads nothing and no process is watched: a built-in target) prints
// nothing; --summary-json says why. A figure's growth per hour is printed
// only over minGrowthSpan of its readings or more.
func writeTarget(out io.Writer, t *targetwatch.Summary) {
	if t == nil || t.Readings == 0 {
		return
	}
	failed := ""
	if t.Errors > 0 {
		failed = fmt.Sprintf(", %d failed", t.Errors)
	}
	readings := "readings"
	if t.Readings == 1 {
		readings = "reading"
	}
	fmt.Fprintf(out, "target (read every %gs: %d %s%s):\n", t.IntervalSeconds, t.Readings, readings, failed)
	if t.LastError != "" {
		fmt.Fprintf(out, "  last failed reading: %s\n", t.LastError)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Memory)) {
		f := t.Memory[k]
		fmt.Fprintf(out, "  memory %s: %s → %s, peak %s%s\n", k, settings.FormatBytes(f.First), settings.FormatBytes(f.Last), settings.FormatBytes(f.Peak),
			growth(f))
	}
	if f := t.StorageTotal; f != nil {
		fmt.Fprintf(out, "  storage total: %s → %s%s", settings.FormatBytes(f.First), settings.FormatBytes(f.Last), growth(*f))
		if v := t.StoragePerValue; v != nil && t.Acknowledged != nil {
			one := strings.TrimSuffix(t.Counted, "s")
			fmt.Fprintf(out, "; %.1f bytes per %s (%.0f %s)", *v, one, *t.Acknowledged, t.Counted)
		}
		fmt.Fprintln(out)
	}
	if c := t.CPU; c != nil {
		whose := "the target's own"
		if c.From == "process" {
			whose = "its process's"
		}
		cores := ""
		if c.Cores != nil {
			cores = fmt.Sprintf(", %.2f cores", *c.Cores)
		}
		fmt.Fprintf(out, "  cpu: %.1fs → %.1fs (%s)%s\n", c.First, c.Last, whose, cores)
	}
	for _, st := range []struct {
		name string
		f    *targetwatch.Figure
		form string
	}{
		{"keys", t.Keys, "%.0f"},
		{"evictions", t.Evictions, "%.0f"},
		{"memory fragmentation ratio", t.MemoryFragmentationRatio, "%.2f"},
		{"active series", t.ActiveSeries, "%.0f"},
		{"discarded (answered as written, not stored)", t.Discarded, "%.0f"},
	} {
		if f := st.f; f != nil {
			fmt.Fprintf(out, "  %s: "+st.form+" → "+st.form+", peak "+st.form+"%s\n", st.name, f.First, f.Last, f.Peak, growthOf(*f, st.form))
		}
	}
	if f := t.Evictions; f != nil && rose(f) > 0 {
		fmt.Fprintf(out, "  WARNING: the target evicted %.0f keys during the run (other clients' included): "+
			"records acknowledged are gone; raise its maxmemory or lower RECORDS\n", rose(f))
	}
	if f := t.Flushes; f != nil && rose(f) > 0 {
		fmt.Fprintf(out, "  WARNING: FLUSHALL or FLUSHDB emptied the target during the run (%.0f calls, by another client; FLUSHDB of another database leaves soakd's keys): "+
			"records acknowledged before are gone; find who flushes it, or give soakd a target of its own\n", rose(f))
	}
	if t.Restarts > 0 && t.LastRestart != nil {
		fmt.Fprintf(out, "  WARNING: the target restarted during the run (%d seen, the last by %s; or failed over to a replica): what it held in memory alone is gone, "+
			"records acknowledged before among it; give it persistence (Redis: appendonly yes) or find why it restarted, and run soakd verify to list the records lost\n",
			t.Restarts, t.LastRestart.UTC().Format(time.RFC3339))
	}
	if f := t.Discarded; f != nil && rose(f) > 0 {
		fmt.Fprintf(out, "  WARNING: the target discarded %.0f values it answered as written during the run (other writers' included)%s: "+
			"acknowledged overstates what it holds%s\n", rose(f), byReason(t.DiscardedBy), discardHint(t.DiscardedBy))
	}
	writeNotRead(out, t.Unavailable)
}

// rose is what counter f rose by over the run: its Rise, counted across
// the target's restarts, or, in a summary without it, last - first.
func rose(f *targetwatch.Figure) float64 {
	if f.Rise != nil {
		return *f.Rise
	}
	return f.Last - f.First
}

// writeNotRead prints the figures not read, a line per reason, each
// reason once after the figures it kept from being read (INFO memory
// refused is memory and memory_fragmentation_ratio), so a store that
// answers few of the questions says which and why.
func writeNotRead(out io.Writer, unavailable map[string]string) {
	var reasons []string
	figures := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(unavailable)) {
		why := unavailable[k]
		if len(figures[why]) == 0 {
			reasons = append(reasons, why)
		}
		figures[why] = append(figures[why], k)
	}
	for _, why := range reasons {
		if why == "" {
			fmt.Fprintf(out, "  not read: %s\n", strings.Join(figures[why], ", "))
			continue
		}
		fmt.Fprintf(out, "  not read: %s (%s)\n", strings.Join(figures[why], ", "), why)
	}
}

// minGrowthSpan is the least time between a figure's first reading and its
// last over which the text summary prints its growth per hour: over a
// first run of seconds the target warms up (a server's heap from 4 to 18
// MiB in 8 s), which read as growth per hour would be gigabytes an hour,
// and first → last already shows the change. --summary-json keeps
// growth_per_hour beside the figure's seconds.
const minGrowthSpan = 10 * time.Minute

// growthShown is f's growth per hour when the text prints it: over
// minGrowthSpan of its readings or more.
func growthShown(f targetwatch.Figure) *float64 {
	if f.Seconds < minGrowthSpan.Seconds() {
		return nil
	}
	return f.GrowthPerHour
}

// growth prints f's growth per hour in bytes, or nothing.
func growth(f targetwatch.Figure) string {
	g := growthShown(f)
	if g == nil {
		return ""
	}
	sign := "+"
	if *g < 0 {
		sign = "-"
	}
	return fmt.Sprintf(", %s%s/h", sign, settings.FormatBytes(math.Abs(*g)))
}

// growthOf prints the growth per hour of f, a figure that is not bytes,
// in form, or nothing.
func growthOf(f targetwatch.Figure, form string) string {
	g := growthShown(f)
	if g == nil {
		return ""
	}
	return fmt.Sprintf(", %+"+form[1:]+"/h", *g)
}

// writeChurn prints what CHURN did (the churn package's SummaryAdder), or
// nothing when the workload's devices were not replaced.
func writeChurn(out io.Writer, extra map[string]any) {
	var c sources.ChurnFigures
	switch v := extra["churn"].(type) {
	case sources.ChurnFigures:
		c = v
	case *sources.ChurnFigures:
		c = *v
	default:
		return
	}
	fmt.Fprintf(out, "churn (%s): %d devices at a time, %d replaced: %d devices and %d series (device × field) created\n",
		c.Setting, c.Devices, c.Replaced, c.DevicesCreated, c.SeriesCreated)
}

// byReason is " (by reason: R N, ...)" of a target's discarded values,
// or nothing without reasons.
func byReason(by map[string]float64) string {
	if len(by) == 0 {
		return ""
	}
	parts := make([]string, 0, len(by))
	for _, r := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", r, by[r]))
	}
	return " (by reason: " + strings.Join(parts, ", ") + ")"
}

// discardHint says what to check for the reasons a target discarded
// values (VictoriaMetrics' names).
func discardHint(by map[string]float64) string {
	var hints []string
	for r := range by {
		switch {
		case strings.HasSuffix(r, "_timestamp"):
			hints = append(hints, "START and CLOCK against its retention")
		case strings.HasPrefix(r, "invalid_"):
			hints = append(hints, "the target URL's path (it could not parse what it was sent)")
		case strings.Contains(r, "label"):
			hints = append(hints, "its limits on labels (-maxLabelsPerTimeseries, -maxLabelValueLen) against the source's tags")
		}
	}
	if len(hints) == 0 {
		return ""
	}
	slices.Sort(hints)
	return "; check " + strings.Join(slices.Compact(hints), ", and ")
}
