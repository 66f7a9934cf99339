package judge

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/serve"
)

// While the run lasts, /metrics shows each threshold, ok so far and the
// latest value, and the judges' live verdicts (what /status serves, see
// daemon's TestCheckerShowsInStatusAndMetrics) say the same; the metric
// names pass promlint.
func TestThresholdsLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "30s", "SOAKD_SEQ_MAX_LAG", "5s", "SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@5s",
			"SOAKD_SEQ_THRESHOLDS", "p99<50ms@2s, errors=0, drift.p99<20%@10s", "SOAKD_SEQ_DRIFT_WARMUP", "5s"), p)
		reg := prometheus.NewRegistry()
		js := New(zap.NewNop(), Options{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			api := serve.New(serve.Options{Config: cfg, Registry: reg})
			_, _ = daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{js, api}})
		}()
		time.Sleep(4500 * time.Millisecond)
		want := `
# HELP soakd_threshold_ok 1 while the threshold passes so far, 0 once it fails (a windowed one stays failed once a window failed).
# TYPE soakd_threshold_ok gauge
soakd_threshold_ok{threshold="drift.p99<20%@10s",workload="seq"} 1
soakd_threshold_ok{threshold="errors=0",workload="seq"} 1
soakd_threshold_ok{threshold="p99<50ms@2s",workload="seq"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "soakd_threshold_ok"); err != nil {
			t.Errorf("before the stall: %v", err)
		}
		time.Sleep(3 * time.Second) // the stall, from 5 s to 6 s, and a window step after it
		want = strings.Replace(want, `threshold="p99<50ms@2s",workload="seq"} 1`, `threshold="p99<50ms@2s",workload="seq"} 0`, 1)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "soakd_threshold_ok"); err != nil {
			t.Errorf("after the stall: %v", err)
		}
		problems, err := testutil.GatherAndLint(reg, "soakd_threshold_ok", "soakd_threshold_value")
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range problems {
			t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
		}
		// The latest value of the windowed check and of errors; none yet
		// for drift, which waits for its windows.
		values := map[string]float64{}
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "soakd_threshold_value" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "threshold" {
							values[l.GetValue()] = m.GetGauge().GetValue()
						}
					}
				}
			}
		}
		if _, ok := values["drift.p99<20%@10s"]; ok || values["errors=0"] != 0 || values["p99<50ms@2s"] < 0.5 {
			t.Errorf("soakd_threshold_value: %v", values)
		}

		ts := js.Verdicts("seq", false)
		if len(ts) != 3 || ts[0].Threshold != "p99<50ms@2s" || ts[0].OK || ts[0].WorstWindow == nil || ts[0].WorstWindow.Value < 0.5 ||
			!ts[1].OK || !ts[2].OK || !strings.HasPrefix(ts[2].Note, "waiting for DRIFT_WARMUP") {
			t.Errorf("live verdicts: %+v", ts)
		}
		<-done
	})
}
