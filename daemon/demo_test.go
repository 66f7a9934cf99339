package daemon

import (
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// On the built-in target a series workload's BATCH_SIZE defaults to a
// size that makes about 50 writes a second at the peak rate (at most
// 1000 rows): a size set, or a real target, keeps its own.
func TestBuiltinBatchSize(t *testing.T) {
	p := testPlugins()
	for _, tc := range []struct {
		env     []string
		want    int
		builtin bool
	}{
		{nil, 20, true},
		{[]string{"SOAKD_SEQ_RATE", "30s:1000,1m:20000"}, 400, true},
		{[]string{"SOAKD_SEQ_RATE", "1m:20"}, 1, true},
		{[]string{"SOAKD_SEQ_RATE", "max"}, 1000, true},
		{[]string{"SOAKD_SEQ_BATCH_SIZE", "7"}, 7, false},
		{[]string{"SOAKD_SEQ_TARGET", "null://"}, 1000, false},
	} {
		cfg := loadTest(t, testEnv(append([]string{"SOAKD_WORKLOADS", "seq"}, tc.env...)...), p)
		w := cfg.Workload[0]
		shown := slices.Contains(w.BuiltinDefaults, "SOAKD_SEQ_BATCH_SIZE="+strconv.Itoa(tc.want))
		if w.BatchSize != tc.want || shown != tc.builtin {
			t.Errorf("%v: batch %d (defaults %v), want %d (listed: %v)", tc.env, w.BatchSize, w.BuiltinDefaults, tc.want, tc.builtin)
		}
	}
}

// The zero-config demo draws a steady rate: at 1000 rows/s on the
// built-in target every per-second sample of the achieved rate is
// within 5 % of the target (with one 1000-row write a second they saw
// between 0 and 2000).
func TestDemoRateIsSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_DURATION", "10s"), p)
		h := NewHistory()
		if _, err := Run(context.Background(), cfg, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p, History: h}); err != nil {
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
