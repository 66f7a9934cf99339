package daemon

import (
	"context"
	"testing"
	"testing/synctest"
)

// SHARD=auto runs its 1/N of the rate, as SHARD=i/N does.
func TestShardAutoRunsItsShareOfTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "4000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_SHARD", "auto", "JOB_COMPLETION_INDEX", "3", "JOB_COMPLETIONS", "4", "SOAKD_SEQ_DURATION", "10s"), p)
		res := runTest(context.Background(), cfg, p)
		if got := res.sum.Workloads[0].Units; got != 10000 {
			t.Fatalf("shard auto (3 of 4) of 4000/s for 10 s acked %d, want 10000", got)
		}
	})
}
