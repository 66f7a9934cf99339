package judge

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
)

type runResult struct {
	sum *daemon.Summary
	err error
	reg *prometheus.Registry
}

// runTest runs cfg to its end, judged, with a fresh registry.
func runTest(ctx context.Context, cfg *config.Config, p *config.Plugins) runResult {
	reg := prometheus.NewRegistry()
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Registry: reg, Plugins: p, Version: "test",
		Observers: []daemon.Observer{New(zap.NewNop())}})
	return runResult{sum, err, reg}
}
