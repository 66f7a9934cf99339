package kv

import (
	"math"
	"math/rand/v2"
)

// fnv64 is YCSB's Hash64: FNV-1a 64 over the big-endian bytes of n, made
// non-negative. Keys are "user" + fnv64(record), as in YCSB's hashed
// insert order, so popular records are spread over the key space.
func fnv64(n uint64) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for shift := 56; shift >= 0; shift -= 8 {
		h ^= (n >> uint(shift)) & 0xff
		h *= prime
	}
	if int64(h) < 0 {
		h = -h
	}
	return h
}

// zipfTheta is the YCSB zipfian constant.
const zipfTheta = 0.99

// scrambledItems is the item count of YCSB's scrambled zipfian: ranks are
// drawn from a zipfian over this many items, hashed, and taken modulo the
// number of records, so the popularity curve does not depend on the
// record count and a growing data set needs no recomputation.
const scrambledItems = 10_000_000_000

// zeta returns sum_{i=1..n} i^-theta. Small n are summed; above that the
// Euler-Maclaurin expansion of the tail is exact to about 1e-12, so the
// cost is O(1) for any n (YCSB sums all n terms, O(records)).
type zeta struct {
	theta float64
	head  float64 // sum up to zetaHead
	fa    [3]float64
}

const zetaHead = 1024

func newZeta(theta float64) zeta {
	z := zeta{theta: theta}
	for i := 1; i <= zetaHead; i++ {
		z.head += math.Pow(float64(i), -theta)
	}
	a := float64(zetaHead)
	p := math.Pow(a, -theta)
	z.fa = [3]float64{p * a, p / a, p / (a * a * a)}
	return z
}

func (z *zeta) at(n uint64) float64 {
	if n <= zetaHead {
		s := 0.0
		for i := uint64(1); i <= n; i++ {
			s += math.Pow(float64(i), -z.theta)
		}
		return s
	}
	t := z.theta
	b := float64(n)
	a := float64(zetaHead)
	p := math.Pow(b, -t)
	// sum_{i=a+1..b} f(i) = integral + (f(b)-f(a))/2 + (f'(b)-f'(a))/12 - (f'''(b)-f'''(a))/720
	integral := (p*b - z.fa[0]) / (1 - t)
	half := (p - math.Pow(a, -t)) / 2
	d1 := -t * (p/b - z.fa[1]) / 12
	d3 := -t * (t + 1) * (t + 2) * (p/(b*b*b) - z.fa[2]) / 720
	return z.head + integral + half + d1 - d3
}

// zipf draws ranks 0..n-1 with P(i) proportional to (i+1)^-theta, by the
// method of Gray et al. ("Quickly generating billion-record synthetic
// databases"), as YCSB's ZipfianGenerator does. n may change between
// draws (the latest distribution follows inserts); the constants are
// recomputed only when it does.
type zipf struct {
	z                   *zeta
	n                   uint64
	zetan, eta, alpha   float64
	zeta2, halfPowTheta float64
}

func newZipf(z *zeta, n uint64) *zipf {
	g := &zipf{z: z, alpha: 1 / (1 - z.theta), zeta2: z.at(2), halfPowTheta: math.Pow(0.5, z.theta)}
	g.setN(n)
	return g
}

func (g *zipf) setN(n uint64) {
	if n == g.n {
		return
	}
	g.n = n
	if n == 0 {
		return
	}
	g.zetan = g.z.at(n)
	g.eta = (1 - math.Pow(2/float64(n), 1-g.z.theta)) / (1 - g.zeta2/g.zetan)
}

func (g *zipf) next(r *rand.Rand) uint64 {
	if g.n <= 1 {
		return 0
	}
	u := r.Float64()
	uz := u * g.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+g.halfPowTheta {
		return 1
	}
	// exp(alpha*log(x)) is math.Pow(x, alpha) for 0 < x <= 1, at half the cost.
	v := uint64(float64(g.n) * math.Exp(g.alpha*math.Log(g.eta*u-g.eta+1)))
	if v >= g.n {
		v = g.n - 1
	}
	return v
}

// chooser picks a record index in [0, n) for one stream; n is the number
// of records present and may grow between calls.
type chooser interface {
	next(r *rand.Rand, n uint64) uint64
}

type uniformChooser struct{}

func (uniformChooser) next(r *rand.Rand, n uint64) uint64 { return r.Uint64N(n) }

// scrambledChooser is YCSB's ScrambledZipfianGenerator: a zipfian rank
// over scrambledItems, hashed, modulo n.
type scrambledChooser struct{ g *zipf }

func (s scrambledChooser) next(r *rand.Rand, n uint64) uint64 { return fnv64(s.g.next(r)) % n }

// latestChooser is YCSB's SkewedLatestGenerator: the most recently
// inserted records are the most popular.
type latestChooser struct{ g *zipf }

func (l latestChooser) next(r *rand.Rand, n uint64) uint64 {
	l.g.setN(n)
	return n - 1 - l.g.next(r)
}

// hotspotChooser sends a fraction ops of the operations to the first
// fraction data of the records (YCSB's HotspotIntegerGenerator).
type hotspotChooser struct{ data, ops float64 }

func (h hotspotChooser) next(r *rand.Rand, n uint64) uint64 {
	hot := uint64(float64(n) * h.data)
	if hot == 0 {
		hot = 1
	}
	if hot >= n {
		return r.Uint64N(n)
	}
	if r.Float64() < h.ops {
		return r.Uint64N(hot)
	}
	return hot + r.Uint64N(n-hot)
}
