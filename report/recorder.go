package report

import (
	"math"
	"math/bits"
	"slices"
)

// The bucket layout of a histogram of NewHistogram's (1 ns to 1 h, 3
// significant digits, hdrhistogram-go's): 2048 sub-buckets of one unit
// below 2048, then per power of two the upper 1024 sub-buckets of the
// next magnitude. TestRecorderMatchesHistogram checks these against the
// library.
const (
	subHalfMag   = 10              // log2 of the sub-buckets per half bucket
	subCount     = 2 << subHalfMag // 2048
	subHalfCount = subCount / 2    // 1024
	subMask      = int64(subCount - 1)
	countsLen    = 33 * subHalfCount // covers hdrHighest: bucket 31's last index + 1
)

// bucketOf is the counts index of v (1 ≤ v ≤ hdrHighest), as the library
// computes it.
func bucketOf(v int64) int {
	b := 64 - bits.LeadingZeros64(uint64(v|subMask)) - (subHalfMag + 1)
	sub := int(v >> uint(b))
	return (b+1)<<subHalfMag + sub - subHalfCount
}

// lowestOf is the lowest value of the bucket at counts index i, and the
// size of its range.
func lowestOf(i int) (lowest, size int64) {
	b := i>>subHalfMag - 1
	sub := i&(subHalfCount-1) + subHalfCount
	if b < 0 {
		b, sub = 0, i
	}
	return int64(sub) << uint(b), 1 << uint(b)
}

// A Recorder collects latencies, bucket for bucket as a histogram of
// NewHistogram's would: those of one window at a time (Cut), or of a
// whole phase (never cut). It remembers which buckets it used: reading
// or cutting it walks only those, where reading or resetting the
// histogram walks all of its buckets (tens of thousands, and
// hdrhistogram-go's Distribution allocates a bar for each). At a few
// samples a second that walk was most of an idle sidecar's CPU.
//
// Its counts are made a power of two at a time (a chunk of 1024, 8 KB),
// on the first sample in it: latencies of one workload span a few powers
// of two, so a recorder holds tens of KB rather than the histogram's 270
// KB, and a run's first samples touch that much fresh memory, not all of
// it (a page fault per 4 KB, and a larger heap to collect).
type Recorder struct {
	chunks [countsLen / chunkLen]*[chunkLen]int64
	used   []int32 // indices of the non-zero counts, in the order first used
	total  int64
}

// chunkLen is the counts in a chunk: those of one power of two (bucket
// 0 spans two chunks).
const chunkLen = subHalfCount

// Record adds n samples of v, clamped to the histogram's range.
func (r *Recorder) Record(v, n int64) {
	if n <= 0 {
		return
	}
	i := bucketOf(min(max(v, hdrLowest), hdrHighest))
	c := r.chunks[i/chunkLen]
	if c == nil {
		c = new([chunkLen]int64)
		r.chunks[i/chunkLen] = c
	}
	j := i % chunkLen
	if c[j] == 0 {
		r.used = append(r.used, int32(i))
	}
	c[j] += n
	r.total += n
}

// count is the count at counts index i, which is in use.
func (r *Recorder) count(i int32) *int64 { return &r.chunks[i/chunkLen][i%chunkLen] }

// Count is the number of samples recorded since the last Cut.
func (r *Recorder) Count() int64 { return r.total }

// Dist is what r holds, as DistOf would give it of a histogram holding
// the same samples.
func (r *Recorder) Dist() Dist {
	if r.total == 0 {
		return Dist{}
	}
	slices.Sort(r.used)
	d := Dist{b: make([]hdrBucket, len(r.used))}
	for k, i := range r.used {
		v, _ := lowestOf(int(i))
		d.b[k] = hdrBucket{v, *r.count(i)}
	}
	return d
}

// Cut returns what r holds and empties it.
func (r *Recorder) Cut() Dist {
	d := r.Dist()
	for _, i := range r.used {
		*r.count(i) = 0
	}
	r.used, r.total = r.used[:0], 0
	return d
}

// heldBytes is the memory r's counts take.
func (r *Recorder) heldBytes() int {
	n := 0
	for _, c := range r.chunks {
		if c != nil {
			n += len(c) * 8
		}
	}
	return n
}

// Quantiles summarizes d exactly as QuantilesOf summarizes a histogram
// holding the same samples, walking only d's buckets.
func (d Dist) Quantiles() Quantiles {
	total := d.Count()
	if total == 0 {
		return Quantiles{}
	}
	s := func(v int64) float64 { return float64(v) / 1e9 }
	var sum int64
	for _, b := range d.b {
		_, size := lowestOf(bucketOf(b.v))
		sum += b.n * (b.v + size>>1)
	}
	mean := float64(sum) / float64(total)
	var dev2 float64
	for _, b := range d.b {
		_, size := lowestOf(bucketOf(b.v))
		dev := float64(b.v+size>>1) - mean
		dev2 += dev * dev * float64(b.n)
	}
	last := d.b[len(d.b)-1]
	_, lastSize := lowestOf(bucketOf(last.v))
	return Quantiles{
		Count:  total,
		Min:    s(d.b[0].v),
		Mean:   mean / 1e9,
		P50:    s(d.atPercentile(50, total)),
		P90:    s(d.atPercentile(90, total)),
		P99:    s(d.atPercentile(99, total)),
		P999:   s(d.atPercentile(99.9, total)),
		Max:    s(last.v + lastSize - 1),
		StdDev: math.Sqrt(dev2/float64(total)) / 1e9,
	}
}

// atPercentile is the highest value of the bucket in which the samples
// counted from the lowest reach percentile p of total, as
// hdrhistogram-go's ValueAtPercentile computes it (0 < p ≤ 100).
func (d Dist) atPercentile(p float64, total int64) int64 {
	want := int64(p/100*float64(total) + 0.5)
	if want <= 0 {
		return 0
	}
	var n int64
	for _, b := range d.b {
		n += b.n
		if n >= want {
			_, size := lowestOf(bucketOf(b.v))
			return b.v + size - 1
		}
	}
	return 0
}

// Merge is the distribution of d's samples and o's together, as a
// histogram holding both would give it (its buckets in order, the counts
// of a bucket in both added).
func (d Dist) Merge(o Dist) Dist {
	switch {
	case len(o.b) == 0:
		return d
	case len(d.b) == 0:
		return o
	}
	m := Dist{b: make([]hdrBucket, 0, len(d.b)+len(o.b))}
	i, j := 0, 0
	for i < len(d.b) && j < len(o.b) {
		switch a, b := d.b[i], o.b[j]; {
		case a.v < b.v:
			m.b = append(m.b, a)
			i++
		case b.v < a.v:
			m.b = append(m.b, b)
			j++
		default:
			m.b = append(m.b, hdrBucket{a.v, a.n + b.n})
			i++
			j++
		}
	}
	m.b = append(m.b, d.b[i:]...)
	m.b = append(m.b, o.b[j:]...)
	return m
}

// ValueAtPercentile is what hdrhistogram-go's ValueAtPercentile gives of
// a histogram holding d's samples (p from 0 to 100, above 100 read as
// 100): the highest value of the bucket in which the samples counted
// from the lowest reach p % of them; 0 when d is empty.
func (d Dist) ValueAtPercentile(p float64) int64 {
	return d.atPercentile(min(p, 100), d.Count())
}
