package judge

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
)

type runResult struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runTest runs cfg to its end, judged, with a fresh registry.
func runTest(ctx context.Context, cfg *config.Config, p *config.Plugins) runResult {
	reg := prometheus.NewRegistry()
	api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: reg})
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
		Observers: []daemon.Observer{New(zap.NewNop(), Options{}), api}})
	return runResult{sum, err, reg}
}
