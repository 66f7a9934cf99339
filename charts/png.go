package charts

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// PNGScale is how many pixels of a PNG stand for one of the chart's
// units (Width, Height): 2 draws a 640×240 chart as 1280×480.
const PNGScale = 2

// PNG renders the chart as a PNG image, PNGScale times its size, on a
// white background: the same layout as SVG (axes, ticks, legend, bands,
// lines, points and marks), anti-aliased, with the Go fonts. For files
// that must open anywhere, such as a capacity report's charts.
func (c *Chart) PNG() ([]byte, error) {
	w, h := c.Width, c.Height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	if faces(); errFaces != nil {
		return nil, fmt.Errorf("cannot load the Go fonts: %w", errFaces)
	}
	r := newRaster(w, h, PNGScale)
	legend := c.legendItems()
	rows := legendRows(legend, float64(w-marginLeft-marginRight))
	top := float64(titleHeight + len(rows)*legendRow + 6)
	xs := c.xScale(float64(marginLeft), float64(w-marginRight))
	ys := c.yScale(float64(h-marginBottom), top)
	left, right, bottom := float64(marginLeft), float64(w-marginRight), float64(h-marginBottom)

	r.text(marginLeft, 13, c.Title, anchorStart, ink, true, 1)
	for ri, row := range rows {
		x, y := float64(marginLeft), float64(titleHeight+ri*legendRow+10)
		for _, it := range row {
			col := parseColour(it.colour)
			if it.point {
				r.shape(it.shape, x+8, y-4, col)
			} else {
				r.stroke([]pt{{x, y - 4}, {x + 16, y - 4}}, col, 2, it.dashed)
			}
			r.text(x+20, y, it.name, anchorStart, ink, false, 1)
			x += itemWidth(it)
		}
	}
	grid := color.NRGBA{0x88, 0x88, 0x88, 0x40}
	for _, t := range ys.ticks {
		r.stroke([]pt{{left, ys.pos(t)}, {right, ys.pos(t)}}, grid, 1, false)
	}
	for _, t := range xs.ticks {
		r.stroke([]pt{{xs.pos(t), top}, {xs.pos(t), bottom}}, grid, 1, false)
	}
	frame := color.NRGBA{0x88, 0x88, 0x88, 0xff}
	r.stroke([]pt{{left, top}, {left, bottom}, {right, bottom}}, frame, 1, false)
	if ys.ok {
		for _, t := range ys.ticks {
			r.text(left-4, ys.pos(t)+4, ys.label(t), anchorEnd, ink, false, 0.8)
		}
	}
	if xs.ok {
		for _, t := range xs.ticks {
			r.text(xs.pos(t), bottom+14, xs.label(t), anchorMiddle, ink, false, 0.8)
		}
	}
	if c.Y.Label != "" {
		r.vtext(12, (top+bottom)/2, c.Y.Label)
	}
	if c.X.Label != "" {
		r.text(right, top-3, c.X.Label, anchorEnd, ink, false, 0.8)
	}
	if !xs.ok || !ys.ok {
		r.text(float64(w+marginLeft-marginRight)/2, (top+bottom)/2, "no data yet", anchorMiddle, color.NRGBA{0x88, 0x88, 0x88, 0xff}, false, 1)
	}

	lc, pc := c.colours()
	clipLo, clipHi := math.Min(ys.p0, ys.p1), math.Max(ys.p0, ys.p1)
	clampY := func(y float64) float64 { return math.Min(math.Max(y, clipLo), clipHi) }
	for i, l := range c.Lines {
		if len(l.Lo) == 0 || len(l.Hi) == 0 {
			continue
		}
		col := parseColour(lc[i])
		col.A = 0x2e
		for _, run := range runs(len(l.X), func(j int) bool {
			return j < len(l.Lo) && j < len(l.Hi) && xs.valid(l.X[j]) && ys.valid(l.Lo[j]) && ys.valid(l.Hi[j])
		}) {
			var poly []pt
			for _, j := range run {
				poly = append(poly, pt{xs.pos(l.X[j]), clampY(ys.pos(l.Hi[j]))})
			}
			for k := len(run) - 1; k >= 0; k-- {
				poly = append(poly, pt{xs.pos(l.X[run[k]]), clampY(ys.pos(l.Lo[run[k]]))})
			}
			r.fill(poly, col)
		}
	}
	labels := c.markLabels(&xs, &ys)
	for i, m := range c.Marks {
		col := parseColour(m.Color)
		if m.Color == "" {
			col = color.NRGBA{0x66, 0x66, 0x66, 0xff}
		}
		if m.Horizontal {
			if !ys.valid(m.At) {
				continue
			}
			y := ys.pos(m.At)
			r.stroke([]pt{{xs.p0, y}, {xs.p1, y}}, col, 1, true)
		} else {
			if !xs.valid(m.At) {
				continue
			}
			x := xs.pos(m.At)
			r.stroke([]pt{{x, ys.p1}, {x, ys.p0}}, col, 1, true)
		}
		l, anchor := labels[i], anchorStart
		if l.end {
			anchor = anchorEnd
		}
		r.text(l.x, l.y, m.Label, anchor, col, false, 1) // placed as in the SVG
	}
	for i, l := range c.Lines {
		col := parseColour(lc[i])
		for _, run := range runs(min(len(l.X), len(l.Y)), func(j int) bool { return xs.valid(l.X[j]) && ys.valid(l.Y[j]) }) {
			var pts []pt
			for _, j := range run {
				pts = append(pts, pt{xs.pos(l.X[j]), clampY(ys.pos(l.Y[j]))})
			}
			if len(pts) == 1 {
				r.dot(pts[0].x, pts[0].y, 1.2, col)
				continue
			}
			r.stroke(pts, col, 1.6, l.Dashed)
		}
	}
	for i, p := range c.Points {
		col := parseColour(pc[i])
		for j := 0; j < min(len(p.X), len(p.Y)); j++ {
			if xs.valid(p.X[j]) && ys.valid(p.Y[j]) {
				r.shape(p.Shape, xs.pos(p.X[j]), clampY(ys.pos(p.Y[j])), col)
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, r.img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type pt struct{ x, y float64 }

// ink is the colour of text and of "currentColor" on a white background.
var ink = color.NRGBA{0x1d, 0x1d, 0x1f, 0xff}

// parseColour reads #rrggbb (anything else is ink).
func parseColour(s string) color.NRGBA {
	if len(s) == 7 && s[0] == '#' {
		if v, err := strconv.ParseUint(s[1:], 16, 32); err == nil {
			return color.NRGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
		}
	}
	return ink
}

const (
	anchorStart = iota
	anchorMiddle
	anchorEnd
)

// raster draws in chart units onto an image scale times larger.
type raster struct {
	img   *image.RGBA
	scale float64
	z     vector.Rasterizer
}

func newRaster(w, h int, scale float64) *raster {
	img := image.NewRGBA(image.Rect(0, 0, int(float64(w)*scale), int(float64(h)*scale)))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	return &raster{img: img, scale: scale}
}

// fill fills a polygon given in chart units.
func (r *raster) fill(poly []pt, col color.NRGBA) {
	if len(poly) < 3 {
		return
	}
	b := r.img.Bounds()
	r.z.Reset(b.Dx(), b.Dy())
	r.z.MoveTo(float32(poly[0].x*r.scale), float32(poly[0].y*r.scale))
	for _, p := range poly[1:] {
		r.z.LineTo(float32(p.x*r.scale), float32(p.y*r.scale))
	}
	r.z.ClosePath()
	r.z.Draw(r.img, b, image.NewUniform(col), image.Point{})
}

// stroke draws a polyline of width (chart units), dashed 5/3 if asked:
// each segment a quad and each joint a small octagon, all wound the same
// way, in one pass so overlaps do not darken.
func (r *raster) stroke(pts []pt, col color.NRGBA, width float64, dashed bool) {
	if len(pts) < 2 {
		return
	}
	if dashed {
		for _, d := range dashes(pts, 5, 3) {
			r.stroke(d, col, width, false)
		}
		return
	}
	b := r.img.Bounds()
	r.z.Reset(b.Dx(), b.Dy())
	hw := width * r.scale / 2
	s := func(p pt) pt { return pt{p.x * r.scale, p.y * r.scale} }
	for i := 1; i < len(pts); i++ {
		a, c := s(pts[i-1]), s(pts[i])
		dx, dy := c.x-a.x, c.y-a.y
		n := math.Hypot(dx, dy)
		if n == 0 {
			continue
		}
		nx, ny := -dy/n*hw, dx/n*hw
		r.z.MoveTo(float32(a.x+nx), float32(a.y+ny))
		r.z.LineTo(float32(c.x+nx), float32(c.y+ny))
		r.z.LineTo(float32(c.x-nx), float32(c.y-ny))
		r.z.LineTo(float32(a.x-nx), float32(a.y-ny))
		r.z.ClosePath()
		if i < len(pts)-1 {
			octagon(&r.z, c, hw)
		}
	}
	r.z.Draw(r.img, b, image.NewUniform(col), image.Point{})
}

// octagon adds a joint of radius rad around c, wound like the quads
// (whose signed area is always negative: 4 n×d with n the left normal),
// so the rasterizer adds their coverage instead of cancelling it.
func octagon(z *vector.Rasterizer, c pt, rad float64) {
	for k := 0; k <= 8; k++ {
		a := -float64(k) * math.Pi / 4
		x, y := float32(c.x+rad*math.Cos(a)), float32(c.y+rad*math.Sin(a))
		if k == 0 {
			z.MoveTo(x, y)
		} else {
			z.LineTo(x, y)
		}
	}
	z.ClosePath()
}

// dashes cuts a polyline into dashes of on units separated by off.
func dashes(pts []pt, on, off float64) [][]pt {
	var out [][]pt
	var cur []pt
	drawing, left := true, on
	cur = append(cur, pts[0])
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		seg := math.Hypot(b.x-a.x, b.y-a.y)
		pos := 0.0
		for seg-pos > left {
			pos += left
			p := pt{a.x + (b.x-a.x)*pos/seg, a.y + (b.y-a.y)*pos/seg}
			if drawing {
				out = append(out, append(cur, p))
				cur = nil
				left = off
			} else {
				cur = []pt{p}
				left = on
			}
			drawing = !drawing
		}
		left -= seg - pos
		if drawing {
			cur = append(cur, b)
		}
	}
	if drawing && len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}

func (r *raster) dot(x, y, rad float64, col color.NRGBA) {
	var poly []pt
	for k := 0; k < 12; k++ {
		a := float64(k) * math.Pi / 6
		poly = append(poly, pt{x + rad*math.Cos(a), y + rad*math.Sin(a)})
	}
	r.fill(poly, col)
}

func (r *raster) shape(s Shape, x, y float64, col color.NRGBA) {
	if s == Cross {
		r.stroke([]pt{{x - 4, y - 4}, {x + 4, y + 4}}, col, 2, false)
		r.stroke([]pt{{x - 4, y + 4}, {x + 4, y - 4}}, col, 2, false)
		return
	}
	r.dot(x, y, 3.5, col)
}

var (
	facesOnce     sync.Once
	regular, bold font.Face
	errFaces      error
)

// faceMu serialises the use of the shared faces: an opentype.Face keeps
// a glyph buffer and is not safe for concurrent use, and reports may be
// drawn at once (parallel sweeps and tests in one process).
var faceMu sync.Mutex

// faces are the Go fonts at fontSize × PNGScale.
func faces() (font.Face, font.Face) {
	facesOnce.Do(func() {
		mk := func(ttf []byte) font.Face {
			f, err := opentype.Parse(ttf)
			if err != nil {
				errFaces = err
				return nil
			}
			face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: fontSize * PNGScale, DPI: 72, Hinting: font.HintingFull})
			if err != nil {
				errFaces = err
				return nil
			}
			return face
		}
		regular, bold = mk(goregular.TTF), mk(gobold.TTF)
	})
	return regular, bold
}

// text draws s with its baseline at y; opacity dims it as the SVG's
// fill-opacity does.
func (r *raster) text(x, y float64, s string, anchor int, col color.NRGBA, isBold bool, opacity float64) {
	if s == "" {
		return
	}
	reg, bf := faces()
	face := reg
	if isBold {
		face = bf
	}
	if face == nil {
		return
	}
	col.A = uint8(float64(col.A) * opacity)
	faceMu.Lock()
	defer faceMu.Unlock()
	d := font.Drawer{Dst: r.img, Src: image.NewUniform(col), Face: face}
	adv := d.MeasureString(s)
	px := x * r.scale
	switch anchor {
	case anchorMiddle:
		px -= float64(adv) / 64 / 2
	case anchorEnd:
		px -= float64(adv) / 64
	}
	d.Dot = fixed.Point26_6{X: fixed.Int26_6(px * 64), Y: fixed.Int26_6(y * r.scale * 64)}
	d.DrawString(s)
}

// vtext draws s turned a quarter left, centred on (x, y), as the SVG's
// Y axis label.
func (r *raster) vtext(x, y float64, s string) {
	reg, _ := faces()
	if reg == nil {
		return
	}
	col := ink
	col.A = 0xcc
	faceMu.Lock()
	defer faceMu.Unlock()
	d := font.Drawer{Face: reg}
	adv := int(d.MeasureString(s) / 64)
	m := reg.Metrics()
	hgt := (m.Ascent + m.Descent).Ceil()
	tmp := image.NewRGBA(image.Rect(0, 0, adv+2, hgt))
	d.Dst, d.Src = tmp, image.NewUniform(col)
	d.Dot = fixed.Point26_6{X: 64, Y: m.Ascent}
	d.DrawString(s)
	// (tx, ty) in tmp goes to (x0+ty, y0+adv-tx): a quarter turn left.
	x0 := int(x*r.scale) - hgt/2 - int(m.Descent.Ceil())
	y0 := int(y*r.scale) - adv/2
	for ty := 0; ty < hgt; ty++ {
		for tx := 0; tx < adv+2; tx++ {
			c := tmp.RGBAAt(tx, ty)
			if c.A == 0 {
				continue
			}
			dx, dy := x0+ty, y0+adv-tx
			if !(image.Point{dx, dy}.In(r.img.Bounds())) {
				continue
			}
			draw.Draw(r.img, image.Rect(dx, dy, dx+1, dy+1), image.NewUniform(c), image.Point{}, draw.Over)
		}
	}
}
