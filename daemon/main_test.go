package daemon

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/seq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testPlugins are the seq source and the null sink, plus any extra sinks.
func testPlugins(extra ...sinks.Entry) *config.Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV}, Open: null.Open, Check: null.Check})
	for _, e := range extra {
		r.Add(e)
	}
	return &config.Plugins{
		Sources: sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
			Names: []string{"seq"}, Kind: sources.Series,
			Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
			New:      func(c *seq.Config, w sources.Common) (sources.Source, error) { return seq.New(*c, w.Shard) },
		})),
		Sinks:   r,
		Builtin: map[sources.Kind]string{sources.Series: "null://"},
	}
}

// loadTest loads and validates env (a map of SOAKD_* settings).
func loadTest(t testing.TB, env map[string]string, p *config.Plugins) *config.Config {
	t.Helper()
	cfg, err := config.Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg
}

// onStarted is an observer that calls f with the run's workloads once
// they are open (tests read counts and steer through it).
type onStarted func([]*Handle)

func (onStarted) Opened(*Handle) error                                     { return nil }
func (f onStarted) Started(_ context.Context, hs []*Handle, _ func(error)) { f(hs) }
func (onStarted) PhaseBegun(*Handle, *Phase)                               {}
func (onStarted) PhaseEnded(*Handle, *Phase, string)                       {}

type runResult struct {
	sum *report.Summary
	err error
}

// runStarted starts cfg running and returns its first workload once it
// is open, and where the run's result arrives (tests steer the workload
// meanwhile).
func runStarted(cfg *config.Config, p *config.Plugins) (*Handle, <-chan runResult) {
	var wl *Handle
	open := make(chan struct{})
	done := make(chan runResult, 1)
	go func() {
		d := Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
			Observers: []Observer{onStarted(func(hs []*Handle) { wl = hs[0]; close(open) })}}
		sum, err := Run(context.Background(), cfg, d)
		done <- runResult{sum: sum, err: err}
	}()
	<-open
	return wl, done
}

// runTest runs cfg to its end. (The tests that read /metrics or /status
// run serve too: they are external tests, served_test.go.)
func runTest(ctx context.Context, cfg *config.Config, p *config.Plugins) runResult {
	sum, err := Run(ctx, cfg, Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"})
	return runResult{sum, err}
}
