package config

import (
	"strings"
	"testing"
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
}
