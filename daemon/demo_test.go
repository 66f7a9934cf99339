package daemon

import (
	"slices"
	"strconv"
	"testing"
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
		{[]string{"SOAKD_SEQ_RATE", "20000", "SOAKD_SEQ_SHARD", "1/4"}, 100, true}, // its share: 5000/s
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
