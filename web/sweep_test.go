package web

import (
	"strconv"
	"strings"
	"testing"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/sweep"
)

// A grid sweep's figures: one per axis, throughput against that axis's
// values with one line per combination of the other axes' values, in
// order of X whatever the order the values were given in; a TARGET axis
// is categorical; the USL figure only when the result has a fit.
func TestSweepGridCharts(t *testing.T) {
	t.Parallel()
	r := &sweep.Result{Unit: "rows", BatchName: "BATCH_SIZE",
		Axes: []sweep.Axis{{Name: "TARGET", Values: []string{"postgres://a", "postgres://b"}}, {Name: "SCALE", Values: []string{"1000", "10", "100"}, Numeric: true}}}
	for _, tg := range []string{"postgres://a", "postgres://b"} {
		for i, sc := range []string{"1000", "10", "100"} {
			m := float64(100 * (i + 1))
			r.Points = append(r.Points, sweep.Point{AxisValues: []string{tg, sc}, Median: m, Min: m - 1, Max: m + 1})
		}
	}
	cs := SweepCharts(r)
	if len(cs) != 2 || cs[0].ID != "sweep-target" || cs[1].ID != "sweep-scale" {
		t.Fatalf("charts %v, want one per axis and no USL", ids(cs))
	}
	tg, sc := cs[0], cs[1]
	if strings.Join(tg.X.Categories, " ") != "postgres://a postgres://b" || len(tg.Lines) != 3 || tg.Lines[0].Name != "SCALE=1000" ||
		len(tg.Lines[0].X) != 2 || tg.Lines[0].X[1] != 1 {
		t.Errorf("TARGET chart: categories %v, lines %+v", tg.X.Categories, tg.Lines)
	}
	if sc.X.Categories != nil || !sc.X.Log || len(sc.Lines) != 2 || sc.Lines[1].Name != "TARGET=postgres://b" {
		t.Fatalf("SCALE chart: %+v", sc)
	}
	if l := sc.Lines[0]; l.X[0] != 10 || l.X[2] != 1000 || l.Y[0] != 200 || l.Y[2] != 100 || l.Lo[2] != 99 {
		t.Errorf("SCALE line not in order of X: %+v", l)
	}
	r.USL = &sweep.USL{Workers: []int{1, 2, 4}, Measured: []float64{1, 2, 3}, Where: []string{"TARGET=postgres://a"}}
	if cs := SweepCharts(r); len(cs) != 3 || cs[2].ID != "sweep-usl" || !strings.Contains(cs[2].Title, "at TARGET=postgres://a,") {
		t.Errorf("with a fit: %v", ids(cs))
	}
}

func ids(cs []charts.Chart) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID+": "+c.Title)
	}
	return out
}

// Over a series source the grid's charts draw values/s (points/s), the
// figure the best point is ranked and the USL fitted by: along COLUMNS,
// rows/s fall as the rows widen while values/s rise. A sweep of
// operations draws ops/s. Bug caught: a chart that says the narrowest
// rows were fastest beside a report that ranks the widest best.
func TestSweepGridChartsValues(t *testing.T) {
	t.Parallel()
	r := &sweep.Result{Unit: "rows", BatchName: "BATCH_SIZE", Values: true,
		Axes: []sweep.Axis{{Name: "COLUMNS", Values: []string{"1", "100"}, Numeric: true}}}
	for _, c := range []float64{1, 100} {
		rows := map[float64]float64{1: 3000, 100: 50}[c]
		r.Points = append(r.Points, sweep.Point{AxisValues: []string{strconv.FormatFloat(c, 'f', -1, 64)}, Median: rows, Min: rows - 1, Max: rows + 1,
			ValueMedian: rows * c, ValueMin: (rows - 1) * c, ValueMax: (rows + 1) * c})
	}
	cs := SweepCharts(r)
	if l := cs[0].Lines[0]; cs[0].Y.Label != "values/s" || l.Name != "values/s" || l.Y[0] != 3000 || l.Y[1] != 5000 || l.Lo[1] != 4900 || l.Hi[0] != 3001 {
		t.Errorf("COLUMNS chart: Y %q, line %+v; want values/s 3000, 5000 with their bands", cs[0].Y.Label, cs[0].Lines[0])
	}
	r.Unit, r.Values = "ops", false
	if l := SweepCharts(r)[0].Lines[0]; SweepCharts(r)[0].Y.Label != "ops/s" || l.Y[0] != 3000 || l.Y[1] != 50 {
		t.Errorf("ops: line %+v", l)
	}
}
