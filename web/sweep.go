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
func SweepCharts(r *sweep.Result) []charts.Chart {
	if r.Grid() {
		out := make([]charts.Chart, 0, len(r.Axes)+1)
		for i := range r.Axes {
			out = append(out, gridChart(r, i))
		}
		return append(out, uslChart(r)...)
	}
	byW := map[int][]sweep.Point{}
	var workers []int
	for _, p := range r.Points {
		if _, ok := byW[p.Workers]; !ok {
			workers = append(workers, p.Workers)
		}
		byW[p.Workers] = append(byW[p.Workers], p)
	}
	slices.Sort(workers)
	batch := charts.Chart{
		ID: "sweep-batch", Title: fmt.Sprintf("Throughput vs %s, per WORKERS (median, min–max band)", r.BatchName),
		X: charts.Axis{Label: r.BatchName, Unit: charts.Number, Log: true},
		Y: charts.Axis{Label: r.Unit + "/s", Unit: charts.Number, ZeroBased: true},
	}
	for _, w := range workers {
		pts := byW[w]
		slices.SortFunc(pts, func(a, b sweep.Point) int { return a.Batch - b.Batch })
		l := charts.Line{Name: fmt.Sprintf("%d workers", w)}
		for _, p := range pts {
			l.X, l.Y = append(l.X, float64(p.Batch)), append(l.Y, p.Median)
			l.Lo, l.Hi = append(l.Lo, p.Min), append(l.Hi, p.Max)
		}
		batch.Lines = append(batch.Lines, l)
	}
	return append([]charts.Chart{batch}, uslChart(r)...)
}

// gridChart is throughput against axis a of a grid sweep, one line per
// combination of the other axes' values, with its min–max band. The
// figure is the one the best point is ranked and the USL fitted by
// (sweep.Result.Rank): values/s over a series source, whose rows an
// axis such as COLUMNS may widen; units/s otherwise.
func gridChart(r *sweep.Result, a int) charts.Chart {
	ax := r.Axes[a]
	c := charts.Chart{
		ID:    "sweep-" + strings.ToLower(ax.Name),
		Title: fmt.Sprintf("Throughput vs %s (median, min–max band)", ax.Name),
		X:     charts.Axis{Label: ax.Name, Unit: charts.Number},
		Y:     charts.Axis{Label: r.RankUnit() + "/s", Unit: charts.Number, ZeroBased: true},
	}
	fig := func(p sweep.Point) (med, lo, hi float64) { return p.Median, p.Min, p.Max }
	if r.RankUnit() != r.Unit {
		fig = func(p sweep.Point) (med, lo, hi float64) { return p.ValueMedian, p.ValueMin, p.ValueMax }
	}
	x := func(v string) float64 { return float64(slices.Index(ax.Values, v)) }
	if ax.Numeric {
		lo, hi := 0.0, 0.0
		for i, v := range ax.Values {
			f, _ := strconv.ParseFloat(v, 64)
			if i == 0 || f < lo {
				lo = f
			}
			hi = max(hi, f)
		}
		// Settings swept over decades (SCALE=1000,10000,100000) read on
		// a log axis; a few close values on a linear one.
		c.X.Log = lo > 0 && hi/lo >= 20
		c.X.ZeroBased = !c.X.Log
		x = func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f }
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
			}
			lines[name] = l
			order = append(order, name)
		}
		med, lo, hi := fig(p)
		l.X, l.Y = append(l.X, x(p.AxisValues[a])), append(l.Y, med)
		l.Lo, l.Hi = append(l.Lo, lo), append(l.Hi, hi)
	}
	for _, name := range order {
		c.Lines = append(c.Lines, byX(*lines[name]))
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
		out.Lo, out.Hi = append(out.Lo, l.Lo[i]), append(out.Hi, l.Hi[i])
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
