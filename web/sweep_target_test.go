package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/sweep"
)

func ptr(v float64) *float64 { return &v }

// chartsByID indexes charts by ID, failing on a duplicate: two charts of
// one ID would write the same file.
func chartsByID(t *testing.T, cs []charts.Chart) map[string]charts.Chart {
	t.Helper()
	out := map[string]charts.Chart{}
	for _, c := range cs {
		if _, ok := out[c.ID]; ok {
			t.Errorf("two charts %s", c.ID)
		}
		out[c.ID] = c
	}
	return out
}

// lineXY is the X and Y of line name, and whether the chart has it.
func lineXY(c charts.Chart, name string) (x, y []float64, ok bool) {
	for _, l := range c.Lines {
		if l.Name == name {
			return l.X, l.Y, true
		}
	}
	return nil, nil, false
}

// A WORKERS × BATCH sweep with the target watch draws the target's memory
// and CPU against the batch size, one line per workers value, each
// through the points that have the figure only (a point without one is
// left out, not drawn as 0), in the same colour as that workers value's
// throughput line, and without the throughput's band. Without any
// reading neither chart is drawn. Bugs caught: a chart missing, the
// throughput or the other figure drawn in its place, a missing reading
// drawn as 0, a line in another series' colour.
func TestSweepTargetCharts(t *testing.T) {
	t.Parallel()
	r := &sweep.Result{Unit: "rows", BatchName: "BATCH_SIZE", Points: []sweep.Point{
		{Workers: 1, Batch: 100, Median: 10, Min: 9, Max: 11, TargetMemoryBytes: ptr(1e9), TargetCPUCores: ptr(0.5)},
		{Workers: 1, Batch: 1000, Median: 20, Min: 19, Max: 21, TargetMemoryBytes: ptr(1.5e9)},
		{Workers: 1, Batch: 10, Median: 5, Min: 4, Max: 6, TargetMemoryBytes: ptr(0.8e9), TargetCPUCores: ptr(0.25)},
		{Workers: 4, Batch: 100, Median: 30, Min: 29, Max: 31},
		{Workers: 4, Batch: 1000, Median: 40, Min: 39, Max: 41, TargetMemoryBytes: ptr(3e9), TargetCPUCores: ptr(1.75)},
	}}
	cs := SweepCharts(r)
	byID := chartsByID(t, cs)
	if got := ids(cs); len(got) != 3 || cs[0].ID != "sweep-batch" || cs[1].ID != "sweep-target-memory" || cs[2].ID != "sweep-target-cpu" {
		t.Fatalf("charts %v, want batch, target memory, target CPU", got)
	}
	mem, cpu := byID["sweep-target-memory"], byID["sweep-target-cpu"]
	if mem.Y.Unit != charts.Bytes || !mem.X.Log || !strings.HasPrefix(mem.Title, "Target's memory vs BATCH_SIZE") {
		t.Errorf("memory chart: unit %v, log X %v, title %q", mem.Y.Unit, mem.X.Log, mem.Title)
	}
	for _, c := range []struct {
		chart  charts.Chart
		line   string
		wx, wy []float64
	}{
		{mem, "1 workers", []float64{10, 100, 1000}, []float64{0.8e9, 1e9, 1.5e9}},
		{mem, "4 workers", []float64{1000}, []float64{3e9}},
		{cpu, "1 workers", []float64{10, 100}, []float64{0.25, 0.5}},
		{cpu, "4 workers", []float64{1000}, []float64{1.75}},
	} {
		x, y, ok := lineXY(c.chart, c.line)
		if !ok || !slices.Equal(x, c.wx) || !slices.Equal(y, c.wy) {
			t.Errorf("%s, %s: %v → %v (found %v), want %v → %v", c.chart.ID, c.line, x, y, ok, c.wx, c.wy)
		}
	}
	tp := byID["sweep-batch"]
	for _, c := range []charts.Chart{mem, cpu} {
		if len(c.Lines) != 2 || len(c.Points) != 2 {
			t.Fatalf("%s: %d lines, %d point sets, want 2 and 2", c.ID, len(c.Lines), len(c.Points))
		}
		for i, l := range c.Lines {
			if l.Lo != nil || l.Hi != nil {
				t.Errorf("%s, %s: a band %v–%v", c.ID, l.Name, l.Lo, l.Hi)
			}
			if l.Color != tp.Lines[i].Color || c.Points[i].Color != l.Color || !slices.Equal(c.Points[i].Y, l.Y) {
				t.Errorf("%s, %s: colour %s (its dots %s), the throughput's %s", c.ID, l.Name, l.Color, c.Points[i].Color, tp.Lines[i].Color)
			}
		}
		if svg := string(c.SVG()); !strings.Contains(svg, `data-series="4 workers" data-points="1"`) {
			t.Errorf("%s: the 4 workers line does not draw its one point", c.ID)
		}
	}
	if x, y, _ := lineXY(tp, "4 workers"); !slices.Equal(x, []float64{100, 1000}) || !slices.Equal(y, []float64{30, 40}) || len(tp.Lines[1].Lo) != 2 {
		t.Errorf("throughput line of 4 workers %v → %v, want [100 1000] → [30 40] with a band", x, y)
	}

	// CPU on no point: the memory chart alone.
	for i := range r.Points {
		r.Points[i].TargetCPUCores = nil
	}
	if got := ids(SweepCharts(r)); len(got) != 2 || !strings.HasPrefix(got[1], "sweep-target-memory:") {
		t.Errorf("without CPU readings: %v", got)
	}
	for i := range r.Points {
		r.Points[i].TargetMemoryBytes = nil
	}
	if got := ids(SweepCharts(r)); len(got) != 1 {
		t.Errorf("without the watch: %v, want the throughput chart alone", got)
	}
}

