package charts

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
)

// Chart is one figure: lines, bands, points and marks over two axes.
// The zero value of every optional field is a sensible default.
type Chart struct {
	// ID names the chart in the output (data-chart), stable across
	// renderings; Title is drawn above the plot.
	ID, Title string
	X, Y      Axis
	Lines     []Line
	Points    []Points
	Marks     []Mark
	// Width and Height are the size in pixels (default 640×240).
	Width, Height int
}

// Axis describes one axis.
type Axis struct {
	Label string // drawn beside the axis; "" = none
	Unit  Unit   // how tick labels are written
	// Log makes the axis logarithmic (base 10); values ≤ 0 are left out.
	Log bool
	// ZeroBased includes 0 in a linear axis (rates, counts).
	ZeroBased bool
	// Min and Max fix the range when Max > Min; otherwise it follows the
	// data (and the marks on this axis).
	Min, Max float64
	// Categories, when set, make the axis categorical (the values of a
	// sweep's DATA_TYPE or TARGET): value i is Categories[i], the values
	// evenly spaced, each tick labelled with its name.
	Categories []string
}

// Unit says how an axis's values are written.
type Unit int

// Units of an axis.
const (
	Number  Unit = iota // 950, 1.5k, 2M
	Seconds             // a duration in seconds: 850µs, 12ms, 1.5s
	Bytes               // 512B, 1.5kB, 2MB (powers of 1000)
	Elapsed             // time since a start in seconds: 45s, 2m30s, 1h05m
	Percent             // a fraction: 0.5 is 50%
)

// Line is a series of (X, Y) points joined in order. A NaN Y leaves a gap.
type Line struct {
	Name string
	X, Y []float64
	// Lo and Hi, when set (same length as X), draw a shaded band from Lo
	// to Hi around the line: the min–max of downsampled data or of
	// repeated runs.
	Lo, Hi []float64
	Dashed bool
	Color  string // "" = the next colour of Palette
}

// Shape is how Points are drawn.
type Shape int

// Shapes of Points.
const (
	Dot   Shape = iota // a filled circle (e.g. a step that passed)
	Cross              // an ×  (e.g. a step that failed)
)

// Points are unconnected markers.
type Points struct {
	Name  string
	X, Y  []float64
	Shape Shape
	Color string // "" = the next colour of Palette
}

// Mark is a labelled reference line across the plot: vertical at X = At,
// or horizontal at Y = At.
type Mark struct {
	At         float64
	Horizontal bool
	Label      string
	Color      string // "" = grey
}

// Palette is the order in which series get their colours.
var Palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

const (
	defaultWidth  = 640
	defaultHeight = 240
	fontSize      = 11
	charWidth     = 6.2 // average advance of a fontSize sans-serif glyph
	marginLeft    = 58
	marginRight   = 14
	marginBottom  = 22
	titleHeight   = 18
	legendRow     = 14
)

// scale maps data values to pixels along one axis.
type scale struct {
	lo, hi   float64 // data range (log10 of it for a log axis)
	p0, p1   float64 // pixel range
	log      bool
	ok       bool // the axis has a range (some data)
	unit     Unit
	ticks    []float64
	tickStep float64
	cats     []string
}

// label is tick t's label.
func (s *scale) label(t float64) string {
	if i := int(math.Round(t)); len(s.cats) > 0 && i >= 0 && i < len(s.cats) {
		return s.cats[i]
	}
	return format(t, s.unit, s.tickStep)
}

func (s *scale) pos(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// valid reports whether v can be drawn on this axis.
func (s *scale) valid(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!s.log || v > 0)
}

