package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/summary"
)

// These runs are checked in the words people read (package summary's
// text) and in what /metrics says (package serve): both import the
// engine, so the tests are the engine's external ones and run the two as
// the composition root does.

// served is a run's summary, its error and the registry its metrics are
// on.
type served struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runServed runs cfg to its end with the HTTP API's metrics on a fresh
// registry, as runTest does for the internal tests.
func runServed(ctx context.Context, cfg *config.Config, p *config.Plugins) served {
	reg := prometheus.NewRegistry()
	s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: reg})
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{s}})
	return served{sum, err, reg}
}

// unreachable is a sink whose target never answers Prepare; its error
// quotes the password, as some drivers' errors do.
type unreachable struct{}

func (unreachable) Write(context.Context, *sources.Batch) (int, error) { return 0, nil }
func (unreachable) Close(context.Context) error                        { return nil }

func (unreachable) Prepare(context.Context) error {
	return sinks.NewError(sinks.Connection, true, errors.New("dial postgres://bench:hunter2@db:1/x: connection refused"))
}

// A target that never becomes ready fails the run (exit 1), after
// retrying for as long as the run lasts, and the summary says why: the
// last error (without the password), how many attempts, for how long.
func TestNeverReadyFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins(sinks.Entry{Schemes: []string{"down"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return unreachable{}, nil }})
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "down://bench:hunter2@db:1/x", "SOAKD_DURATION", "20s"), p)
		res := runServed(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if err := res.sum.Failed(); err == nil || !strings.Contains(err.Error(), "never became ready") {
			t.Fatalf("Failed() = %v", err)
		}
		f := res.sum.Workloads[0].Failure
		if f == nil {
			t.Fatal("no failure in the summary")
		}
		t.Logf("failure: %+v", *f)
		// Backoff 1 s, 2 s, 4 s, 5 s... (±20 %): 6 or 7 attempts in 20 s.
		if f.Class != "connection" || !strings.Contains(f.LastError, "connection refused") || f.Attempts < 5 || f.Attempts > 8 ||
			f.Seconds < 12 || f.Seconds > 20 {
			t.Errorf("failure %+v: want the connection error, 5-8 attempts over 12-20 s", *f)
		}
		var text bytes.Buffer
		summary.WriteText(&text, res.sum)
		js, _ := json.Marshal(res.sum)
		for _, out := range []string{text.String(), string(js), f.Reason + f.LastError} {
			if strings.Contains(out, "hunter2") {
				t.Errorf("the password leaked into the summary: %s", out)
			}
		}
		if !strings.Contains(text.String(), "FAILED: the target never became ready") || !strings.Contains(text.String(), "connection refused") {
			t.Errorf("text summary does not say why:\n%s", text.String())
		}
	})
}

// testQueries is a query source that issues lastpoint and high-cpu-all
// in turn.
type testQueries struct{}

func (testQueries) Name() string               { return "test-queries" }
func (testQueries) Kind() sources.Kind         { return sources.Queries }
func (testQueries) Schemas() []*sources.Schema { return nil }
func (testQueries) NewBatch() *sources.Batch   { return &sources.Batch{} }
func (testQueries) QueryTypes() []sources.QueryType {
	return []sources.QueryType{sources.Lastpoint, sources.HighCPUAll}
}
func (testQueries) Stream(part, parts int) (sources.Stream, error) { return &testQueryStream{}, nil }

type testQueryStream struct{ n int }

func (s *testQueryStream) Fill(b *sources.Batch, max int, _ int64) error {
	for range max {
		t := sources.Lastpoint
		if s.n%2 == 1 {
			t = sources.HighCPUAll
		}
		s.n++
		b.Queries = append(b.Queries, sources.Query{Type: t, Expect: t == sources.Lastpoint})
	}
	return nil
}

// querySink answers lastpoint with 5 rows, high-cpu-all with 2, and
// every 5th lastpoint with nothing (an empty error).
type querySink struct {
	mu        sync.Mutex
	lastpoint int
	answered  int64 // queries answered with rows
	rows      int64
}

func (s *querySink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range b.Queries {
		q := &b.Queries[i]
		switch q.Type {
		case sources.Lastpoint:
			s.lastpoint++
			if s.lastpoint%5 == 0 {
				return 100 * i, sinks.EmptyResult(i, q, 0, 0)
			}
			q.Rows = 5
		default:
			q.Rows = 2
		}
		s.answered++
		s.rows += q.Rows
	}
	return 100 * len(b.Queries), nil
}

func (s *querySink) Close(context.Context) error { return nil }

