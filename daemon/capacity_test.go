package daemon

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// The search on recorded step results: it steps up until a step fails
// twice, judges a single bad step again instead of stopping, and bisects
// between the last pass and the first failure.
func TestCapacitySearch(t *testing.T) {
	var cc CapacityConfig
	if err := cc.Step.UnmarshalText([]byte("x2")); err != nil {
		t.Fatal(err)
	}
	cc.Start, cc.Refine = 1000, 3
	for _, tc := range []struct {
		name  string
		limit float64
		pass  func(rate float64, kind string, n int) bool // n: how many times this rate was tried
		knee  float64
		found bool
		tried string
	}{
		{"a clean knee between 4000 and 8000", 1e9, func(r float64, _ string, _ int) bool { return r <= 5000 },
			5000, true, "1000 2000 4000 8000 8000 6000 5000 5500"},
		{"one noisy step is judged again", 1e9, func(r float64, _ string, n int) bool { return r <= 5000 && !(r == 2000 && n == 1) },
			5000, true, "1000 2000 2000 4000 8000 8000 6000 5000 5500"},
		{"the first step fails twice", 1e9, func(float64, string, int) bool { return false },
			0, false, "1000 1000"},
		{"everything passes up to the limit", 3000, func(float64, string, int) bool { return true },
			3000, true, "1000 2000 3000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []string
			seen := map[float64]int{}
			knee, found, outcome := search(cc, tc.limit, func(r float64, kind string) (bool, bool) {
				seen[r]++
				tried = append(tried, fmt.Sprint(r))
				return tc.pass(r, kind, seen[r]), true
			})
			t.Logf("knee %v found %v: %s", knee, found, outcome)
			if knee != tc.knee || found != tc.found {
				t.Errorf("knee %v found %v, want %v %v", knee, found, tc.knee, tc.found)
			}
			if got := strings.Join(tried, " "); got != tc.tried {
				t.Errorf("rates tried %q, want %q", got, tc.tried)
			}
		})
	}
}

// Against a modelled server that handles a known number of units per
// second, the knee found is within 5 % of it.
func TestCapacityFindsModelledKnee(t *testing.T) {
	for _, tc := range []struct {
		target string
		model  float64
	}{
		{"null://?capacity=50000", 50000},
		{"null://?capacity=5000&latency=2ms", 5000},
	} {
		t.Run(tc.target, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := testPlugins()
				cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", tc.target, "SOAKD_SEQ_BATCH_SIZE", "50",
					"SOAKD_SEQ_WORKERS", "8", "SOAKD_CAPACITY_START", fmt.Sprint(tc.model/5), "SOAKD_CAPACITY_HOLD", "10s",
					"SOAKD_CAPACITY_SETTLE", "3s", "SOAKD_CAPACITY_WARMUP", "5s", "SOAKD_CAPACITY_SLO_P99", "50ms"), p)
				t0 := time.Now()
				sum, res, err := Capacity(context.Background(), cfg, nil, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				res.WriteMarkdown(&b)
				t.Logf("%s\nsearch took %v", b.String(), time.Since(t0))
				if !res.Found || res.Knee < tc.model*0.95 || res.Knee > tc.model*1.05 {
					t.Errorf("knee %v (found %v), want within 5%% of %v", res.Knee, res.Found, tc.model)
				}
				if d := time.Since(t0); d > 3*time.Minute {
					t.Errorf("the search took %v, want under 3 minutes", d)
				}
				if w := sum.Workload("seq", "run"); w == nil || w.StoppedBy != stopCapacity || w.InFlight != 0 {
					t.Errorf("run phase summary %+v", w)
				}
				for _, s := range res.Steps {
					if !s.Pass && len(s.Reasons) == 0 {
						t.Errorf("step %d failed without a reason", s.Index)
					}
				}
			})
		})
	}
}

