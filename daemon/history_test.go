package daemon

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/sources"
)

func TestSeriesTiersStayBounded(t *testing.T) {
	t.Parallel()
	s := newSeries(2)
	size := s.bytes()
	const week = 7 * 24 * 3600
	for i := 0; i < week; i++ {
		v := []float32{float32(i % 8), float32(math.NaN())}
		if i%3 == 0 {
			v[1] = 5
		}
		s.add(float64(i), v)
		if i == 3600 && s.bytes() != size {
			t.Fatalf("size changed after an hour: %d, was %d", s.bytes(), size)
		}
	}
	if s.bytes() != size {
		t.Errorf("size after a week %d, at the start %d", s.bytes(), size)
	}
	doc := s.snapshot([]string{"a", "b"})
	if n := len(doc.Recent.T); n != recentPoints {
		t.Errorf("recent tier has %d points, want %d", n, recentPoints)
	}
	if got, want := doc.Recent.T[len(doc.Recent.T)-1], float64(week-1); got != want {
		t.Errorf("last recent point at %v, want %v", got, want)
	}
	w := doc.Whole
	if w.Step != 1024 || len(w.T) < wholePoints/2 || len(w.T) > wholePoints {
		t.Errorf("whole tier: step %v, %d points; want step 1024 and %d..%d points", w.Step, len(w.T), wholePoints/2, wholePoints)
	}
	// Each point of the whole tier spans whole multiples of 8 samples
	// 0..7: mean 3.5, min 0, max 7. The NaN samples of field b are left
	// out of its mean, not counted as zeros.
	for i := 0; i < len(w.T)-1; i++ {
		if w.V[0][i] != 3.5 || w.Lo[0][i] != 0 || w.Hi[0][i] != 7 {
			t.Fatalf("point %d: mean %v min %v max %v, want 3.5 0 7", i, w.V[0][i], w.Lo[0][i], w.Hi[0][i])
		}
		if w.V[1][i] != 5 {
			t.Fatalf("point %d of b: %v, want 5", i, w.V[1][i])
		}
		if w.T[i+1]-w.T[i] != w.Step {
			t.Fatalf("points %d and %d are %v s apart, want %v", i, i+1, w.T[i+1]-w.T[i], w.Step)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "null") {
		t.Error("NaN is not written as null")
	}
}

func TestNativeQuantile(t *testing.T) {
	t.Parallel()
	var p promBuckets
	for i := 1; i <= 1000; i++ { // 1 ms .. 1 s, uniformly
		p.record(float64(i)/1000, 1)
	}
	var zero promBuckets
	v := make([]float32, 3)
	putQuantiles(v, 0, &p, &zero)
	for i, want := range []float64{0.5, 0.99, 0.999} {
		if got := float64(v[i]); math.Abs(got-want)/want > 0.09 {
			t.Errorf("%s = %v, want %v within one bucket (9 %%)", histQs[i].name, got, want)
		}
	}
	putQuantiles(v, 0, &p, &p) // nothing new
	if !math.IsNaN(float64(v[0])) {
		t.Errorf("no samples: %v, want NaN", v[0])
	}
}

// TestHistoryOfARun samples a real run (seq to null:// at 2000 rows/s)
// and checks that the history says what the summary says.
func TestHistoryOfARun(t *testing.T) {
	p := testPlugins()
	l := listen(t)
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "20",
		"SOAKD_SEQ_TARGET", "null://?latency=2ms", "SOAKD_SEQ_DURATION", "3500ms"), p)
	h := NewHistory()
	sum, err := Run(context.Background(), cfg, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p,
		Version: "test", Listener: l, History: h})
	if err != nil {
		t.Fatal(err)
	}
	doc := h.Snapshot()
	if len(doc.Workloads) != 1 {
		t.Fatalf("%d workloads", len(doc.Workloads))
	}
	wh := doc.Workloads[0]
	if wh.State != "done" || len(wh.Phases) != 1 || wh.Phases[0].StoppedBy != stopDuration {
		t.Errorf("state %s, phases %+v", wh.State, wh.Phases)
	}
	if got, want := wh.Phases[0].Acked, sum.Workloads[0].Units; got != want {
		t.Errorf("history's acked %d, summary's %d", got, want)
	}
	rec := &wh.Recent
	if len(rec.T) < 3 {
		t.Fatalf("%d samples in 3.5 s", len(rec.T))
	}
	// The achieved rate integrates to the rows acknowledged.
	ach := wh.Field(rec, "achieved_rate")
	var total float64
	prev := 0.0
	for i, r := range ach {
		total += r * (rec.T[i] - prev)
		prev = rec.T[i]
	}
	if math.Abs(total-float64(sum.Workloads[0].Units)) > 1 {
		t.Errorf("∫ achieved rate = %.1f, summary's rows %d", total, sum.Workloads[0].Units)
	}
	// A full second at 2000/s: achieved close to target, latency ≥ 2 ms.
	tgt, p50 := wh.Field(rec, "target_rate"), wh.Field(rec, "write_response_p50_seconds")
	if tgt[1] != 2000 || math.Abs(ach[1]-2000) > 300 {
		t.Errorf("second 2: target %v achieved %v, want 2000 and about 2000", tgt[1], ach[1])
	}
	if p50[1] < 0.0018 || p50[1] > 0.05 {
		t.Errorf("second 2: write p50 %v, want about 2 ms", p50[1])
	}
	if len(wh.Ops) != 1 || wh.Ops[0] != "write" {
		t.Errorf("ops %v, want [write]", wh.Ops)
	}
	if cpu := doc.Process.Field(&doc.Process.Recent, "cpu_cores"); len(cpu) == 0 || runtime.GOOS == "linux" && math.IsNaN(cpu[len(cpu)-1]) {
		t.Errorf("process cpu %v", cpu)
	}
}

