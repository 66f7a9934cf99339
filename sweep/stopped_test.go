package sweep

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
)

// A run the sweep's stop (SIGINT, SIGTERM) cut short counts as a run a
// threshold cut short: its rate is over the part it ran, so its point is
// left out of the best and noted, not marked best on a half run.
func TestSweepStoppedRunLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms",
			"SOAKD_SWEEP_GRID", "WORKERS=1,4", "SOAKD_SWEEP_REPEATS", "1", "SOAKD_SWEEP_DURATION", "10s")
		cfg := enginetest.Load(t, env, p)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(15*time.Second, cancel) // half-way through the second point's run
		res, err := Run(ctx, cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Points) != 2 || res.CutShort == "" {
			t.Fatalf("%d points, cut short %q; want 2, the second's run cut short", len(res.Points), res.CutShort)
		}
		whole, cut := res.Points[0], res.Points[1]
		if whole.CutShortRuns != 0 || whole.LeftOut || !whole.Best {
			t.Errorf("whole point: cut short runs %d, left out %v, best %v; want 0, false, true", whole.CutShortRuns, whole.LeftOut, whole.Best)
		}
		if cut.CutShortRuns != 1 || !cut.LeftOut || cut.Best || cut.Runs[0].CutShort != "signal" {
			t.Errorf("cut point: cut short runs %d, left out %v, best %v, run %+v; want 1, true, false, cut by the signal",
				cut.CutShortRuns, cut.LeftOut, cut.Best, cut.Runs[0])
		}
		var md bytes.Buffer
		res.WriteMarkdown(&md)
		if !strings.Contains(md.String(), "| 4 |") || !strings.Contains(md.String(), "1 of 1 run cut short") ||
			!strings.Contains(md.String(), "or the sweep's stop, ended before their end") {
			t.Errorf("report:\n%s", md.String())
		}
	})
}
