package history

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/serve"
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

// TestSeriesKeepsEachField checks that each field's points come back as
// they were added, in both tiers, across the recent ring's wrap and the
// whole tier's merges: fields of different values side by side in
// memory stay apart.
func TestSeriesKeepsEachField(t *testing.T) {
	t.Parallel()
	const nf = 3
	s := newSeries(nf)
	// Field f of sample i is 1000·f + i: every value says where it
	// belongs. 1000 samples wrap the recent ring (900) and merge the
	// whole tier once: 720 points of step 1 become 360 of step 2, and
	// the other 280 samples add 140.
	n := 1000
	for i := 0; i < n; i++ {
		v := make([]float32, nf)
		for f := range v {
			v[f] = float32(1000*f + i)
		}
		s.add(float64(i), v)
	}
	doc := s.snapshot([]string{"a", "b", "c"})
	r := doc.Recent
	if len(r.T) != recentPoints {
		t.Fatalf("recent tier has %d points, want %d", len(r.T), recentPoints)
	}
	for i, at := range r.T {
		for f := 0; f < nf; f++ {
			if want := float64(1000*f) + at; r.V[f][i] != want {
				t.Fatalf("recent point %d (t %v) of field %d: %v, want %v", i, at, f, r.V[f][i], want)
			}
		}
	}
	w := doc.Whole
	if w.Step != 2 || len(w.T) != 500 {
		t.Fatalf("whole tier: step %v, %d points; want step 2 and 500 points", w.Step, len(w.T))
	}
	for i, at := range w.T {
		// A point of step 2 from t is samples t and t+1 (t even).
		for f := 0; f < nf; f++ {
			lo := float64(1000*f) + at
			if w.V[f][i] != lo+0.5 || w.Lo[f][i] != lo || w.Hi[f][i] != lo+1 {
				t.Fatalf("whole point %d (t %v) of field %d: mean %v min %v max %v, want %v %v %v",
					i, at, f, w.V[f][i], w.Lo[f][i], w.Hi[f][i], lo+0.5, lo, lo+1)
			}
		}
	}
}

// TestHistoryOfARun samples a real run (seq to null:// at 2000 rows/s)
// and checks that the history says what the summary says.
func TestHistoryOfARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { historyOfARun(t) })
}

// historyOfARun is TestHistoryOfARun on the bubble's clock: the rate in a
// second is what the schedule gave it, however busy the machine.
func historyOfARun(t *testing.T) {
	p := enginetest.Plugins()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "20",
		"SOAKD_SEQ_TARGET", "null://?latency=2ms", "SOAKD_SEQ_DURATION", "3500ms"), p)
	h := New()
	api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry()})
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
		Version: "test", Observers: []daemon.Observer{h, api}})
	if err != nil {
		t.Fatal(err)
	}
	doc := h.Snapshot()
	if len(doc.Workloads) != 1 {
		t.Fatalf("%d workloads", len(doc.Workloads))
	}
	wh := doc.Workloads[0]
	if wh.State != "done" || len(wh.Phases) != 1 || wh.Phases[0].StoppedBy != "DURATION" {
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

// The zero-config demo draws a steady rate: at 1000 rows/s on the
// built-in target every per-second sample of the achieved rate is
// within 5 % of the target (with one 1000-row write a second they saw
// between 0 and 2000).
func TestDemoRateIsSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_DURATION", "10s"), p)
		h := New()
		if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{h}}); err != nil {
			t.Fatal(err)
		}
		doc := h.Snapshot()
		wh := doc.Workloads[0]
		ach := wh.Field(&wh.Recent, "achieved_rate")
		if len(ach) < 8 {
			t.Fatalf("%d samples", len(ach))
		}
		for i, v := range ach[1 : len(ach)-1] { // the first and last seconds are partial
			if math.Abs(v-1000) > 50 {
				t.Errorf("second %d: achieved %.0f rows/s, want 1000 ± 50 (samples %v)", i+2, v, ach)
				break
			}
		}
	})
}

// fakeTarget knows the memory and keys of workload seq's target from the
// start and its storage only from its third reading on, and none of its
// other stats.
type fakeTarget struct{ reads int }

func (f *fakeTarget) Stat(w, name string) (float64, time.Time, bool) {
	return 4001, time.Time{}, w == "seq" && name == "keys"
}

func (f *fakeTarget) Memory(w string) (float64, time.Time, bool) {
	return 3 << 20, time.Time{}, w == "seq"
}

func (f *fakeTarget) Storage(w string) (float64, time.Time, bool) {
	f.reads++
	return 5 << 20, time.Time{}, w == "seq" && f.reads > 2
}

// The target's figures are sampled each second beside the workload's
// own, NaN while not known; without WatchTarget they are all NaN.
func TestHistoryTargetFigures(t *testing.T) {
	for _, watch := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			p := enginetest.Plugins()
			cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_DURATION", "5s"), p)
			h := New()
			if watch {
				h.WatchTarget(&fakeTarget{})
			}
			if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{h}}); err != nil {
				t.Fatal(err)
			}
			wh := h.Snapshot().Workloads[0]
			mem, st := wh.Field(&wh.Recent, "target_memory_bytes"), wh.Field(&wh.Recent, "target_storage_bytes")
			keys, series := wh.Field(&wh.Recent, "target_keys"), wh.Field(&wh.Recent, "target_active_series")
			if len(mem) < 4 || len(st) != len(mem) || len(keys) != len(mem) || len(series) != len(mem) {
				t.Fatalf("%d memory and %d storage samples", len(mem), len(st))
			}
			for i := range mem {
				wantMem, wantSt := math.NaN(), math.NaN()
				if watch {
					wantMem = 3 << 20
					if i >= 2 {
						wantSt = 5 << 20
					}
				}
				if !same(mem[i], wantMem) || !same(st[i], wantSt) {
					t.Errorf("watch %v, sample %d: memory %v storage %v, want %v and %v", watch, i, mem[i], st[i], wantMem, wantSt)
				}
				wantKeys := map[bool]float64{true: 4001, false: math.NaN()}[watch]
				if k, s := keys[i], series[i]; !same(k, wantKeys) || !math.IsNaN(s) {
					t.Errorf("watch %v, sample %d: keys %v active series %v, want %v and none", watch, i, k, s, wantKeys)
				}
			}
			if m := wh.Field(&wh.Whole, "target_memory_bytes"); len(m) == 0 || !same(m[0], map[bool]float64{true: 3 << 20, false: math.NaN()}[watch]) {
				t.Errorf("watch %v: whole tier %v", watch, m)
			}
		})
	}
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// A merged point's min and max leave a missing (NaN) side out and are NaN
// only when both sides are.
func TestNaNMinMax(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct{ a, b, lo, hi float32 }{
		{1, 2, 1, 2},
		{2, 1, 1, 2},
		{-1, -2, -2, -1},
		{nan, 3, 3, 3},
		{3, nan, 3, 3},
		{-4, nan, -4, -4},
	} {
		if lo, hi := nanMin(tc.a, tc.b), nanMax(tc.a, tc.b); lo != tc.lo || hi != tc.hi {
			t.Errorf("(%v, %v): min %v, max %v; want %v, %v", tc.a, tc.b, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := nanMin(nan, nan), nanMax(nan, nan); !isNaN32(lo) || !isNaN32(hi) {
		t.Errorf("(NaN, NaN): min %v, max %v; want NaN", lo, hi)
	}
}
