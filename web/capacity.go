package web

import (
	"fmt"
	"slices"
	"strings"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
)

// CapacityCharts are a capacity search's figures: achieved against target
// rate per step (passed steps as dots, failed ones as crosses, the knee
// marked), and response p50 and p99 against the target rate with the SLO
// marked. soakd capacity writes them as SVG and PNG; the console and the
// HTML report show them.
func CapacityCharts(r *capacity.Result) []charts.Chart {
	steps := slices.Clone(r.Steps)
	slices.SortStableFunc(steps, func(a, b capacity.Step) int {
		switch {
		case a.Target < b.Target:
			return -1
		case a.Target > b.Target:
			return 1
		}
		return 0
	})
	var tx, ach, p50, p99 []float64
	var passX, passY, failX, failY []float64
	top := 0.0
	for i, s := range steps {
		// A rate judged twice (a recheck) is one point of the lines: the
		// later judgement, as the search took it; both show as markers.
		if i+1 < len(steps) && steps[i+1].Target == s.Target {
			continue
		}
		tx = append(tx, s.Target)
		ach = append(ach, s.Achieved)
		p50 = append(p50, s.Response.P50)
		p99 = append(p99, s.Response.P99)
	}
	for _, s := range steps {
		if s.Pass {
			passX, passY = append(passX, s.Target), append(passY, s.Achieved)
		} else {
			failX, failY = append(failX, s.Target), append(failY, s.Achieved)
		}
		top = max(top, s.Target, s.Achieved)
	}
	var marks []charts.Mark
	switch {
	case r.TargetCapacity():
		marks = append(marks, charts.Mark{At: r.Knee, Label: "knee " + pace.FormatRate(r.Knee) + "/s"})
	case r.Found:
		// soakd's own limit: marked, but not as the target's knee.
		marks = append(marks, charts.Mark{At: r.Knee, Label: "soakd limit " + pace.FormatRate(r.Knee) + "/s"})
	}
	rate := charts.Chart{
		ID: "capacity-rate", Title: "Achieved vs target rate, per step",
		X: charts.Axis{Label: "target rate (units/s)", Unit: charts.Number, ZeroBased: true},
		Y: charts.Axis{Label: "achieved (units/s)", Unit: charts.Number, ZeroBased: true},
		Lines: []charts.Line{
			{Name: "ideal", X: []float64{0, top}, Y: []float64{0, top}, Dashed: true, Color: "#7f7f7f"},
			{Name: "achieved", X: tx, Y: ach},
		},
		Points: []charts.Points{
			{Name: "passed", X: passX, Y: passY, Shape: charts.Dot, Color: "#2ca02c"},
			{Name: "failed", X: failX, Y: failY, Shape: charts.Cross, Color: "#d62728"},
		},
		Marks: marks,
	}
	lat := charts.Chart{
		ID: "capacity-latency", Title: "Response latency vs target rate",
		X: charts.Axis{Label: "target rate (units/s)", Unit: charts.Number, ZeroBased: true},
		Y: charts.Axis{Label: "response latency", Unit: charts.Seconds, Log: true},
		Lines: []charts.Line{
			{Name: "p50", X: tx, Y: p50},
			{Name: "p99", X: tx, Y: p99},
		},
		Marks: append(slices.Clone(marks),
			charts.Mark{At: r.Settings.SLOP99.Seconds(), Horizontal: true, Label: "SLO p99 " + r.Settings.SLOP99.String()}),
	}
	return append([]charts.Chart{rate, lat}, capacityTargetCharts(steps)...)
}