// SVG renders the chart as a standalone <svg> element.
func (c *Chart) SVG() []byte {
	w, h := c.Width, c.Height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	legend := c.legendItems()
	rows := legendRows(legend, float64(w-marginLeft-marginRight))
	top := float64(titleHeight + len(rows)*legendRow + 6)
	xs := c.xScale(float64(marginLeft), float64(w-marginRight))
	ys := c.yScale(float64(h-marginBottom), top)

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" font-family="sans-serif" font-size="%d">`,
		esc(c.ID), w, h, w, h, esc(c.Title), fontSize)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="13" font-weight="bold" fill="currentColor">%s</text>`, marginLeft, esc(c.Title))
	c.writeLegend(&b, legend, rows)
	c.writeAxes(&b, &xs, &ys, w, h, top)
	if !xs.ok || !ys.ok {
		fmt.Fprintf(&b, `<text class="empty" x="%.1f" y="%.1f" text-anchor="middle" fill="#888">no data yet</text>`,
			float64(w+marginLeft-marginRight)/2, (top+float64(h-marginBottom))/2)
	}
	c.writeSeries(&b, &xs, &ys)
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// colours assigns each line and point set its colour, in order.
func (c *Chart) colours() (lines, points []string) {
	i := 0
	next := func(set string) string {
		if set != "" {
			return set
		}
		col := Palette[i%len(Palette)]
		i++
		return col
	}
	for _, l := range c.Lines {
		lines = append(lines, next(l.Color))
	}
	for _, p := range c.Points {
		points = append(points, next(p.Color))
	}
	return lines, points
}

type legendItem struct {
	name, colour string
	dashed       bool
	shape        Shape
	point        bool
}

func (c *Chart) legendItems() []legendItem {
	lc, pc := c.colours()
	var out []legendItem
	for i, l := range c.Lines {
		if l.Name != "" {
			out = append(out, legendItem{name: l.Name, colour: lc[i], dashed: l.Dashed})
		}
	}
	for i, p := range c.Points {
		if p.Name != "" {
			out = append(out, legendItem{name: p.Name, colour: pc[i], shape: p.Shape, point: true})
		}
	}
	return out
}

func itemWidth(it legendItem) float64 { return 22 + float64(len([]rune(it.name)))*charWidth + 12 }

// legendRows splits the legend into rows that fit width.
func legendRows(items []legendItem, width float64) [][]legendItem {
	var rows [][]legendItem
	var row []legendItem
	used := 0.0
	for _, it := range items {
		iw := itemWidth(it)
		if len(row) > 0 && used+iw > width {
			rows = append(rows, row)
			row, used = nil, 0
		}
		row = append(row, it)
		used += iw
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

func (c *Chart) writeLegend(b *bytes.Buffer, items []legendItem, rows [][]legendItem) {
	if len(items) == 0 {
		return
	}
	b.WriteString(`<g class="legend">`)
	for r, row := range rows {
		x := float64(marginLeft)
		y := float64(titleHeight + r*legendRow + 10)
		for _, it := range row {
			if it.point {
				writeShape(b, it.shape, x+8, y-4, it.colour)
			} else {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`,
					x, y-4, x+16, y-4, esc(it.colour), dash(it.dashed))
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="currentColor">%s</text>`, x+20, y, esc(it.name))
			x += itemWidth(it)
		}
	}
	b.WriteString(`</g>`)
}

func dash(d bool) string {
	if d {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

func writeShape(b *bytes.Buffer, s Shape, x, y float64, colour string) {
	switch s {
	case Cross:
		fmt.Fprintf(b, `<path class="point" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2" fill="none"/>`,
			x-4, y-4, x+4, y+4, x-4, y+4, x+4, y-4, esc(colour))
	default:
		fmt.Fprintf(b, `<circle class="point" cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, x, y, esc(colour))
	}
}

// xScale and yScale fit each axis to the data and marks on it.
func (c *Chart) xScale(p0, p1 float64) scale {
	var vals [][]float64
	for _, l := range c.Lines {
		vals = append(vals, l.X)
	}
	for _, p := range c.Points {
		vals = append(vals, p.X)
	}
	var marks []float64
	for _, m := range c.Marks {
		if !m.Horizontal {
			marks = append(marks, m.At)
		}
	}
	return fit(c.X, vals, marks, p0, p1, true)
}

func (c *Chart) yScale(p0, p1 float64) scale {
	var vals [][]float64
	for _, l := range c.Lines {
		vals = append(vals, onlyWhereX(l.Y, l.X), onlyWhereX(l.Lo, l.X), onlyWhereX(l.Hi, l.X))
	}
	for _, p := range c.Points {
		vals = append(vals, p.Y)
	}
	var marks []float64
	for _, m := range c.Marks {
		if m.Horizontal {
			marks = append(marks, m.At)
		}
	}
	return fit(c.Y, vals, marks, p0, p1, false)
}

// onlyWhereX drops values whose X is not finite (they are not drawn).
func onlyWhereX(v, x []float64) []float64 {
	n := min(len(v), len(x))
	out := v[:n]
	for i := 0; i < n; i++ {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) {
			out = append([]float64(nil), v[:n]...)
			for j := i; j < n; j++ {
				if math.IsNaN(x[j]) || math.IsInf(x[j], 0) {
					out[j] = math.NaN()
				}
			}
			break
		}
	}
	return out
}

func fit(a Axis, vals [][]float64, marks []float64, p0, p1 float64, isX bool) scale {
	s := scale{p0: p0, p1: p1, log: a.Log, unit: a.Unit}
	if n := len(a.Categories); n > 0 {
		s.cats, s.log, s.ok = a.Categories, false, true
		s.lo, s.hi = -0.5, float64(n)-0.5
		for i := range n {
			s.ticks = append(s.ticks, float64(i))
		}
		return s
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	consider := func(v float64) {
		if s.valid(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, vs := range vals {
		for _, v := range vs {
			consider(v)
		}
	}
	dataOK := lo <= hi
	for _, m := range marks {
		consider(m)
	}
	if a.Max > a.Min {
		lo, hi = a.Min, a.Max
		dataOK = true
	}
	if !dataOK {
		// No data: an axis from 0 to 1 so the frame still draws.
		lo, hi = 0, 1
		if s.log {
			lo, hi = 1, 10
		}
	}
	s.ok = dataOK
	if s.log {
		lo, hi = math.Log10(lo), math.Log10(hi)
		if hi-lo < 1 {
			mid := (lo + hi) / 2
			lo, hi = mid-0.5, mid+0.5
		}
		if !(a.Max > a.Min) {
			pad := (hi - lo) * 0.04 // keep the extremes off the frame
			lo, hi = lo-pad, hi+pad
		}
		s.lo, s.hi = lo, hi
		s.ticks = logTicks(lo, hi)
		return s
	}
	if a.ZeroBased && !(a.Max > a.Min) {
		lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	}
	if hi == lo {
		d := math.Abs(hi) / 10
		if d == 0 {
			d = 1
		}
		if a.ZeroBased && lo == 0 {
			hi += d
		} else {
			lo, hi = lo-d, hi+d
		}
	}
	step := niceStep(hi-lo, a.Unit, 5)
	if !isX && !(a.Max > a.Min) {
		// Round the value axis outwards to whole ticks.
		lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	}
	s.lo, s.hi, s.tickStep = lo, hi, step
	for t := math.Ceil(lo/step-1e-9) * step; t <= hi+step*1e-9; t += step {
		s.ticks = append(s.ticks, t)
	}
	return s
}

// niceStep is a tick step of 1, 2 or 5 × 10^k (for Elapsed: whole
// seconds, minutes or hours) giving about n ticks over span.
func niceStep(span float64, u Unit, n int) float64 {
	raw := span / float64(n)
	if u == Elapsed && raw >= 1 {
		for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
			if s >= raw {
				return s
			}
		}
		return math.Ceil(raw/86400) * 86400
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// logTicks are the powers of ten in [lo, hi] (log10 values), with 2 and 5
// times them when the axis spans few decades.
func logTicks(lo, hi float64) []float64 {
	var out []float64
	mults := []float64{1}
	if hi-lo <= 2.5 {
		mults = []float64{1, 2, 5}
	}
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if l := math.Log10(v); l >= lo-1e-9 && l <= hi+1e-9 {
				out = append(out, v)
			}
		}
	}
	return out
}

func (c *Chart) writeAxes(b *bytes.Buffer, xs, ys *scale, w, h int, top float64) {
	left, right, bottom := float64(marginLeft), float64(w-marginRight), float64(h-marginBottom)
	b.WriteString(`<g class="grid" stroke="#888" stroke-opacity="0.25" stroke-width="1">`)
	for _, t := range ys.ticks {
		y := ys.pos(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, left, y, right, y)
	}
	for _, t := range xs.ticks {
		x := xs.pos(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, top, x, bottom)
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<path class="frame" d="M%.1f %.1fV%.1fH%.1f" stroke="#888" fill="none"/>`, left, top, bottom, right)
	b.WriteString(`<g class="tick" fill="currentColor" fill-opacity="0.8">`)
	if ys.ok {
		for _, t := range ys.ticks {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-4, ys.pos(t)+4, esc(ys.label(t)))
		}
	}
	if xs.ok {
		for _, t := range xs.ticks {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xs.pos(t), bottom+14, esc(xs.label(t)))
		}
	}
	b.WriteString(`</g>`)
	if c.Y.Label != "" {
		fmt.Fprintf(b, `<text class="axis-label" x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle" fill="currentColor" fill-opacity="0.8">%s</text>`,
			(top+bottom)/2, (top+bottom)/2, esc(c.Y.Label))
	}
	if c.X.Label != "" {
		fmt.Fprintf(b, `<text class="axis-label" x="%.1f" y="%.1f" text-anchor="end" fill="currentColor" fill-opacity="0.8">%s</text>`,
			right, top-3, esc(c.X.Label))
	}
}

