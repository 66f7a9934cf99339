package capacity

import (
	"context"
	"math"
	"net/url"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// A capacity step's achieved rate and error ratio are what the target
// acknowledged and failed, not what was scheduled: against a target that
// keeps 4 rows of each 10-row batch, the step at 1000 rows/s achieves
// 400/s with 60 % of the rows failed, and fails for both.
func TestCapacityStepRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins(sinks.Entry{Schemes: []string{"part"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return enginetest.FailingSink{Err: sinks.NewError(sinks.Rejected, false, enginetest.Partial{N: 4})}, nil
			}})
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "part://x", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_CAPACITY_START", "1000", "SOAKD_CAPACITY_HOLD", "10s", "SOAKD_CAPACITY_SETTLE", "3s",
			"SOAKD_CAPACITY_WARMUP", "5s"), p)
		_, res, err := Run(context.Background(), cfg, nil, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Steps) == 0 || res.Found {
			t.Fatalf("steps %+v, found %v: want steps that fail", res.Steps, res.Found)
		}
		for _, s := range res.Steps {
			want := 0.4 * s.Target // 4 rows kept of every 10 scheduled
			if math.Abs(s.Achieved-want) > want*0.01 || math.Abs(s.ErrorRatio-0.6) > 0.006 || s.Pass {
				t.Errorf("step %d at %v/s: achieved %v/s, error ratio %v, pass %v; want %v/s, 0.6, fail",
					s.Index, s.Target, s.Achieved, s.ErrorRatio, s.Pass, want)
			}
		}
	})
}
