package daemon

import (
	"context"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// The latency histograms soakd builds from its own buckets are what
// client_golang's histogram with the same settings (classic buckets and
// native buckets of factor 1.1) exposes for the same observations.
func TestHistMetricMatchesClientGolang(t *testing.T) {
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "h", Help: "h", Buckets: latencyBuckets[:],
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 10000, NativeHistogramZeroThreshold: -1,
	})
	var pb promBuckets
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
		pb.record(v.Seconds(), n)
	}
	var want, got dto.Metric
	if err := ref.Write(&want); err != nil {
		t.Fatal(err)
	}
	desc := prometheus.NewDesc("h", "h", nil, nil)
	if err := HistogramMetricHook(desc, makeBuckets(pb), time.Time{}).Write(&got); err != nil {
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

// soakd_ready says what /readyz says: 0 for a target that never became
// ready, and no control changes were counted.
func TestReadyMetricWhenTargetNeverReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"down"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return unreachable{}, nil }})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "down://db:1/x", "SOAKD_DURATION", "3s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		want := `
# HELP soakd_ready 1 when the workload's target is prepared and answers its ping (what /readyz says), else 0.
# TYPE soakd_ready gauge
soakd_ready{workload="seq"} 0
# HELP soakd_control_total Changes made through POST /control: a new rate, pause or resume.
# TYPE soakd_control_total counter
soakd_control_total{action="pause",workload="seq"} 0
soakd_control_total{action="rate",workload="seq"} 0
soakd_control_total{action="resume",workload="seq"} 0
`
		if err := testutil.GatherAndCompare(res.reg, strings.NewReader(want), "soakd_ready", "soakd_control_total"); err != nil {
			t.Error(err)
		}
	})
}

// Each change made through /control is counted by action (dashboards
// annotate them), and a ready target shows soakd_ready 1.
func TestControlAndReadyMetrics(t *testing.T) {
	p := testPlugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "200", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://", "SOAKD_CONTROL_TOKEN", "tok"), p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() { done <- runTest(ctx, cfg, p, l) }()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, "running", func() bool { s := status(t, base); return s.State == "running" })
	for _, q := range []string{"rate=300", "rate=400", "action=pause", "action=resume", "rate=bad"} {
		post(t, base+"/control?"+q, "tok")
	}
	_, body := get(t, base+"/metrics")
	for _, want := range []string{
		`soakd_ready{workload="seq"} 1`,
		`soakd_control_total{action="rate",workload="seq"} 2`,
		`soakd_control_total{action="pause",workload="seq"} 1`,
		`soakd_control_total{action="resume",workload="seq"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
