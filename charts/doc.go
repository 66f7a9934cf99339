// Package charts renders soakd's figures as SVG and PNG, in Go, with no
// script: line charts over a shared X axis, with
// optional min–max bands around a line, point sets (e.g. passed and
// failed steps) and reference marks (a knee, an SLO, a phase boundary).
//
// The web console, the HTML report and the capacity and sweep reports all
// draw with it, so a figure looks the same wherever it is shown and is
// built once from the data that feeds it. SVG is a standalone <svg>
// element: it can be written to a .svg file, inlined in HTML (the report,
// which must open offline), or swapped into the live console. PNG draws
// the same layout (anti-aliased with golang.org/x/image/vector, text in
// the Go fonts) for files that must open anywhere.
// Styling is done with SVG presentation attributes only (no style
// attributes or <style> elements), so the console's Content-Security-Policy
// can forbid inline styles; a page may still restyle the classes
// (chart, title, grid, tick, line, band, mark, legend).
//
// Every <svg> carries class="chart" and data-chart=ID, and every line's
// path data-points=N (its finite points), so tests and scripts can check
// that a chart was drawn with data without parsing path data.
//
// A capacity report's figures, for example:
//
//	// achieved vs target rate, the knee marked
//	c := charts.Chart{ID: "capacity-rate", Title: "Achieved vs target rate",
//		X: charts.Axis{Label: "target rate", Unit: charts.Number, ZeroBased: true},
//		Y: charts.Axis{Label: "achieved rate", Unit: charts.Number, ZeroBased: true},
//		Lines: []charts.Line{
//			{Name: "ideal", X: []float64{0, max}, Y: []float64{0, max}, Dashed: true},
//			{Name: "achieved", X: targets, Y: achieved, Lo: achievedMin, Hi: achievedMax},
//		},
//		Marks: []charts.Mark{{At: knee, Label: "knee 48k/s"}},
//	}
//	svg := c.SVG()
//	img, err := c.PNG() // the same figure, twice the size, for capacity.png
//
// p50/p99 vs rate is the same with Y: Axis{Unit: charts.Seconds, Log: true}
// and a horizontal Mark at the SLO; per-step pass/fail adds Points with
// Shape Dot and Cross; a sweep's lines with min–max bands set Lo and Hi.
package charts
