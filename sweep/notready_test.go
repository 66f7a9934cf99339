package sweep

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/opener"
)

// A sweep whose target is down waits for it (START_TIMEOUT 0), as a run
// does, and says so: each point's run is otherwise silent, and the sweep
// waited without a word until stopped. Stopped then, it fails naming the
// target that never became ready and its last error (it said "no run
// phase"), its password hidden.
func TestSweepTargetDownSaysSo(t *testing.T) {
	t.Parallel()
	p := enginetest.Plugins()
	env := enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_RECORDS", "100",
		"SOAKD_KV_TARGET", fmt.Sprintf("redis://:hunter2@127.0.0.1:%d", testserver.ClosedPort(t)),
		"SOAKD_SWEEP_GRID", "WORKERS=1,2", "SOAKD_SWEEP_REPEATS", "1", "SOAKD_SWEEP_DURATION", "1s")
	cfg := enginetest.Load(t, env, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stopped as a user would once told the target is not ready; a
	// sweep that says nothing is stopped after a while, for the test to
	// fail rather than hang.
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == opener.NotReadyMessage {
			cancel()
		}
		return nil
	}))
	stop := time.AfterFunc(time.Minute, cancel)
	defer stop.Stop()
	res, err := Run(ctx, cfg, env, daemon.Deps{Logger: log, Plugins: p}, Options{})
	waits := logs.FilterMessage(opener.NotReadyMessage).All()
	if len(waits) == 0 {
		t.Errorf("no %q warning while the sweep waited for its target", opener.NotReadyMessage)
	} else if f := waits[0].ContextMap(); f["point"] != "WORKERS=1" || f["run"] != int64(1) || f["workload"] != "kv" {
		t.Errorf("warning without its point and run: %v", f)
	}
	if err == nil || !strings.Contains(err.Error(), "sweep point WORKERS=1: stopped while waiting for the target, which never became ready (last error: ") ||
		!strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v; want the target never ready, its last error, no password", err)
	}
	if res == nil || len(res.Points) != 0 {
		t.Errorf("result %+v, want no point", res)
	}
	for _, e := range logs.All() {
		if e.Message != opener.NotReadyMessage && e.Level > zapcore.InfoLevel {
			t.Errorf("a run's own log passed on: %s %v", e.Message, e.ContextMap())
		}
	}
}