func (c *Chart) writeSeries(b *bytes.Buffer, xs, ys *scale) {
	lc, pc := c.colours()
	clipLo, clipHi := math.Min(ys.p0, ys.p1), math.Max(ys.p0, ys.p1)
	clampY := func(y float64) float64 { return math.Min(math.Max(y, clipLo), clipHi) }
	b.WriteString(`<g class="bands">`)
	for i, l := range c.Lines {
		if len(l.Lo) == 0 || len(l.Hi) == 0 {
			continue
		}
		for _, run := range runs(len(l.X), func(j int) bool {
			return j < len(l.Lo) && j < len(l.Hi) && xs.valid(l.X[j]) && ys.valid(l.Lo[j]) && ys.valid(l.Hi[j])
		}) {
			var d bytes.Buffer
			for k, j := range run {
				moveOrLine(&d, k == 0, xs.pos(l.X[j]), clampY(ys.pos(l.Hi[j])))
			}
			for k := len(run) - 1; k >= 0; k-- {
				j := run[k]
				moveOrLine(&d, false, xs.pos(l.X[j]), clampY(ys.pos(l.Lo[j])))
			}
			d.WriteByte('Z')
			fmt.Fprintf(b, `<path class="band" data-series="%s" d="%s" fill="%s" fill-opacity="0.18" stroke="none"/>`, esc(l.Name), d.String(), esc(lc[i]))
		}
	}
	b.WriteString(`</g><g class="marks">`)
	labels := c.markLabels(xs, ys)
	for i, m := range c.Marks {
		col := m.Color
		if col == "" {
			col = "#666"
		}
		if m.Horizontal {
			if !ys.valid(m.At) {
				continue
			}
			y := ys.pos(m.At)
			fmt.Fprintf(b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`, xs.p0, y, xs.p1, y, esc(col))
		} else {
			if !xs.valid(m.At) {
				continue
			}
			x := xs.pos(m.At)
			fmt.Fprintf(b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`, x, ys.p1, x, ys.p0, esc(col))
		}
		l := labels[i]
		anchor := ""
		if l.end {
			anchor = ` text-anchor="end"`
		}
		fmt.Fprintf(b, `<text class="mark-label" x="%.1f" y="%.1f"%s fill="%s">%s</text>`, l.x, l.y, anchor, esc(col), esc(m.Label))
	}
	b.WriteString(`</g><g class="lines" fill="none" stroke-width="1.6" stroke-linejoin="round">`)
	for i, l := range c.Lines {
		n := 0
		var d bytes.Buffer
		for _, run := range runs(min(len(l.X), len(l.Y)), func(j int) bool { return xs.valid(l.X[j]) && ys.valid(l.Y[j]) }) {
			for k, j := range run {
				moveOrLine(&d, k == 0, xs.pos(l.X[j]), clampY(ys.pos(l.Y[j])))
				n++
			}
			if len(run) == 1 { // a lone point: a dot-sized segment so it shows
				fmt.Fprintf(&d, "h0.01")
			}
		}
		fmt.Fprintf(b, `<path class="line" data-series="%s" data-points="%d" d="%s" stroke="%s"%s stroke-linecap="round"/>`,
			esc(l.Name), n, d.String(), esc(lc[i]), dash(l.Dashed))
	}
	b.WriteString(`</g><g class="points">`)
	for i, p := range c.Points {
		n := 0
		fmt.Fprintf(b, `<g data-series="%s"`, esc(p.Name))
		var inner bytes.Buffer
		for j := 0; j < min(len(p.X), len(p.Y)); j++ {
			if !xs.valid(p.X[j]) || !ys.valid(p.Y[j]) {
				continue
			}
			writeShape(&inner, p.Shape, xs.pos(p.X[j]), clampY(ys.pos(p.Y[j])), pc[i])
			n++
		}
		fmt.Fprintf(b, ` data-points="%d">%s</g>`, n, inner.String())
	}
	b.WriteString(`</g>`)
}