// A grid sweep draws the target's figures against each axis, as its
// throughput: one line per combination of the other axes' values, in
// order of X, after the USL figure. Bugs caught: the figures drawn
// against one axis only, a line's points out of order or taken from
// another combination.
func TestSweepGridTargetCharts(t *testing.T) {
	t.Parallel()
	r := &sweep.Result{Unit: "rows", BatchName: "BATCH_SIZE",
		Axes: []sweep.Axis{{Name: "DATA_TYPE", Values: []string{"string", "hash"}}, {Name: "SCALE", Values: []string{"1000", "10", "100"}, Numeric: true}},
		USL:  &sweep.USL{Workers: []int{1, 2, 4}, Measured: []float64{1, 2, 3}}}
	for d, dt := range []string{"string", "hash"} {
		for _, sc := range []string{"1000", "10", "100"} {
			p := sweep.Point{AxisValues: []string{dt, sc}, Median: 1, Min: 1, Max: 1}
			if !(dt == "hash" && sc == "10") { // a point without readings
				var n float64
				switch sc {
				case "10":
					n = 1
				case "100":
					n = 2
				case "1000":
					n = 3
				}
				p.TargetMemoryBytes, p.TargetCPUCores = ptr(float64(d+1)*1e6*n), ptr(float64(d+1)*n/10)
			}
			r.Points = append(r.Points, p)
		}
	}
	cs := SweepCharts(r)
	var got []string
	for _, c := range cs {
		got = append(got, c.ID)
	}
	want := []string{"sweep-data_type", "sweep-scale", "sweep-usl", "sweep-data_type-target-memory", "sweep-scale-target-memory",
		"sweep-data_type-target-cpu", "sweep-scale-target-cpu"}
	if !slices.Equal(got, want) {
		t.Fatalf("charts %v, want %v", got, want)
	}
	byID := chartsByID(t, cs)
	for _, c := range []struct {
		id, line string
		wx, wy   []float64
	}{
		{"sweep-scale-target-memory", "DATA_TYPE=string", []float64{10, 100, 1000}, []float64{1e6, 2e6, 3e6}},
		{"sweep-scale-target-memory", "DATA_TYPE=hash", []float64{100, 1000}, []float64{4e6, 6e6}},
		{"sweep-scale-target-cpu", "DATA_TYPE=hash", []float64{100, 1000}, []float64{0.4, 0.6}},
		{"sweep-data_type-target-memory", "SCALE=1000", []float64{0, 1}, []float64{3e6, 6e6}},
		{"sweep-data_type-target-memory", "SCALE=10", []float64{0}, []float64{1e6}},
		{"sweep-data_type-target-cpu", "SCALE=100", []float64{0, 1}, []float64{0.2, 0.4}},
	} {
		x, y, ok := lineXY(byID[c.id], c.line)
		if !ok || !slices.Equal(x, c.wx) || !slices.Equal(y, c.wy) {
			t.Errorf("%s, %s: %v → %v (found %v), want %v → %v", c.id, c.line, x, y, ok, c.wx, c.wy)
		}
	}
	if c := byID["sweep-data_type-target-memory"]; strings.Join(c.X.Categories, " ") != "string hash" || c.Y.Unit != charts.Bytes {
		t.Errorf("DATA_TYPE memory chart: categories %v, unit %v", c.X.Categories, c.Y.Unit)
	}
}