// BenchmarkHistoryHour samples one hour of a workload writing 100,000
// rows/s (100 batches of 1000 per second) into a history and reports the
// memory the history holds: history-bytes as it counts its own arrays
// (the workload's series, soakd's own and the previous sample's
// buckets), heap-bytes as the Go heap grew from creating the history to
// the hour's end. The workload (its histograms) exists before either is
// measured. TestHistoryMemoryIsBounded checks it stays the same later.
func BenchmarkHistoryHour(b *testing.B) {
	for b.Loop() {
		w := benchWorkload()
		simulate(nil, w, 1) // the workload's histograms exist before measuring
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		h := NewHistory()
		h.attach([]*workload{w})
		simulate(h, w, 3600)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(h.bytes()), "history-bytes")
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)), "heap-bytes")
		runtime.KeepAlive(h)
		runtime.KeepAlive(w)
	}
}

func benchWorkload() *workload {
	rate := pace.MustParse("100000")
	cfg := &config.Workload{Name: "iot", Workers: 4, BatchSize: 1000, Rate: rate, MaxLag: time.Second}
	w := &workload{runner: newRunner(cfg, sources.Series, nil, nil, zap.NewNop())}
	w.beginPhase("run", rate, nil)
	return w
}

func benchHistory() (*History, *workload) {
	w := benchWorkload()
	h := NewHistory()
	h.attach([]*workload{w})
	return h, w
}

// simulate advances w by secs seconds of 100,000 rows/s, sampling h
// every second.
func simulate(h *History, w *workload, secs int) {
	ps := w.cur.Load()
	for s := 1; s <= secs; s++ {
		t := ps.workers[s%len(ps.workers)]
		ps.sched.release(100_000)
		t.mu.Lock()
		t.c.acked += 100_000
		t.c.values += 1_000_000
		t.c.bytes += 8_000_000
		t.c.ops[writeOp].ok += 100
		for i := 0; i < 100; i++ {
			if t.lat.n == sampleCap {
				ps.hist.mu.Lock()
				ps.hist.mergeLocked(&t.lat)
				ps.hist.mu.Unlock()
			}
			d := time.Duration(1+i%13) * time.Millisecond
			t.lat.add(sample{op: uint8(writeOp), n: 1, units: 1000, response: d + 50*time.Microsecond, service: d, dispatch: 50 * time.Microsecond})
		}
		t.mu.Unlock()
		if h == nil {
			w.totals()
			continue
		}
		h.sample(h.origin + time.Duration(s)*time.Second)
	}
}

// TestHistoryMemoryIsBounded samples three simulated hours (the whole
// tier compacts four times) and checks the history holds no more than
// after the first hour; TestSeriesTiersStayBounded covers a week.
func TestHistoryMemoryIsBounded(t *testing.T) {
	t.Parallel()
	h, w := benchHistory()
	simulate(h, w, 3600)
	hour := h.bytes()
	simulate(h, w, 2*3600)
	if later := h.bytes(); later != hour {
		t.Errorf("history holds %d bytes after 3 hours, %d after one", later, hour)
	}
	if hour > 512<<10 {
		t.Errorf("history of one series workload holds %d bytes, more than the 0.5 MiB stated", hour)
	}
	doc := h.Snapshot()
	if got := doc.Workloads[0].Whole.Step; got != 16 {
		t.Errorf("whole tier step %v after 3 hours, want 16", got)
	}
	if got := doc.Workloads[0].Phases[0].Acked; got != 3*3600*100_000 {
		t.Errorf("acked %d", got)
	}
}
