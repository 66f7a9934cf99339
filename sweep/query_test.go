package sweep

import (
	"context"
	"net/url"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// resetQuerySink answers every query with two rows and counts resets.
type resetQuerySink struct {
	mu     sync.Mutex
	resets int
}

func (s *resetQuerySink) Write(_ context.Context, b *sources.Batch) (int, error) {
	for i := range b.Queries {
		b.Queries[i].Rows = 2
	}
	return 100 * len(b.Queries), nil
}

func (s *resetQuerySink) Close(context.Context) error { return nil }

func (s *resetQuerySink) Reset(context.Context) error {
	s.mu.Lock()
	s.resets++
	s.mu.Unlock()
	return nil
}

// soakd sweep over a query workload varies PIPELINE and reports queries,
// and SWEEP_RESET leaves the target alone: a query workload reads data
// it did not write, which a reset would delete.
func TestSweepQueryWorkload(t *testing.T) {
	t.Parallel()
	sink := &resetQuerySink{}
	p := enginetest.Plugins(sinks.Entry{Schemes: []string{"q"}, Kinds: []sources.Kind{sources.Queries},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return sink, nil }})
	env := enginetest.Env("SOAKD_WORKLOADS", "q", "SOAKD_Q_SOURCE", "devops-queries", "SOAKD_Q_TARGET", "q://",
		"SOAKD_SWEEP_WORKERS", "1", "SOAKD_SWEEP_BATCH", "1,2", "SOAKD_SWEEP_REPEATS", "1",
		"SOAKD_SWEEP_DURATION", "1s", "SOAKD_SWEEP_RESET", "true")
	cfg := enginetest.Load(t, env, p)
	res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unit != "queries" || res.BatchName != "PIPELINE" || len(res.Points) != 2 {
		t.Errorf("unit %q, batch %q, %d points; want queries, PIPELINE, 2", res.Unit, res.BatchName, len(res.Points))
	}
	for _, pt := range res.Points {
		if pt.Median <= 0 {
			t.Errorf("point %+v: no queries answered", pt)
		}
	}
	if sink.resets != 0 {
		t.Errorf("the query target was reset %d times", sink.resets)
	}
}