// box is the rectangle a text takes, as estimated from charWidth and
// fontSize (the charts have no font metrics).
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// textBox is the box of s drawn with its baseline at y, starting at x
// or, with end, ending there.
func textBox(x, y float64, s string, end bool) box {
	w := float64(len([]rune(s))) * charWidth
	if end {
		x -= w
	}
	return box{x, y - fontSize, x + w, y + 3}
}

// placedLabel is where a mark's label is drawn.
type placedLabel struct {
	x, y float64
	end  bool // text-anchor end
}

// markLabels places each mark's label beside its line where it covers
// neither the title, the legend, the x-axis title nor a label placed
// before it: a horizontal mark's label goes above its line at the right,
// else below it, else the same at the left; a vertical mark's at the top
// right of its line (left near the right edge), else lower down, else
// on the other side. When every place is taken, the first.
func (c *Chart) markLabels(xs, ys *scale) []placedLabel {
	w := xs.p1 + marginRight
	taken := []box{textBox(marginLeft, 13, c.Title, false)}
	items := c.legendItems()
	for r, row := range legendRows(items, w-marginLeft-marginRight) {
		x := float64(marginLeft)
		for _, it := range row {
			x += itemWidth(it)
		}
		y := float64(titleHeight + r*legendRow + 10)
		taken = append(taken, box{marginLeft, y - fontSize, x, y + 3})
	}
	if c.X.Label != "" {
		taken = append(taken, textBox(xs.p1, ys.p1-3, c.X.Label, true))
	}
	out := make([]placedLabel, len(c.Marks))
	for i, m := range c.Marks {
		var cands []placedLabel
		if m.Horizontal {
			if !ys.valid(m.At) {
				continue
			}
			y := ys.pos(m.At)
			cands = []placedLabel{{xs.p1 - 2, y - 3, true}, {xs.p1 - 2, y + 11, true}, {xs.p0 + 2, y - 3, false}, {xs.p0 + 2, y + 11, false}}
		} else {
			if !xs.valid(m.At) {
				continue
			}
			x := xs.pos(m.At)
			right, left := placedLabel{x + 3, 0, false}, placedLabel{x - 3, 0, true}
			if x+3+float64(len([]rune(m.Label)))*charWidth > xs.p1 { // would run off the plot
				right, left = left, right
			}
			for k := range 4 {
				y := ys.p1 + 11 + float64(k)*(fontSize+2)
				cands = append(cands, placedLabel{right.x, y, right.end}, placedLabel{left.x, y, left.end})
			}
		}
		out[i] = cands[0]
		for _, p := range cands {
			bx := textBox(p.x, p.y, m.Label, p.end)
			if !slices.ContainsFunc(taken, bx.overlaps) {
				out[i] = p
				break
			}
		}
		taken = append(taken, textBox(out[i].x, out[i].y, m.Label, out[i].end))
	}
	return out
}

