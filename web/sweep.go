package web

import (
	"fmt"
	"slices"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/sweep"
)

// SweepCharts are a sweep's figures: throughput against batch size (or
// pipeline), one line per workers value with its min–max band over the
// runs; and throughput against workers at the best batch size with the
// Universal Scalability Law fitted over the measured points.
func SweepCharts(r *sweep.Result) []charts.Chart {
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
	out := []charts.Chart{batch}
	if u := r.USL; u != nil && len(u.Workers) > 0 {
		usl := charts.Chart{
			ID: "sweep-usl", Title: fmt.Sprintf("Throughput vs workers at %s %d, with the USL fit", r.BatchName, u.Batch),
			X: charts.Axis{Label: "workers", Unit: charts.Number, ZeroBased: true},
			Y: charts.Axis{Label: r.Unit + "/s", Unit: charts.Number, ZeroBased: true},
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
