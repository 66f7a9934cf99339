package serve

import (
	"context"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type runResult struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runTest runs cfg to its end with the HTTP API on a fresh registry. l,
// if not nil, serves the endpoints.
func runTest(ctx context.Context, cfg *config.Config, p *config.Plugins, l net.Listener) runResult {
	reg := prometheus.NewRegistry()
	api := New(Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: reg, Listener: l})
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{api}})
	return runResult{sum, err, reg}
}

// startedObserver calls its function once the run has started: every
// workload open, the endpoints serving.
type startedObserver func()

func (f startedObserver) Opened(*daemon.Handle) error                            { return nil }
func (f startedObserver) Started(context.Context, []*daemon.Handle, func(error)) { f() }
func (f startedObserver) PhaseBegun(*daemon.Handle, *daemon.Phase)               {}
func (f startedObserver) PhaseEnded(*daemon.Handle, *daemon.Phase, string)       {}

// startRun runs cfg in the background, serving on l, until the test ends.
func startRun(t *testing.T, cfg *config.Config, p *config.Plugins, l net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() { done <- runTest(ctx, cfg, p, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