// Stopped halfway (SIGINT), the search returns what it has: the steps
// judged so far and an outcome that says it was stopped.
func TestCapacityPartialOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?capacity=50000", "SOAKD_SEQ_BATCH_SIZE", "50",
			"SOAKD_CAPACITY_START", "10000", "SOAKD_CAPACITY_HOLD", "10s", "SOAKD_CAPACITY_SETTLE", "3s", "SOAKD_CAPACITY_WARMUP", "5s"), p)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(40*time.Second, cancel) // warm-up 5 s, then steps of 13 s: during the third
		var updates int
		_, res, err := Capacity(ctx, cfg, nil, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p,
			OnCapacity: func(CapacityResult) { updates++ }})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Steps) != 2 || !res.Found || res.Knee != 15000 || res.Outcome != "stopped before the search ended" {
			t.Fatalf("partial result: %d steps, knee %v found %v, %q", len(res.Steps), res.Knee, res.Found, res.Outcome)
		}
		if updates != 3 { // after each step, and at the end
			t.Errorf("OnCapacity called %d times, want 3", updates)
		}
	})
}

// The step and share grammars never panic, and what they accept is a
// growing step or a share in [0, 1].
func FuzzCapacityGrammar(f *testing.F) {
	for _, s := range []string{"x1.5", "+1000", "*2", "x1", "+0", "x", "+-5", "xNaN", "+Inf", "0.1%", "0.001", "200%", "-1%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var g Growth
		if g.UnmarshalText([]byte(s)) == nil {
			if r := g.next(1000); !(r > 1000) || math.IsInf(r, 0) {
				t.Fatalf("step %q: next(1000) = %v", s, r)
			}
		}
		var r Ratio
		if r.UnmarshalText([]byte(s)) == nil && !(r >= 0 && r <= 1) {
			t.Fatalf("share %q = %v", s, r)
		}
	})
}

// Each failing step is blamed on what limited it: the target when its
// median service time rose (even with every worker busy waiting on it),
// soakd when its CPU was saturated, the workers when all were busy while
// the service time stayed flat, and soakd when it sent late with workers
// idle.
func TestCapacityDiagnose(t *testing.T) {
	ms := func(v float64) float64 { return v / 1000 }
	for _, tc := range []struct {
		name       string
		st         CapacityStep
		base       float64
		bottleneck string
		says       string
	}{
		{"target queueing", CapacityStep{Service: Quantiles{Count: 1, P50: ms(120), P99: ms(160)}, WorkersBusy: 1, CPU: 0.1},
			ms(11), limitTarget, "median service time rose from 11.00ms to 120.00ms"},
		{"target failing", CapacityStep{Response: Quantiles{Count: 1}, Service: Quantiles{Count: 1, P50: ms(10), P99: ms(12)}, ErrorRatio: 0.05, WorkersBusy: 1},
			ms(10), limitTarget, "failed 5%"},
		{"one busy worker", CapacityStep{Service: Quantiles{Count: 1, P50: ms(20), P99: ms(28)}, Dispatch: Quantiles{P99: 0.3}, WorkersBusy: 0.97, CPU: 0.05},
			ms(20), limitWorkers, "all 1 workers were busy 97%"},
		{"soakd CPU", CapacityStep{Service: Quantiles{Count: 1, P50: ms(1), P99: ms(2)}, WorkersBusy: 0.9, CPU: 0.95},
			ms(1), limitSoakd, "used 95% of its CPU"},
		{"scheduler late", CapacityStep{Service: Quantiles{Count: 1, P50: ms(1), P99: ms(2)}, Dispatch: Quantiles{P99: 0.2}, WorkersBusy: 0.1, CPU: 0.3},
			ms(1), limitSoakd, "workers were idle 90%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, d := diagnose(&tc.st, tc.base, 1, Ratio(0.001))
			if b != tc.bottleneck || !strings.Contains(d, tc.says) {
				t.Errorf("diagnose = %q, %q; want %q saying %q", b, d, tc.bottleneck, tc.says)
			}
		})
	}
}
