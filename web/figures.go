package web

import (
	"html/template"
	"math"
	"strings"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/sinks"
)

// Ranges of the console's charts.
const (
	RangeRecent = "recent" // the last history.Recent, every second
	RangeWhole  = "whole"  // the whole run, downsampled, with min–max bands
)

// Figure is a rendered chart.
type Figure struct {
	ID  string
	SVG template.HTML // charts.Chart.SVG output: escaped by the charts package
}

func render(cs []charts.Chart) []Figure {
	out := make([]Figure, len(cs))
	for i := range cs {
		out[i] = Figure{ID: cs[i].ID, SVG: template.HTML(cs[i].SVG())} // package charts escapes every text it writes
	}
	return out
}

// Colours of the latency quantiles, the same in every latency chart.
var (
	colP50  = "#1f77b4"
	colP99  = "#ff7f0e"
	colP999 = "#d62728"
)

// series picks a tier of s and reads fields from it.
type series struct {
	s     *history.Series
	t     *history.Tier
	whole bool
}

func pick(s *history.Series, rng string) series {
	if rng == RangeWhole {
		return series{s: s, t: &s.Whole, whole: true}
	}
	return series{s: s, t: &s.Recent}
}

// line is a field as a chart line; on the whole tier with band, with its
// min–max band.
func (p series) line(name, field string, band bool) charts.Line {
	l := charts.Line{Name: name, X: p.t.T, Y: p.s.Field(p.t, field)}
	if band && p.whole {
		l.Lo, l.Hi = p.s.Band(p.t, field)
	}
	return l
}

// anyAbove reports whether field has a value > 0 in the tier.
func (p series) anyAbove(field string) bool {
	for _, v := range p.s.Field(p.t, field) {
		if v > 0 {
			return true
		}
	}
	return false
}

// phaseMarks marks where each phase after the first began, and the first
// when it did not begin at the start.
func phaseMarks(w *history.Workload) []charts.Mark {
	var out []charts.Mark
	for i, ph := range w.Phases {
		if i > 0 || ph.Start > 1 {
			out = append(out, charts.Mark{At: ph.Start, Label: ph.Name})
		}
	}
	return out
}

