package report

import (
	"math"
	"sort"
)

// latencyBuckets are the classic buckets exposed next to the native
// histogram, for Prometheus servers without native histogram support:
// 100 µs to 1 min.
var latencyBuckets = [...]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Native histogram buckets use schema 3: bucket i holds values in
// (2^((i-1)/8), 2^(i/8)], a factor of about 1.09 per bucket. Latencies
// are clamped to [1 ns, 1 h], which spans bucket indexes -239..95.
const (
	// NativeSchema is the schema of the native histogram buckets Native
	// returns (3: each about 9 % wide).
	NativeSchema = 3
	nativeMin    = -240
	nativeMax    = 96
)

// nativeBounds are 2^(i/8)/2 for i = 0..7: the fractions (as math.Frexp
// returns them) at which schema 3's buckets start, as in client_golang.
var nativeBounds = func() [8]float64 {
	var b [8]float64
	for i := range b {
		b[i] = math.Exp2(float64(i)/8) / 2
	}
	return b
}()

// nativeIndex is the schema-3 bucket of v > 0 seconds, clamped.
func nativeIndex(v float64) int {
	frac, exp := math.Frexp(v)
	i := sort.SearchFloat64s(nativeBounds[:], frac) + (exp-1)*len(nativeBounds)
	return min(max(i, nativeMin), nativeMax)
}

// Buckets is a latency distribution as /metrics exports it: counts in
// the native histogram's buckets (schema 3, each about 9 % wide), and in
// classic buckets next to them. The difference of two readings is what
// was recorded between them, so quantiles over any span cost no
// histogram of their own. The engine records into it on the write path:
// recording never allocates.
type Buckets struct {
	count   uint64
	sum     float64                     // seconds
	classic [len(latencyBuckets)]uint64 // per bucket, not cumulative
	native  [nativeMax - nativeMin + 1]int64
}

// Record counts n latencies of sec seconds.
func (b *Buckets) Record(sec float64, n int64) {
	b.count += uint64(n)
	b.sum += sec * float64(n)
	if i := sort.SearchFloat64s(latencyBuckets[:], sec); i < len(b.classic) {
		b.classic[i] += uint64(n)
	}
	b.native[nativeIndex(sec)-nativeMin] += n
}

// Add adds o's counts to b.
func (b *Buckets) Add(o *Buckets) {
	b.count += o.count
	b.sum += o.sum
	for i := range b.classic {
		b.classic[i] += o.classic[i]
	}
	for i := range b.native {
		b.native[i] += o.native[i]
	}
}

// Since is what was recorded between prev (an earlier reading of the
// same distribution) and b.
func (b *Buckets) Since(prev *Buckets) Buckets {
	d := *b
	d.count -= prev.count
	d.sum -= prev.sum
	for i := range d.classic {
		d.classic[i] -= prev.classic[i]
	}
	for i := range d.native {
		d.native[i] -= prev.native[i]
	}
	return d
}

// Quantile estimates quantile q (0..1) in seconds, interpolating within
// a bucket as Prometheus does for native histograms; NaN when b is
// empty.
func (b *Buckets) Quantile(q float64) float64 {
	var total int64
	for _, n := range b.native {
		total += n
	}
	if total <= 0 {
		return math.NaN()
	}
	return nativeQuantile(&b.native, total, q)
}

// nativeQuantile estimates quantile q from schema-3 bucket counts d
// (index 0 is bucket nativeMin), interpolating exponentially within the
// bucket, as Prometheus does for native histograms.
func nativeQuantile(d *[nativeMax - nativeMin + 1]int64, total int64, q float64) float64 {
	rank := q * float64(total)
	var cum int64
	for j, n := range d {
		if n == 0 {
			continue
		}
		if float64(cum+n) >= rank {
			idx := float64(j + nativeMin)
			lo, hi := math.Exp2((idx-1)/8), math.Exp2(idx/8)
			f := (rank - float64(cum)) / float64(n)
			return lo * math.Pow(hi/lo, f)
		}
		cum += n
	}
	return math.NaN()
}

// Count is the number of latencies recorded.
func (b *Buckets) Count() uint64 { return b.count }

// Sum is the sum of the latencies recorded, in seconds.
func (b *Buckets) Sum() float64 { return b.sum }

// Native are the counts of the native histogram's buckets that are not
// empty, by bucket index (schema NativeSchema).
func (b *Buckets) Native() map[int]int64 {
	out := map[int]int64{}
	for i, n := range b.native {
		if n != 0 {
			out[i+nativeMin] = n
		}
	}
	return out
}

// Classic are the cumulative counts of the classic buckets exported next
// to the native histogram, for Prometheus servers without native
// histogram support, with their upper bounds in seconds (100 µs to
// 1 min).
func (b *Buckets) Classic() (upper []float64, cumulative []uint64) {
	upper, cumulative = make([]float64, len(latencyBuckets)), make([]uint64, len(latencyBuckets))
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += b.classic[i]
		upper[i], cumulative[i] = ub, cum
	}
	return upper, cumulative
}
