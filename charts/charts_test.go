package charts

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// element is an SVG element as the tests read it.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parse checks that svg is well-formed XML and returns its elements.
func parse(t *testing.T, svg []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var out []element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := element{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
		case xml.CharData:
			if len(out) > 0 {
				out[len(out)-1].text += string(tk)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" {
		t.Fatalf("root is not <svg>:\n%s", svg)
	}
	return out
}

func find(es []element, name, class string) []element {
	var out []element
	for _, e := range es {
		if e.name == name && (class == "" || e.attrs["class"] == class) {
			out = append(out, e)
		}
	}
	return out
}

func TestLinesBandsPointsAndMarks(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	c := Chart{
		ID: "rate", Title: "Rate <achieved> & target",
		X: Axis{Unit: Elapsed}, Y: Axis{Unit: Number, ZeroBased: true, Label: "rows/s"},
		Lines: []Line{
			{Name: "target", X: []float64{0, 1, 2, 3}, Y: []float64{1000, 1000, 1000, 1000}, Dashed: true},
			{Name: "achieved", X: []float64{0, 1, 2, 3, 4}, Y: []float64{990, nan, 1010, 1000, 995},
				Lo: []float64{900, nan, 950, 980, 990}, Hi: []float64{1100, nan, 1050, 1020, 1000}},
		},
		Points: []Points{{Name: "failed", X: []float64{2}, Y: []float64{500}, Shape: Cross}},
		Marks:  []Mark{{At: 2, Label: "run"}, {At: 1200, Horizontal: true, Label: "SLO"}},
	}
	svg := c.SVG()
	es := parse(t, svg)
	root := es[0]
	if root.attrs["data-chart"] != "rate" || root.attrs["class"] != "chart" {
		t.Errorf("root attributes: %v", root.attrs)
	}
	lines := find(es, "path", "line")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if lines[0].attrs["data-points"] != "4" || lines[1].attrs["data-points"] != "4" {
		t.Errorf("data-points %q %q, want 4 and 4 (the NaN is a gap)", lines[0].attrs["data-points"], lines[1].attrs["data-points"])
	}
	// The gap splits the achieved line (and its band) in two subpaths.
	if n := strings.Count(lines[1].attrs["d"], "M"); n != 2 {
		t.Errorf("achieved path has %d subpaths, want 2: %s", n, lines[1].attrs["d"])
	}
	if _, ok := lines[0].attrs["stroke-dasharray"]; !ok {
		t.Error("target line is not dashed")
	}
	if bands := find(es, "path", "band"); len(bands) != 2 {
		t.Errorf("%d band paths, want 2", len(bands))
	}
	if marks := find(es, "line", "mark"); len(marks) != 2 {
		t.Errorf("%d marks, want 2", len(marks))
	}
	if pts := find(es, "path", "point"); len(pts) != 2 { // one in the plot, one in the legend
		t.Errorf("%d crosses, want 2", len(pts))
	}
	// Titles are escaped, and the chart uses no style attributes (the
	// console's CSP forbids inline styles).
	if !bytes.Contains(svg, []byte("Rate &lt;achieved&gt; &amp; target")) {
		t.Error("title not escaped")
	}
	if bytes.Contains(svg, []byte("style=")) || bytes.Contains(svg, []byte("<style")) {
		t.Error("chart uses inline styles")
	}
	// The Y axis reaches the horizontal mark and starts at 0.
	var ticks []string
	for _, e := range es {
		if e.name == "text" && e.attrs["text-anchor"] == "end" && e.attrs["class"] == "" {
			ticks = append(ticks, e.text)
		}
	}
	if len(ticks) < 3 || ticks[0] != "0" || ticks[len(ticks)-1] != "1.5k" {
		t.Errorf("Y ticks %q, want 0 … 1.5k (the SLO mark is in range)", ticks)
	}
}

func TestEmptyChartDrawsAFrame(t *testing.T) {
	t.Parallel()
	c := Chart{ID: "e", Title: "nothing", Lines: []Line{{Name: "x"}}, Y: Axis{Log: true}}
	es := parse(t, c.SVG())
	if len(find(es, "text", "empty")) != 1 {
		t.Error("empty chart does not say so")
	}
	if l := find(es, "path", "line"); len(l) != 1 || l[0].attrs["data-points"] != "0" {
		t.Errorf("empty line: %v", l)
	}
}

func TestLogAxisLeavesOutNonPositive(t *testing.T) {
	t.Parallel()
	c := Chart{ID: "lat", Y: Axis{Unit: Seconds, Log: true},
		Lines: []Line{{Name: "p99", X: []float64{0, 1, 2, 3}, Y: []float64{0.001, 0, 0.01, 0.5}}}}
	es := parse(t, c.SVG())
	if got := find(es, "path", "line")[0].attrs["data-points"]; got != "3" {
		t.Errorf("data-points %s, want 3 (0 cannot be drawn on a log axis)", got)
	}
	var labels []string
	for _, e := range find(es, "text", "") {
		if e.attrs["text-anchor"] == "end" {
			labels = append(labels, e.text)
		}
	}
	if want := []string{"1ms", "10ms", "100ms"}; !containsAll(labels, want) {
		t.Errorf("log ticks %q lack %q", labels, want)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    float64
		u    Unit
		step float64
		want string
	}{
		{0, Number, 500, "0"},
		{1500, Number, 500, "1.5k"},
		{2e6, Number, 1e6, "2M"},
		{0.25, Number, 0.05, "0.25"},
		{0.00085, Seconds, 0, "850µs"},
		{0.0125, Seconds, 0, "12.5ms"},
		{1.5, Seconds, 0, "1.5s"},
		{1.5e6, Bytes, 5e5, "1.5MB"},
		{150, Elapsed, 30, "2m30s"},
		{3900, Elapsed, 300, "1h05m"},
		{0.5, Percent, 0.1, "50%"},
	} {
		if got := format(c.v, c.u, c.step); got != c.want {
			t.Errorf("format(%v, %v, %v) = %q, want %q", c.v, c.u, c.step, got, c.want)
		}
	}
}

func TestNiceSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		span float64
		u    Unit
		want float64
	}{
		{1000, Number, 200}, {7, Number, 2}, {0.03, Number, 0.01},
		{600, Elapsed, 120}, {3600, Elapsed, 900}, {7 * 86400, Elapsed, 2 * 86400},
	} {
		if got := niceStep(c.span, c.u, 5); math.Abs(got-c.want) > c.want*1e-9 {
			t.Errorf("niceStep(%v, %v) = %v, want %v", c.span, c.u, got, c.want)
		}
	}
}

