package web

import (
	"slices"
	"testing"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/charts"
)

// The target's memory and CPU per step are drawn against the target
// rate, each only from the steps that have the reading, and shown in the
// panel's table before the verdict; without the watch neither chart nor
// column appears.
func TestCapacityTargetFigures(t *testing.T) {
	mem1, mem3, cores3 := 100e6, 300e6, 1.5
	r := &capacity.Result{Steps: []capacity.Step{
		{Index: 1, Kind: "step", Target: 100, Achieved: 100, Pass: true, TargetMemoryBytes: &mem1},
		{Index: 2, Kind: "step", Target: 200, Achieved: 200, Pass: true},
		{Index: 3, Kind: "step", Target: 300, Achieved: 250, TargetMemoryBytes: &mem3, TargetCPUCores: &cores3, Reasons: []string{"achieved 83% < 95%"}},
	}}
	byID := map[string]charts.Chart{}
	for _, c := range CapacityCharts(r) {
		byID[c.ID] = c
	}
	m, ok := byID["capacity-target-memory"]
	if !ok {
		t.Fatalf("no target memory chart among %v", keys(byID))
	}
	if !slices.Equal(m.Lines[0].X, []float64{100, 300}) || !slices.Equal(m.Lines[0].Y, []float64{100e6, 300e6}) || m.Y.Unit != charts.Bytes {
		t.Errorf("memory line %v → %v (unit %v), want [100 300] → [1e8 3e8] in bytes", m.Lines[0].X, m.Lines[0].Y, m.Y.Unit)
	}
	c, ok := byID["capacity-target-cpu"]
	if !ok {
		t.Fatalf("no target CPU chart among %v", keys(byID))
	}
	if !slices.Equal(c.Lines[0].X, []float64{300}) || !slices.Equal(c.Lines[0].Y, []float64{1.5}) {
		t.Errorf("CPU line %v → %v, want [300] → [1.5]", c.Lines[0].X, c.Lines[0].Y)
	}
	for _, ch := range []charts.Chart{m, c} {
		if svg := ch.SVG(); len(svg) == 0 {
			t.Errorf("%s draws nothing", ch.ID)
		}
	}

	p := CapacityPanel(r)
	want := []string{"#", "kind", "target/s", "achieved/s", "p50", "p99", "errors", "dropped", "target memory", "target CPU", "verdict"}
	if !slices.Equal(p.Table.Header, want) {
		t.Fatalf("header %q, want %q", p.Table.Header, want)
	}
	if got := p.Table.Rows[1][8:10]; !slices.Equal(got, []string{"–", "–"}) {
		t.Errorf("step without readings shows %q, want dashes", got)
	}
	if got := p.Table.Rows[2][8]; got != "286.1 MiB" {
		t.Errorf("memory cell %q, want 286.1 MiB", got)
	}
	if got := p.Table.Rows[2][9]; got != "1.50 cores" {
		t.Errorf("CPU cell %q, want 1.50 cores", got)
	}

	for i := range r.Steps {
		r.Steps[i].TargetMemoryBytes, r.Steps[i].TargetCPUCores = nil, nil
	}
	for _, ch := range CapacityCharts(r) {
		if ch.ID == "capacity-target-memory" || ch.ID == "capacity-target-cpu" {
			t.Errorf("%s drawn without any reading", ch.ID)
		}
	}
	if p := CapacityPanel(r); len(p.Table.Header) != 9 || p.Table.Header[8] != "verdict" {
		t.Errorf("header without the watch %q", p.Table.Header)
	}
}

func keys(m map[string]charts.Chart) []string {
	var k []string
	for id := range m {
		k = append(k, id)
	}
	return k
}
