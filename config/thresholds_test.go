package config

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/thresholds"
)

// Bad thresholds are configuration errors naming SOAKD_<W>_THRESHOLDS,
// reported with every other problem; some depend on the workload.
func TestThresholdsConfig(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "p99<5Oms, op:read.p99<1ms", "SOAKD_SEQ_WORKERS", "0"),
			[]string{`SOAKD_SEQ_THRESHOLDS: column 5 of "p99<5Oms, op:read.p99<1ms": "5Oms" is not a value`,
				`SOAKD_SEQ_THRESHOLDS: op:read.p99<1ms: a series workload has no op "read" (its ops: write)`,
				`SOAKD_SEQ_WORKERS: 0 is out of range`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "achieved>99%", "SOAKD_SEQ_RATE", "max"),
			[]string{`SOAKD_SEQ_THRESHOLDS: achieved>99%: RATE=max has no target rate`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%", "SOAKD_SEQ_DURATION", "2m"),
			[]string{`SOAKD_SEQ_THRESHOLDS: drift.p99<20%: the run phase (at most 2m0s) is shorter than SOAKD_SEQ_DRIFT_WARMUP (1m0s) + 2 windows of 1m0s`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%@10s", "SOAKD_SEQ_RATE", "20s:100", "SOAKD_SEQ_DRIFT_WARMUP", "5s"),
			[]string{`the run phase (at most 20s) is shorter than SOAKD_SEQ_DRIFT_WARMUP (5s) + 2 windows of 10s`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%@10s", "SOAKD_DURATION", "15s", "SOAKD_SEQ_DRIFT_WARMUP", "-1s"),
			[]string{`SOAKD_SEQ_DRIFT_WARMUP: must not be negative`, `the run phase (at most 15s)`}},
		// A target. check needs the watch of the target, reading at
		// least once a window.
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "target.memory<8GiB, drift.target.memory<5%", "SOAKD_SEQ_WATCH_INTERVAL", "0"),
			[]string{`SOAKD_SEQ_THRESHOLDS: target.memory<8GiB: SOAKD_SEQ_WATCH_INTERVAL=0 turns the watch of the target off`,
				`SOAKD_SEQ_THRESHOLDS: drift.target.memory<5%: SOAKD_SEQ_WATCH_INTERVAL=0`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "target.storage<1GB@5s", "SOAKD_SEQ_WATCH_INTERVAL", "10s"),
			[]string{`SOAKD_SEQ_THRESHOLDS: target.storage<1GB@5s: a window of 5s is shorter than SOAKD_SEQ_WATCH_INTERVAL (10s)`}},
	} {
		cfg, err := Load(tc.env, p.Sources)
		err = cfg.Check(p, err)
		if err == nil {
			t.Errorf("%v: no error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error lacks %q:\n%v", tc.env, w, err)
			}
		}
	}
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "p99<50ms, drift.p99<20%@10s",
		"SOAKD_SEQ_DURATION", "30s", "SOAKD_SEQ_DRIFT_WARMUP", "10s"), p)
	if got := cfg.Workload[0].Checks; len(got) != 2 || got[1].String() != "drift.p99<20%@10s" {
		t.Errorf("checks %+v", got)
	}
	cfg = loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "target.memory<8GiB, target.storage_per_value<4B, drift.target.memory<5%@10s",
		"SOAKD_SEQ_WATCH_INTERVAL", "10s", "SOAKD_SEQ_DURATION", "5m"), p)
	if got := cfg.Workload[0].Checks; len(got) != 3 || got[2].Metric != thresholds.TargetMemory || !got[2].Drift {
		t.Errorf("target checks %+v", got)
	}
}