// TestCapacityFigures renders the figures a capacity report needs with
// this package (see doc.go) and checks each is drawn with its data. With
// SOAKD_CHARTS_OUT=DIR it writes them there to look at.
func TestCapacityFigures(t *testing.T) {
	t.Parallel()
	targets := []float64{10000, 20000, 30000, 40000, 45000, 50000, 55000}
	achieved := []float64{10000, 19990, 29980, 39950, 44900, 47000, 46000}
	lo := []float64{9950, 19900, 29900, 39800, 44500, 45000, 43000}
	hi := []float64{10050, 20050, 30050, 40050, 45100, 48500, 48000}
	p50 := []float64{0.0004, 0.0005, 0.0006, 0.0008, 0.0012, 0.02, 0.3}
	p99 := []float64{0.002, 0.0025, 0.003, 0.005, 0.009, 0.4, 1.2}
	pass := []bool{true, true, true, true, true, false, false}
	var okX, okY, badX, badY []float64
	for i, p := range pass {
		if p {
			okX, okY = append(okX, targets[i]), append(okY, p99[i])
		} else {
			badX, badY = append(badX, targets[i]), append(badY, p99[i])
		}
	}
	figs := []Chart{
		{ID: "capacity-rate", Title: "Achieved vs target rate",
			X: Axis{Label: "target rows/s", ZeroBased: true}, Y: Axis{Label: "achieved rows/s", ZeroBased: true},
			Lines: []Line{{Name: "ideal", X: []float64{0, 55000}, Y: []float64{0, 55000}, Dashed: true, Color: "#999"},
				{Name: "achieved (min–max of the step's seconds)", X: targets, Y: achieved, Lo: lo, Hi: hi}},
			Marks: []Mark{{At: 45000, Label: "knee 45k/s", Color: "#d62728"}}},
		{ID: "capacity-latency", Title: "Response latency vs rate",
			X: Axis{Label: "target rows/s", ZeroBased: true}, Y: Axis{Unit: Seconds, Log: true},
			Lines:  []Line{{Name: "p50", X: targets, Y: p50}, {Name: "p99", X: targets, Y: p99}},
			Points: []Points{{Name: "step passed", X: okX, Y: okY, Shape: Dot, Color: "#2ca02c"}, {Name: "step failed", X: badX, Y: badY, Shape: Cross, Color: "#d62728"}},
			Marks:  []Mark{{At: 0.01, Horizontal: true, Label: "SLO p99 10ms"}, {At: 45000, Label: "knee"}}},
	}
	for _, c := range figs {
		svg := c.SVG()
		es := parse(t, svg)
		for _, l := range find(es, "path", "line") {
			if n, _ := strconv.Atoi(l.attrs["data-points"]); n < 2 {
				t.Errorf("%s: line %s has %d points", c.ID, l.attrs["data-series"], n)
			}
		}
		pngBytes, err := c.PNG()
		if err != nil {
			t.Fatal(err)
		}
		checkPNG(t, c, pngBytes)
		if dir := os.Getenv("SOAKD_CHARTS_OUT"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, c.ID+".svg"), svg, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.ID+".png"), pngBytes, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !regexp.MustCompile(`knee 45k/s`).Match(figs[0].SVG()) {
		t.Error("knee label missing")
	}
}

