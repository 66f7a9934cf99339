package sweep

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// resetSink takes every series batch and counts its resets.
type resetSink struct {
	mu     sync.Mutex
	resets int
}

func (s *resetSink) Write(_ context.Context, b *sources.Batch) (int, error) { return 1, nil }
func (s *resetSink) Close(context.Context) error                            { return nil }

func (s *resetSink) Reset(context.Context) error {
	s.mu.Lock()
	s.resets++
	s.mu.Unlock()
	return nil
}

// SOAKD_SWEEP_RESET over two targets, one whose sink can empty what soakd
// wrote and one whose sink cannot (null://, as an InfluxDB's): the first
// is reset before each of its runs; the second is named before the first
// run (each run's own warning goes to a silent logger), in the JSON and in
// the report's sentence on resets, its password never shown. Bug caught:
// a sweep that says every point started from an emptied target when one
// of its targets was never emptied.
func TestSweepNotReset(t *testing.T) {
	t.Parallel()
	sink := &resetSink{}
	p := enginetest.Plugins(sinks.Entry{Schemes: []string{"r"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return sink, nil }})
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_ROWS", "100", "SOAKD_SWEEP_GRID", "TARGET=r://,null://u:pw@h WORKERS=1,2",
		"SOAKD_SWEEP_REPEATS", "2", "SOAKD_SWEEP_DURATION", "1s", "SOAKD_SWEEP_RESET", "true")
	cfg := enginetest.Load(t, env, p)
	core, logs := observer.New(zap.InfoLevel)
	res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.New(core), Plugins: p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 4 || !slices.Equal(res.NotReset, []string{"null://u:xxxxx@h"}) {
		t.Fatalf("%d points, not reset %q; want 4, the null:// target redacted", len(res.Points), res.NotReset)
	}
	if sink.resets != 2*2 {
		t.Errorf("the target that can be reset was reset %d times, want before each of its 4 runs", sink.resets)
	}
	warned := logs.FilterMessageSnippet("SOAKD_SWEEP_RESET: the target null://u:xxxxx@h cannot be reset").All()
	if len(warned) != 1 || warned[0].Level != zap.WarnLevel || logs.All()[0].Message != warned[0].Message {
		t.Errorf("warnings %v, want one, before the sweep's first line", warned)
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	if s := md.String(); !strings.Contains(s, "Each point: 2 runs, the target emptied of soakd's data before each (its tables dropped when made for another shape), but not null://u:xxxxx@h, whose sink cannot empty it") ||
		strings.Contains(s, "pw") {
		t.Errorf("markdown:\n%s", s)
	}
}

// flakySink fails every other write for good.
type flakySink struct {
	mu    sync.Mutex
	calls int
}

func (s *flakySink) Write(_ context.Context, b *sources.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls++; s.calls%2 == 0 {
		return 0, errors.New("disk quota exceeded")
	}
	return 1, nil
}
func (s *flakySink) Close(context.Context) error { return nil }

// A point whose writes failed says why, in its progress line and in the
// report, though its run's own log is silent. Bug caught: a report of
// failed units with no word of what failed them.
func TestSweepSaysWhyUnitsFailed(t *testing.T) {
	t.Parallel()
	p := enginetest.Plugins(sinks.Entry{Schemes: []string{"f"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return &flakySink{}, nil }})
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "f://", "SOAKD_SEQ_ROWS", "100", "SOAKD_SEQ_RETRIES", "0",
		"SOAKD_SWEEP_GRID", "BATCH_SIZE=10", "SOAKD_SWEEP_REPEATS", "1", "SOAKD_SWEEP_DURATION", "10s")
	cfg := enginetest.Load(t, env, p)
	core, logs := observer.New(zap.InfoLevel)
	res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.New(core), Plugins: p}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Points[0].Runs[0]
	if c.Failed != 50 || !strings.Contains(c.LastError, "disk quota exceeded") {
		t.Fatalf("run %+v, want 50 rows failed and the sink's error", c)
	}
	if logs.FilterMessageSnippet("BATCH_SIZE=10: ").FilterMessageSnippet(", 50 failed (last error ").FilterMessageSnippet("disk quota exceeded").Len() != 1 {
		t.Errorf("no progress line says why: %v", logs.All())
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "\n## Failures\n\n- BATCH_SIZE=10: 50 rows failed; the last error: ") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