// workloadCharts are the charts of one workload over range rng.
func workloadCharts(w *history.Workload, rng string) []charts.Chart {
	p := pick(&w.Series, rng)
	marks := phaseMarks(w)
	x := charts.Axis{Unit: charts.Elapsed}
	id := func(s string) string { return w.Name + "-" + s }
	unit := w.Unit + "/s"
	chart := func(name, title string, y charts.Axis, lines ...charts.Line) charts.Chart {
		return charts.Chart{ID: id(name), Title: title, X: x, Y: y, Lines: lines, Marks: marks}
	}
	var out []charts.Chart
	target := p.line("target", "target_rate", false)
	target.Dashed, target.Color = true, "#7f7f7f"
	out = append(out, chart("rate", "Target vs achieved rate ("+unit+")", charts.Axis{Label: unit, ZeroBased: true},
		target, p.line("achieved", "achieved_rate", true)))

	ops := w.Ops
	if len(ops) == 0 {
		ops = []string{map[string]string{"kv": "read"}[w.Kind]}
		if ops[0] == "" {
			ops[0] = "write"
		}
	}
	for _, op := range ops {
		var lines []charts.Line
		for _, kind := range []string{"response", "service"} {
			for _, q := range []struct{ name, field, col string }{{"p50", "p50", colP50}, {"p99", "p99", colP99}, {"p99.9", "p99_9", colP999}} {
				l := p.line(kind+" "+q.name, op+"_"+kind+"_"+q.field+"_seconds", q.name == "p99" && kind == "response")
				l.Color, l.Dashed = q.col, kind == "service"
				lines = append(lines, l)
			}
		}
		out = append(out, chart("latency-"+op, "Latency of "+op+": response (solid) and service (dashed)",
			charts.Axis{Unit: charts.Seconds, Log: true}, lines...))
	}

	var lines []charts.Line
	for _, q := range []struct{ name, field, col string }{{"p50", "p50", colP50}, {"p99", "p99", colP99}, {"p99.9", "p99_9", colP999}} {
		l := p.line("dispatch "+q.name, "dispatch_"+q.field+"_seconds", false)
		l.Color = q.col
		lines = append(lines, l)
	}
	lag := p.line("schedule lag", "lag_seconds", true)
	lag.Color, lag.Dashed = "#9467bd", true
	out = append(out, chart("dispatch", "Dispatch delay and schedule lag", charts.Axis{Unit: charts.Seconds, Log: true},
		append(lines, lag)...))

	errs := []charts.Line{p.line("dropped", "dropped_per_second", true), p.line("failed", "failed_per_second", true)}
	errs[0].Color, errs[1].Color = "#8c564b", "#e377c2"
	anyClass := false
	for _, c := range sinks.Classes {
		f := "errors_" + string(c) + "_per_second"
		if p.anyAbove(f) {
			errs = append(errs, p.line(string(c)+" errors", f, true))
			anyClass = true
		}
	}
	if !anyClass {
		errs = append(errs, p.line("errors", "errors_"+string(sinks.Classes[0])+"_per_second", false))
	}
	out = append(out, chart("errors", "Errors by class, failed and dropped ("+unit+", errors in attempts/s)", charts.Axis{ZeroBased: true}, errs...))

	workers := p.line("workers", "workers", false)
	workers.Dashed, workers.Color = true, "#7f7f7f"
	out = append(out, chart("concurrency", "Writes in flight vs workers", charts.Axis{ZeroBased: true},
		p.line("in flight", "inflight", true), workers))

	switch w.Kind {
	case "query":
		out = append(out, chart("units", "Queries per second", charts.Axis{Label: unit, ZeroBased: true},
			p.line(unit, "achieved_rate", true)))
	case "kv":
		var opl []charts.Line
		for _, op := range ops {
			opl = append(opl, p.line(op+"/s", op+"_per_second", true))
		}
		out = append(out, chart("units", "Operations per second, by op", charts.Axis{ZeroBased: true}, opl...))
	default:
		out = append(out, chart("units", "Rows and values per second", charts.Axis{ZeroBased: true},
			p.line("rows/s", "achieved_rate", true), p.line("values/s", "values_per_second", true)))
	}
	// The target's own memory and storage, beside soakd's own: only for a
	// workload whose target gave a figure at some time of the run (the
	// watch is on and reads it), so no chart is ever empty for want of
	// a watch.
	if hasTargetFigures(&w.Series) {
		mem, st := p.line("memory", "target_memory_bytes", true), p.line("storage", "target_storage_bytes", true)
		mem.Color, st.Color = "#17becf", "#bcbd22"
		out = append(out, chart("target", "Target memory and storage", charts.Axis{Unit: charts.Bytes, ZeroBased: true}, mem, st))
	}
	// What the target holds, where its sink reads it: Redis' keys, a
	// remote-write server's active series.
	if hasFigure(&w.Series, "target_keys", "target_active_series") {
		keys, series := p.line("keys", "target_keys", true), p.line("active series", "target_active_series", true)
		keys.Color, series.Color = "#17becf", "#bcbd22"
		out = append(out, chart("target-held", "Target keys and active series", charts.Axis{ZeroBased: true}, keys, series))
	}
	// null:// sends nothing: its bytes chart could only ever be empty.
	if !strings.HasPrefix(strings.ToLower(w.Target), "null:") {
		out = append(out, chart("bytes", "Bytes sent per second", charts.Axis{Unit: charts.Bytes, ZeroBased: true},
			p.line("bytes/s", "bytes_per_second", true)))
	}
	return out
}

// processCharts are soakd's own CPU and memory.
func processCharts(s *history.Series, rng string) []charts.Chart {
	p := pick(s, rng)
	x := charts.Axis{Unit: charts.Elapsed}
	return []charts.Chart{
		{ID: "process-cpu", Title: "soakd CPU (cores)", X: x, Y: charts.Axis{ZeroBased: true},
			Lines: []charts.Line{p.line("CPU", "cpu_cores", true)}},
		{ID: "process-memory", Title: "soakd memory", X: x, Y: charts.Axis{Unit: charts.Bytes, ZeroBased: true},
			Lines: []charts.Line{p.line("resident (RSS)", "rss_bytes", true), p.line("Go heap", "heap_bytes", true)}},
	}
}

// hasTargetFigures reports whether s has a target's memory or storage
// in either tier.
func hasTargetFigures(s *history.Series) bool {
	return hasFigure(s, "target_memory_bytes", "target_storage_bytes")
}

// hasFigure reports whether s has a finite value of one of fields in
// either tier.
func hasFigure(s *history.Series, fields ...string) bool {
	for _, t := range []*history.Tier{&s.Recent, &s.Whole} {
		for _, f := range fields {
			for _, v := range s.Field(t, f) {
				if !math.IsNaN(v) {
					return true
				}
			}
		}
	}
	return false
}

// last is the last finite value of field in the recent tier, NaN if none.
func last(s *history.Series, field string) float64 {
	v := s.Field(&s.Recent, field)
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return v[i]
		}
	}
	return math.NaN()
}