// moveOrLine appends an M (move) or L (line) command to path data.
func moveOrLine(d *bytes.Buffer, move bool, x, y float64) {
	var buf [32]byte
	b := buf[:0]
	if move {
		b = append(b, 'M')
	} else {
		b = append(b, 'L')
	}
	b = strconv.AppendFloat(b, x, 'f', 1, 64)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, y, 'f', 1, 64)
	d.Write(b)
}

// runs splits indexes 0..n-1 into maximal runs where ok holds.
func runs(n int, ok func(int) bool) [][]int {
	var out [][]int
	var cur []int
	for j := 0; j < n; j++ {
		if ok(j) {
			cur = append(cur, j)
			continue
		}
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func esc(s string) string { return html.EscapeString(s) }

// format writes v in unit u; step is the tick step (0 for log ticks),
// which decides how many decimals a linear axis needs.
func format(v float64, u Unit, step float64) string {
	switch u {
	case Seconds:
		return FormatSeconds(v)
	case Bytes:
		return si(v, "B", step)
	case Elapsed:
		return FormatElapsed(v)
	case Percent:
		return trim(strconv.FormatFloat(v*100, 'f', decimals(step*100), 64)) + "%"
	}
	return si(v, "", step)
}

func decimals(step float64) int {
	if step <= 0 || step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

func trim(s string) string {
	if bytes.ContainsRune([]byte(s), '.') {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	return s
}

// si writes v with an SI prefix (k, M, G, T) and suffix.
func si(v float64, suffix string, step float64) string {
	a := math.Abs(v)
	prefixes := []struct {
		f float64
		p string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
	for _, p := range prefixes {
		if a >= p.f {
			return trim(strconv.FormatFloat(v/p.f, 'f', max(decimals(step/p.f), 0), 64)) + p.p + suffix
		}
	}
	if v == 0 {
		return "0" + suffix
	}
	d := decimals(step)
	if step == 0 {
		d = 3
	}
	return trim(strconv.FormatFloat(v, 'f', d, 64)) + suffix
}

// FormatSeconds writes a duration in seconds compactly: 850µs, 12.5ms,
// 1.2s, 0.
func FormatSeconds(s float64) string {
	a := math.Abs(s)
	switch {
	case s == 0:
		return "0"
	case a < 1e-6:
		return trim(strconv.FormatFloat(s*1e9, 'f', 0, 64)) + "ns"
	case a < 1e-3:
		return trim(strconv.FormatFloat(s*1e6, 'f', 1, 64)) + "µs"
	case a < 1:
		return trim(strconv.FormatFloat(s*1e3, 'f', 2, 64)) + "ms"
	}
	return trim(strconv.FormatFloat(s, 'f', 2, 64)) + "s"
}

// FormatElapsed writes a time since a start: 45s, 2m30s, 1h05m, 3d04h.
func FormatElapsed(s float64) string {
	n := int64(math.Round(s))
	neg := ""
	if n < 0 {
		neg, n = "-", -n
	}
	switch {
	case n >= 86400:
		return fmt.Sprintf("%s%dd%02dh", neg, n/86400, n/3600%24)
	case n >= 3600:
		return fmt.Sprintf("%s%dh%02dm", neg, n/3600, n/60%60)
	case n >= 60:
		if n%60 == 0 {
			return fmt.Sprintf("%s%dm", neg, n/60)
		}
		return fmt.Sprintf("%s%dm%02ds", neg, n/60, n%60)
	}
	return fmt.Sprintf("%s%ds", neg, n)
}
