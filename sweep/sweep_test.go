package sweep

import (
	"math"
	"testing"
)

// The USL fit recovers the coefficients of throughputs computed from the
// law itself, and finds the peak where the law's formula puts it.
func TestFitUSL(t *testing.T) {
	lambda, sigma, kappa := 1000.0, 0.05, 0.002
	law := func(n float64) float64 { return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1)) }
	var pts []Point
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64} {
		pts = append(pts, Point{Workers: n, Batch: 100, Median: law(float64(n))})
	}
	pts[4].Best = true
	u := fitUSL(pts, median)
	if math.Abs(u.Lambda-lambda) > 1e-6*lambda || math.Abs(u.Sigma-sigma) > 1e-9 || math.Abs(u.Kappa-kappa) > 1e-9 {
		t.Fatalf("fit λ %v σ %v κ %v, want %v %v %v", u.Lambda, u.Sigma, u.Kappa, lambda, sigma, kappa)
	}
	// dX/dN = 0 where N² = (1−σ)/κ: √(0.95/0.002) ≈ 21.79.
	if math.Abs(u.PeakN-21.794) > 0.01 || u.Poor || u.R2 < 0.999 {
		t.Errorf("peak %.3f workers, poor %v, R² %v; want 21.79, a good fit", u.PeakN, u.Poor, u.R2)
	}

	// Linear scaling has no coherency cost: no peak to predict.
	pts = pts[:0]
	for _, n := range []int{1, 2, 4} {
		pts = append(pts, Point{Workers: n, Batch: 10, Median: 500 * float64(n), Best: n == 4})
	}
	if u := fitUSL(pts, median); !u.Poor || !math.IsInf(u.PeakN, 1) {
		t.Errorf("linear scaling: peak %v poor %v (%s), want no peak and the fit called poor", u.PeakN, u.Poor, u.Note)
	}
	// Two worker counts cannot determine three coefficients.
	if u := fitUSL(pts[:2], median); !u.Poor || u.Lambda != 0 {
		t.Errorf("two points: %+v", u)
	}
}

// The best point and the points where more workers were slower.
func TestSweepMark(t *testing.T) {
	r := &Result{Points: []Point{
		{Workers: 1, Batch: 10, Median: 100}, {Workers: 2, Batch: 10, Median: 180}, {Workers: 4, Batch: 10, Median: 150},
		{Workers: 1, Batch: 100, Median: 300}, {Workers: 2, Batch: 100, Median: 500}, {Workers: 4, Batch: 100, Median: 520},
	}}
	r.mark()
	var best []int
	for i, p := range r.Points {
		if p.Best {
			best = append(best, i)
		}
		if want := i == 2; p.Falls != want {
			t.Errorf("point %d (%d workers, batch %d): falls %v, want %v", i, p.Workers, p.Batch, p.Falls, want)
		}
	}
	if len(best) != 1 || best[0] != 5 {
		t.Errorf("best %v, want only point 5", best)
	}
}

func median(p Point) float64 { return p.Median }
