package web

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/sweep"
)

// SweepCharts are a sweep's figures: throughput against batch size (or
// pipeline), one line per workers value with its min–max band over the
// runs; and throughput against workers at the best batch size with the
// Universal Scalability Law fitted over the measured points.
//
// A grid sweep (SOAKD_SWEEP_GRID) has one figure per axis instead of the
// first: throughput against that axis's values, one line per combination
// of the other axes' values, the values of DATA_TYPE, TARGET and the
// like (not all numbers) as categories; the USL figure when WORKERS is
// an axis of at least three values.
//
// With the target watch, the target's memory and the cores it used are
// drawn the same way as the throughput (against batch size, or against
// each axis), each only when some point has the figure and each line
// only through the points that have it: a point without a reading is
// left out, never drawn as 0. Is a throughput that stops growing
// memory- or CPU-bound?
func SweepCharts(r *sweep.Result) []charts.Chart {
	// The throughput is the figure the best point is ranked and the USL
	// fitted by (sweep.Result.Rank): values/s over a series source in a
	// grid, whose rows an axis such as COLUMNS may widen; units/s
	// otherwise.
	thr := sweepFigure{
		title: "Throughput", label: r.RankUnit() + "/s", unit: charts.Number,
		y:    func(p sweep.Point) (float64, bool) { return p.Median, true },
		band: func(p sweep.Point) (float64, float64) { return p.Min, p.Max },
	}
	if r.RankUnit() != r.Unit {
		thr.y = func(p sweep.Point) (float64, bool) { return p.ValueMedian, true }
		thr.band = func(p sweep.Point) (float64, float64) { return p.ValueMin, p.ValueMax }
	}
	figs := []sweepFigure{thr}
	var tail []charts.Chart
	figs = append(figs, targetFigures(r)...)
	var out []charts.Chart
	for i, f := range figs {
		var cs []charts.Chart
		if r.Grid() {
			for a := range r.Axes {
				cs = append(cs, gridChart(r, a, f))
			}
		} else {
			cs = append(cs, batchChart(r, f))
		}
		if i == 0 {
			out = append(append(out, cs...), uslChart(r)...)
			continue
		}
		tail = append(tail, cs...)
	}
	return append(out, tail...)
}

// sweepFigure is one figure of a sweep's points, drawn against BATCH_SIZE
// or against each axis of a grid.
type sweepFigure struct {
	// id is appended to the chart's ID ("" for the throughput): e.g.
	// -target-memory gives sweep-target-memory, or sweep-scale-target-memory
	// in a grid.
	id    string
	title string // the figure's name at the head of the title
	what  string // how the point's figure comes from its runs, in the title
	label string // the Y axis's
	unit  charts.Unit
	// band is the min–max band over the point's runs (the throughput's),
	// nil for none.
	band func(sweep.Point) (lo, hi float64)
	// y is the point's figure, and whether it has one.
	y func(sweep.Point) (float64, bool)
}

// targetFigures are the target's memory and CPU as figures, each only
// when some point has it.
func targetFigures(r *sweep.Result) []sweepFigure {
	mem := sweepFigure{id: "-target-memory", title: "Target's memory", what: "peak over the point's runs", label: "target memory", unit: charts.Bytes,
		y: func(p sweep.Point) (float64, bool) { return deref(p.TargetMemoryBytes) }}
	cpu := sweepFigure{id: "-target-cpu", title: "Target's CPU", what: "cores over the point's runs", label: "target CPU (cores)", unit: charts.Number,
		y: func(p sweep.Point) (float64, bool) { return deref(p.TargetCPUCores) }}
	var out []sweepFigure
	for _, f := range []sweepFigure{mem, cpu} {
		if slices.ContainsFunc(r.Points, func(p sweep.Point) bool { _, ok := f.y(p); return ok }) {
			out = append(out, f)
		}
	}
	return out
}