func queryPlugins(sink *querySink) *config.Plugins {
	p := daemon.Plugins(sinks.Entry{Schemes: []string{"q"}, Kinds: []sources.Kind{sources.Queries},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return sink, nil }})
	p.Sources.Add(sources.Register(sources.Spec[struct{}]{Names: []string{"test-queries"}, Kind: sources.Queries,
		New: func(*struct{}, sources.Common) (sources.Source, error) { return testQueries{}, nil }}))
	return p
}

// A query workload runs through the write path: open loop, one op per
// query type, rows returned counted, an empty answer an error of class
// empty that fails its query and the rest of the batch (queries before
// it count as answered), and the books balance.
func TestQueryWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &querySink{}
		p := queryPlugins(sink)
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "q", "SOAKD_Q_SOURCE", "test-queries", "SOAKD_Q_TARGET", "q://",
			"SOAKD_Q_RATE", "100", "SOAKD_Q_PIPELINE", "2", "SOAKD_Q_WORKERS", "1", "SOAKD_Q_DURATION", "10s"), p)
		res := runServed(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Kind != "query" || w.UnitName != "queries" || w.Batch != 2 {
			t.Errorf("kind %q unit %q batch %d, want query, queries, 2 (PIPELINE)", w.Kind, w.UnitName, w.Batch)
		}
		if w.Scheduled != 1000 || w.Scheduled != w.Units+w.Failed+w.Dropped+w.InFlight {
			t.Errorf("scheduled %d = acked %d + failed %d + dropped %d + in flight %d, want 1000 scheduled",
				w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
		}
		if w.Units != sink.answered {
			t.Errorf("acknowledged %d queries, the sink answered %d", w.Units, sink.answered)
		}
		// Batches are (lastpoint, high-cpu-all); every 5th lastpoint fails
		// first in its batch, so both its queries fail (100 of 500
		// batches), and the failed attempt counts once per query, as for a
		// KV pipeline.
		if w.Errors["empty"] != 200 || w.Failed != 200 {
			t.Errorf("empty errors %d, failed %d; want 200 and 200: %+v", w.Errors["empty"], w.Failed, w.Errors)
		}
		ops := map[string]report.OpSummary{}
		for _, o := range w.Ops {
			ops[o.Op] = o
		}
		lp, hc := ops["lastpoint"], ops["high-cpu-all"]
		if lp.Count != 400 || lp.Rows != 2000 || hc.Count != 400 || hc.Rows != 800 {
			t.Errorf("lastpoint %d queries %d rows, high-cpu-all %d queries %d rows; want 400/2000, 400/800",
				lp.Count, lp.Rows, hc.Count, hc.Rows)
		}
		if lp.PerSec < 39 || lp.PerSec > 41 {
			t.Errorf("lastpoint %.1f queries/s, want 40", lp.PerSec)
		}
		m := metricsOf(t, res, "q")
		for _, c := range []struct {
			name string
			want float64
		}{
			{`soakd_ops_total{op="lastpoint",result="ok"}`, 400},
			{`soakd_ops_total{op="lastpoint",result="error"}`, 100},
			{`soakd_ops_total{op="high-cpu-all",result="error"}`, 100},
			{`soakd_errors_total{class="empty",op="lastpoint"}`, 100},
			{`soakd_errors_total{class="empty",op="high-cpu-all"}`, 100},
			{`soakd_query_rows_total{op="lastpoint"}`, 2000},
			{`soakd_query_rows_total{op="high-cpu-all"}`, 800},
			{`soakd_response_seconds_count{op="lastpoint"}`, 400},
			{`soakd_rows_total`, 0},
			{`soakd_scheduled_total`, 1000},
			{`soakd_failed_total`, 200},
		} {
			if got, ok := m[c.name]; !ok || got != c.want {
				t.Errorf("%s = %v, want %v", c.name, got, c.want)
			}
		}
		n := 0
		for k := range m {
			if strings.HasPrefix(k, "soakd_ops_total{") {
				n++
			}
		}
		if n != 4 {
			t.Errorf("%d soakd_ops_total series, want 4: one per result of each query type the source issues", n)
		}
		var out bytes.Buffer
		summary.WriteText(&out, res.sum)
		for _, want := range []string{"ran 800 queries", "LASTPOINT response", "StdDev(us)", "Rows: 2000", "empty 200"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, out.String())
			}
		}
	})
}

// metricsOf is what /metrics says about workload, keyed as parseMetrics
// keys it.
func metricsOf(t *testing.T, res served, workload string) map[string]float64 {
	t.Helper()
	mfs, err := res.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return daemon.ParseMetrics(t, b.String(), workload)
}
