package serve

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/soakd/soakd/report"
)

// The latency histograms soakd builds from its own buckets are what
// client_golang's histogram with the same settings (classic buckets and
// native buckets of factor 1.1) exposes for the same observations.
func TestHistMetricMatchesClientGolang(t *testing.T) {
	upper, _ := new(report.Buckets).Classic()
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "h", Help: "h", Buckets: upper,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 10000, NativeHistogramZeroThreshold: -1,
	})
	var pb report.Buckets
	rng := rand.New(rand.NewPCG(1, 2))
	values := []time.Duration{1, time.Microsecond, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond,
		time.Second, 30 * time.Second, time.Hour} // bucket boundaries and the clamps
	for range 5000 {
		values = append(values, time.Duration(rng.ExpFloat64()*float64(3*time.Millisecond))+1)
	}
	for i, v := range values {
		n := int64(1 + i%3)
		for range n {
			ref.Observe(v.Seconds())
		}
		pb.Record(v.Seconds(), n)
	}
	var want, got dto.Metric
	if err := ref.Write(&want); err != nil {
		t.Fatal(err)
	}
	desc := prometheus.NewDesc("h", "h", nil, nil)
	if err := HistogramMetric(desc, &pb, time.Time{}).Write(&got); err != nil {
		t.Fatal(err)
	}
	w, g := want.GetHistogram(), got.GetHistogram()
	if g.GetSampleCount() != w.GetSampleCount() || g.GetSchema() != w.GetSchema() {
		t.Fatalf("count %d schema %d, want %d and %d", g.GetSampleCount(), g.GetSchema(), w.GetSampleCount(), w.GetSchema())
	}
	if d := g.GetSampleSum() - w.GetSampleSum(); d > 1e-6 || d < -1e-6 {
		t.Errorf("sum %v, want %v", g.GetSampleSum(), w.GetSampleSum())
	}
	if !proto.Equal(&dto.Histogram{Bucket: g.Bucket}, &dto.Histogram{Bucket: w.Bucket}) {
		t.Errorf("classic buckets\n got %v\nwant %v", g.Bucket, w.Bucket)
	}
	if nativeCounts(g) == nil || !equalMaps(nativeCounts(g), nativeCounts(w)) {
		t.Errorf("native buckets\n got %v\nwant %v", nativeCounts(g), nativeCounts(w))
	}
}

// nativeCounts decodes a histogram's positive native buckets to index → count.
func nativeCounts(h *dto.Histogram) map[int32]int64 {
	out := map[int32]int64{}
	var idx int32
	var count int64
	d := 0
	for _, sp := range h.GetPositiveSpan() {
		idx += sp.GetOffset()
		for range sp.GetLength() {
			count += h.GetPositiveDelta()[d]
			d++
			if count != 0 {
				out[idx] = count
			}
			idx++
		}
	}
	return out
}

func equalMaps(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