// capacityTargetCharts are the target's own memory and the cores it used
// against the target rate, one point per step that has the figure (the
// target watch's readings): is the knee memory- or CPU-bound? None
// without the watch; a step without a reading is left out, never drawn
// as 0.
func capacityTargetCharts(steps []capacity.Step) []charts.Chart {
	var out []charts.Chart
	for _, f := range []struct {
		id, title, label, line string
		unit                   charts.Unit
		y                      func(capacity.Step) *float64
	}{
		{"memory", "memory", "target memory", "memory", charts.Bytes, func(s capacity.Step) *float64 { return s.TargetMemoryBytes }},
		{"cpu", "CPU", "target CPU (cores)", "cores", charts.Number, func(s capacity.Step) *float64 { return s.TargetCPUCores }},
	} {
		var x, y []float64
		for _, s := range steps {
			if v := f.y(s); v != nil {
				x, y = append(x, s.Target), append(y, *v)
			}
		}
		if len(x) == 0 {
			continue
		}
		out = append(out, charts.Chart{
			ID: "capacity-target-" + f.id, Title: "Target's " + f.title + " vs target rate, per step",
			X:      charts.Axis{Label: "target rate (units/s)", Unit: charts.Number, ZeroBased: true},
			Y:      charts.Axis{Label: f.label, Unit: f.unit, ZeroBased: true},
			Lines:  []charts.Line{{Name: f.line, X: x, Y: y}},
			Points: []charts.Points{{Name: "step", X: x, Y: y, Shape: charts.Dot}},
		})
	}
	return out
}

// CapacityPanel is a capacity search as a section of the console and the
// HTML report: the knee, every step, and CapacityCharts.
func CapacityPanel(r *capacity.Result) Panel {
	note := "searching…"
	switch {
	case r.Outcome != "" && r.Found && r.Stopped:
		note = fmt.Sprintf("the knee is at least %s units/s: %s", pace.FormatRate(r.Knee), r.Outcome)
	case r.Outcome != "" && r.Found && !r.TargetCapacity():
		// soakd's own limit: not to be read as the target's knee.
		note = fmt.Sprintf("no knee of the target: soakd limited the search at %s units/s: %s", pace.FormatRate(r.Knee), r.Advice)
	case r.Outcome != "" && r.Found:
		note = fmt.Sprintf("knee %s units/s: %s", pace.FormatRate(r.Knee), r.Outcome)
	case r.Outcome != "":
		note = "no knee: " + r.Outcome
	case r.Found:
		note = fmt.Sprintf("searching; %s units/s passed so far", pace.FormatRate(r.Knee))
	}
	tc := report.TargetColumnsOf(r.Steps, func(s *capacity.Step) (*float64, *float64) { return s.TargetMemoryBytes, s.TargetCPUCores })
	// The target's own figures, when the watch read any, sit before the
	// verdict.
	t := &Table{Header: []string{"#", "kind", "target/s", "achieved/s", "p50", "p99", "errors", "dropped"}}
	t.Header = append(append(t.Header, tc.Header()...), "verdict")
	for _, s := range r.Steps {
		verdict := "pass"
		if !s.Pass {
			verdict = "fail: " + strings.Join(s.Reasons, "; ")
			if s.Bottleneck != "" {
				verdict += "; bottleneck: " + s.Bottleneck
			}
		}
		row := []string{fmt.Sprint(s.Index), s.Kind, pace.FormatRate(s.Target), pace.FormatRate(s.Achieved),
			seconds(s.Response.P50), seconds(s.Response.P99), fmt.Sprintf("%.3g%%", 100*s.ErrorRatio), fmt.Sprintf("%.3g%%", 100*s.DropRatio)}
		row = append(row, tc.Cells(s.TargetMemoryBytes, s.TargetCPUCores)...)
		t.Rows = append(t.Rows, append(row, verdict))
	}
	return Panel{ID: "capacity", Title: "Capacity of workload " + r.Workload, Note: note, Table: t, Charts: CapacityCharts(r)}
}

// seconds writes a latency compactly: 850µs, 12.3ms, 1.20s; a dash for
// none.
func seconds(s float64) string {
	if s == 0 {
		return "–"
	}
	return pace.FormatSeconds(s)
}