func deref(v *float64) (float64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

// batchChart is figure f against BATCH_SIZE (PIPELINE), one line per
// workers value.
func batchChart(r *sweep.Result, f sweepFigure) charts.Chart {
	byW := map[int][]sweep.Point{}
	var workers []int
	for _, p := range r.Points {
		if _, ok := byW[p.Workers]; !ok {
			workers = append(workers, p.Workers)
		}
		byW[p.Workers] = append(byW[p.Workers], p)
	}
	slices.Sort(workers)
	id, what := "sweep-batch", "median, min–max band"
	if f.id != "" {
		id, what = "sweep"+f.id, f.what
	}
	c := charts.Chart{
		ID: id, Title: fmt.Sprintf("%s vs %s, per WORKERS (%s)", f.title, r.BatchName, what),
		X: charts.Axis{Label: r.BatchName, Unit: charts.Number, Log: true},
		Y: charts.Axis{Label: f.label, Unit: f.unit, ZeroBased: true},
	}
	for i, w := range workers {
		pts := byW[w]
		slices.SortFunc(pts, func(a, b sweep.Point) int { return a.Batch - b.Batch })
		l := charts.Line{Name: fmt.Sprintf("%d workers", w)}
		for _, p := range pts {
			if v, ok := f.y(p); ok {
				l.X, l.Y = append(l.X, float64(p.Batch)), append(l.Y, v)
				if f.band != nil {
					lo, hi := f.band(p)
					l.Lo, l.Hi = append(l.Lo, lo), append(l.Hi, hi)
				}
			}
		}
		addLine(&c, l, i, f)
	}
	return c
}

// addLine adds line l, the i-th of its chart's series, unless it has no
// point. Its colour is the i-th of the palette whether or not the lines
// before it had points, so a series keeps its colour from the throughput
// to the target's figures. A target figure's points are also drawn as
// dots: a point whose neighbours have no reading stands alone.
func addLine(c *charts.Chart, l charts.Line, i int, f sweepFigure) {
	if len(l.X) == 0 {
		return
	}
	l.Color = charts.Palette[i%len(charts.Palette)]
	c.Lines = append(c.Lines, l)
	if f.band == nil {
		c.Points = append(c.Points, charts.Points{X: l.X, Y: l.Y, Shape: charts.Dot, Color: l.Color})
	}
}

// gridChart is figure f against axis a of a grid sweep, one line per
// combination of the other axes' values (the throughput with its
// min–max band).
func gridChart(r *sweep.Result, a int, f sweepFigure) charts.Chart {
	ax := r.Axes[a]
	what := "median, min–max band"
	if f.id != "" {
		what = f.what
	}
	c := charts.Chart{
		ID:    "sweep-" + strings.ToLower(ax.Name) + f.id,
		Title: fmt.Sprintf("%s vs %s (%s)", f.title, ax.Name, what),
		X:     charts.Axis{Label: ax.Name, Unit: charts.Number},
		Y:     charts.Axis{Label: f.label, Unit: f.unit, ZeroBased: true},
	}
	x := func(v string) float64 { return float64(slices.Index(ax.Values, v)) }
	if ax.Numeric {
		lo, hi := 0.0, 0.0
		for i, v := range ax.Values {
			n, _ := strconv.ParseFloat(v, 64)
			if i == 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		// Settings swept over decades (SCALE=1000,10000,100000) read on
		// a log axis; a few close values on a linear one.
		c.X.Log = lo > 0 && hi/lo >= 20
		c.X.ZeroBased = !c.X.Log
		x = func(v string) float64 { n, _ := strconv.ParseFloat(v, 64); return n }
	} else {
		c.X.Categories = ax.Values
	}
	lines := map[string]*charts.Line{}
	var order []string
	for _, p := range r.Points {
		var others []string
		for i, v := range p.AxisValues {
			if i != a {
				others = append(others, r.Axes[i].Name+"="+v)
			}
		}
		name := strings.Join(others, " ")
		l, ok := lines[name]
		if !ok {
			l = &charts.Line{Name: name}
			if name == "" {
				l.Name = r.RankUnit() + "/s"
				if f.id != "" {
					l.Name = f.label
				}
			}
			lines[name] = l
			order = append(order, name)
		}
		if v, ok := f.y(p); ok {
			l.X, l.Y = append(l.X, x(p.AxisValues[a])), append(l.Y, v)
			if f.band != nil {
				lo, hi := f.band(p)
				l.Lo, l.Hi = append(l.Lo, lo), append(l.Hi, hi)
			}
		}
	}
	for i, name := range order {
		addLine(&c, byX(*lines[name]), i, f)
	}
	return c
}

// byX orders a line's points by X: a grid's values may be given in any
// order, and a line drawn in that order would double back.
func byX(l charts.Line) charts.Line {
	idx := make([]int, len(l.X))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case l.X[a] < l.X[b]:
			return -1
		case l.X[a] > l.X[b]:
			return 1
		}
		return 0
	})
	out := charts.Line{Name: l.Name}
	for _, i := range idx {
		out.X, out.Y = append(out.X, l.X[i]), append(out.Y, l.Y[i])
		if len(l.Lo) > 0 {
			out.Lo, out.Hi = append(out.Lo, l.Lo[i]), append(out.Hi, l.Hi[i])
		}
	}
	return out
}

// uslChart is throughput against workers where the USL was fitted, with
// the fitted curve; none without a fit.
func uslChart(r *sweep.Result) []charts.Chart {
	var out []charts.Chart
	if u := r.USL; u != nil && len(u.Workers) > 0 {
		where := fmt.Sprintf("%s %d", r.BatchName, u.Batch)
		if r.Grid() {
			where = strings.Join(u.Where, " ")
		}
		usl := charts.Chart{
			ID: "sweep-usl", Title: fmt.Sprintf("Throughput vs workers at %s, with the USL fit", where),
			X: charts.Axis{Label: "workers", Unit: charts.Number, ZeroBased: true},
			Y: charts.Axis{Label: r.RankUnit() + "/s", Unit: charts.Number, ZeroBased: true},
		}
		m := charts.Points{Name: "measured (median)", Shape: charts.Dot}
		for i, w := range u.Workers {
			m.X, m.Y = append(m.X, float64(w)), append(m.Y, u.Measured[i])
		}
		usl.Points = append(usl.Points, m)
		if u.Lambda > 0 {
			fit := charts.Line{Name: "USL fit", Dashed: true}
			hi := float64(u.Workers[len(u.Workers)-1]) * 1.5
			for i := 0; i <= 60; i++ {
				n := 1 + (hi-1)*float64(i)/60
				fit.X, fit.Y = append(fit.X, n), append(fit.Y, u.At(n))
			}
			usl.Lines = append(usl.Lines, fit)
		}
		out = append(out, usl)
	}
	return out
}