func BenchmarkSVG(b *testing.B) {
	n := 900
	x, y1, y2 := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], y1[i], y2[i] = float64(i), 1000+float64(i%17), 0.001*float64(1+i%7)
	}
	c := Chart{ID: "b", X: Axis{Unit: Elapsed}, Y: Axis{Unit: Seconds, Log: true},
		Lines: []Line{{Name: "p50", X: x, Y: y2}, {Name: "p99", X: x, Y: y1}}}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.SVG()
	}
}

// checkPNG decodes a chart's PNG and checks it has the chart's size and
// shows each line's colour and dark text.
func checkPNG(t *testing.T, c Chart, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: PNG does not decode: %v", c.ID, err)
	}
	if got := img.Bounds().Size(); got.X != defaultWidth*PNGScale || got.Y != defaultHeight*PNGScale {
		t.Errorf("%s: PNG is %v", c.ID, got)
	}
	lc, _ := c.colours()
	want := map[color.NRGBA]int{ink: 0}
	for _, col := range lc {
		want[parseColour(col)] = 0
	}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			px := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			for col := range want {
				if near(px, col) {
					want[col]++
				}
			}
		}
	}
	for col, n := range want {
		if n < 20 {
			t.Errorf("%s: only %d pixels of colour %v", c.ID, n, col)
		}
	}
}

func near(a, b color.NRGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return a.A == 255 && d(a.R, b.R)+d(a.G, b.G)+d(a.B, b.B) < 30
}

func TestDashes(t *testing.T) {
	t.Parallel()
	d := dashes([]pt{{0, 0}, {10, 0}, {20, 0}}, 5, 3)
	// 0-5 on, 5-8 off, 8-13 on, 13-16 off, 16-20 on (to the end)
	if len(d) != 3 || d[0][0].x != 0 || d[0][len(d[0])-1].x != 5 || d[1][0].x != 8 || d[1][len(d[1])-1].x != 13 || d[2][0].x != 16 || d[2][len(d[2])-1].x != 20 {
		t.Errorf("dashes: %v", d)
	}
}

// A categorical axis labels its ticks with the categories, one per value
// index, evenly spaced, and draws lines over them; the PNG draws too.
func TestCategoricalAxis(t *testing.T) {
	c := Chart{ID: "cat", Title: "by data type", Width: 400, Height: 200,
		X:     Axis{Label: "DATA_TYPE", Categories: []string{"string", "hash", "zset"}},
		Y:     Axis{Label: "ops/s", Unit: Number, ZeroBased: true},
		Lines: []Line{{Name: "128", X: []float64{0, 1, 2}, Y: []float64{900, 700, 500}}}}
	var ticks []string
	var xs []float64
	for _, e := range parse(t, c.SVG()) {
		if e.name == "text" && e.attrs["text-anchor"] == "middle" && !slices.Contains([]string{"DATA_TYPE", "by data type", "ops/s"}, e.text) {
			ticks = append(ticks, e.text)
			x, _ := strconv.ParseFloat(e.attrs["x"], 64)
			xs = append(xs, x)
		}
	}
	if strings.Join(ticks, " ") != "string hash zset" {
		t.Fatalf("tick labels %v, want the categories", ticks)
	}
	if d1, d2 := xs[1]-xs[0], xs[2]-xs[1]; d1 <= 0 || math.Abs(d1-d2) > 0.2 {
		t.Errorf("categories at %v, want them evenly spaced", xs)
	}
	if !bytes.Contains(c.SVG(), []byte(`data-points="3"`)) {
		t.Errorf("the line is not drawn")
	}
	if _, err := c.PNG(); err != nil {
		t.Fatal(err)
	}
}
