package daemon_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/seq"
)

// The engine's runs checked in what /metrics and /status say: package
// serve imports the engine, so these are its external tests, and they
// run serve as the composition root does.

// gatherValue returns the value of the one counter or gauge called name
// on reg.
func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// onStart is an observer that calls f when the run has started, with its
// workloads.
type onStart func([]*daemon.Handle)

func (onStart) Opened(*daemon.Handle) error                                     { return nil }
func (f onStart) Started(_ context.Context, ws []*daemon.Handle, _ func(error)) { f(ws) }
func (onStart) PhaseBegun(*daemon.Handle, *daemon.Phase)                        {}
func (onStart) PhaseEnded(*daemon.Handle, *daemon.Phase, string)                {}

// failingSink fails every write with err.
type failingSink struct{ err error }

func (f failingSink) Write(context.Context, *sources.Batch) (int, error) { return 0, f.err }
func (f failingSink) Close(context.Context) error                        { return nil }

// partial is a write error after which n rows were stored.
type partial struct{ n int }

func (p partial) Error() string { return "partial write" }
func (p partial) Stored() int   { return p.n }

// /metrics keeps the two latencies apart: on the run of
// TestCoordinatedOmission (10,000 writes of 1 ms, a 1 s stall), the service
// time summed over every write is 10,000 × 1 ms plus at most 4 writes in
// flight that waited out the stall (≤ 4 × 1 s), while the response time
// adds the wait of the ~1000 writes due during the stall (about 0.5 s
// each, so ~500 s).
func TestMetricsServiceVsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "4", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "5s",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@4s"), p)
		res := runServed(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		mfs, err := res.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][2]float64{} // name → count, sum
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if h := m.GetHistogram(); h != nil {
					got[mf.GetName()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
				}
			}
		}
		for _, tc := range []struct {
			name   string
			lo, hi float64 // sum, seconds
		}{
			{"soakd_service_seconds", 10, 10 + 4*1.001},
			{"soakd_response_seconds", 100, 2000},
		} {
			g, ok := got[tc.name]
			if !ok {
				t.Errorf("no %s", tc.name)
				continue
			}
			if g[0] != 10000 || g[1] < tc.lo || g[1] > tc.hi {
				t.Errorf("%s: %v writes summing to %vs, want 10000 summing to [%v, %v] s", tc.name, g[0], g[1], tc.lo, tc.hi)
			}
		}
	})
}

// Past MAX_LAG, work is dropped and counted, and nothing is lost from the
// books: every scheduled unit is acknowledged or dropped.
func TestDropsAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_MAX_LAG", "100ms",
			"SOAKD_SEQ_TARGET", "null://?capacity=500"), p)
		res := runServed(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Dropped == 0 {
			t.Fatal("nothing dropped though the target handles a quarter of the rate")
		}
		if w.Scheduled != w.Units+w.Dropped+w.Failed {
			t.Fatalf("scheduled %d != acked %d + dropped %d + failed %d", w.Scheduled, w.Units, w.Dropped, w.Failed)
		}
		if w.Scheduled != 40000 {
			t.Errorf("scheduled %d units in 20s at 2000/s, want 40000", w.Scheduled)
		}
		// The modelled server does 500 units/s; what it acknowledged is that.
		if w.Units < 9000 || w.Units > 10100 {
			t.Errorf("acked %d, want about 10000 (500/s for 20 s)", w.Units)
		}
		if got := gatherValue(t, res.reg, "soakd_dropped_total"); int64(got) != w.Dropped {
			t.Errorf("soakd_dropped_total = %v, summary says %d", got, w.Dropped)
		}
		// Response latency of what was sent stays within MAX_LAG plus the service time.
		if p99 := w.Ops[0].Response.P99; p99 > 0.2 {
			t.Errorf("response p99 %.3fs: work later than MAX_LAG should have been dropped", p99)
		}
	})
}

// When every worker is stuck for longer than MAX_LAG, the queue fills and
// the scheduler drops each ticket once it is MAX_LAG late; when the target
// answers again the workers drop what waited in the queue. Those units
// were scheduled and dropped: the count scheduled stays the rate's
// integral, and the count dropped is exact. At 2000 rows/s in batches of
// 10, batch k is due at k × 5 ms; the target stalls 5 s after its first
// write (batch 1, at 5 ms), from 5.005 s to 8.005 s. The two workers take
// the batches due at 5.005 s and 5.010 s and wait out the stall; every
// later batch due no later than 8.005 s − MAX_LAG is dropped, the rest is
// sent. (MAX_LAG is 102 ms so that no drop falls on the instant the stall
// ends, where a worker freeing up and a ticket timing out would race.)
func TestSchedulerBulkDrops(t *testing.T) {
	const (
		interval   = 5 * time.Millisecond // 10 rows at 2000 rows/s
		maxLag     = 102 * time.Millisecond
		stallStart = interval + 5*time.Second
		stallEnd   = stallStart + 3*time.Second
		workers    = 2
	)
	var wantDropped int64
	busy := 0 // batches handed to the workers since the stall began
	for k := int64(1); time.Duration(k)*interval <= stallEnd-maxLag; k++ {
		due := time.Duration(k) * interval
		switch {
		case due < stallStart:
		case busy < workers:
			busy++
		default:
			wantDropped += 10
		}
	}
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_MAX_LAG", "102ms",
			"SOAKD_SEQ_TARGET", "null://?stall=3s@5s"), p)
		res := runServed(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		t.Logf("scheduled %d, acked %d, dropped %d", w.Scheduled, w.Units, w.Dropped)
		if w.Scheduled != 40000 {
			t.Errorf("scheduled %d units in 20 s at 2000/s, want 40000", w.Scheduled)
		}
		if w.Dropped != wantDropped {
			t.Errorf("dropped %d, want %d: the batches due from the stall's third to MAX_LAG before its end", w.Dropped, wantDropped)
		}
		if w.Scheduled != w.Units+w.Dropped+w.Failed || w.InFlight != 0 {
			t.Errorf("scheduled %d != acked %d + dropped %d + failed %d (in flight %d)", w.Scheduled, w.Units, w.Dropped, w.Failed, w.InFlight)
		}
		if got := gatherValue(t, res.reg, "soakd_scheduled_total"); int64(got) != w.Scheduled {
			t.Errorf("soakd_scheduled_total = %v, summary says %d", got, w.Scheduled)
		}
	})
}

// Metric names follow Prometheus conventions and are exactly DESIGN.md's.
func TestMetricsLintAndNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "2s", "SOAKD_SEQ_TARGET", "null://"), p)
		res := runServed(context.Background(), cfg, p)
		problems, err := testutil.GatherAndLint(res.reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range problems {
			t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
		}
		want := `
# HELP soakd_rows_total Rows acknowledged by the target.
# TYPE soakd_rows_total counter
soakd_rows_total{workload="seq"} 200
# HELP soakd_ops_total Batches (series) or key-value operations by outcome.
# TYPE soakd_ops_total counter
soakd_ops_total{op="write",result="error",workload="seq"} 0
soakd_ops_total{op="write",result="ok",workload="seq"} 20
# HELP soakd_dropped_total Scheduled units never sent: later than MAX_LAG, or still queued when writes were cut at shutdown.
# TYPE soakd_dropped_total counter
soakd_dropped_total{workload="seq"} 0
# HELP soakd_scheduled_total Units (rows or ops) the schedule released: acknowledged + failed + dropped + in flight.
# TYPE soakd_scheduled_total counter
soakd_scheduled_total{workload="seq"} 200
# HELP soakd_failed_total Units (rows or ops) in batches that failed for good, after retries.
# TYPE soakd_failed_total counter
soakd_failed_total{workload="seq"} 0
# HELP soakd_inflight_units Units scheduled but not yet acknowledged, failed or dropped: queued for a worker or being written.
# TYPE soakd_inflight_units gauge
soakd_inflight_units{workload="seq"} 0
# HELP soakd_workers Configured workers.
# TYPE soakd_workers gauge
soakd_workers{workload="seq"} 4
`
		if err := testutil.GatherAndCompare(res.reg, strings.NewReader(want),
			"soakd_rows_total", "soakd_ops_total", "soakd_dropped_total", "soakd_workers",
			"soakd_scheduled_total", "soakd_failed_total", "soakd_inflight_units"); err != nil {
			t.Error(err)
		}
		mfs, err := res.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		for _, n := range []string{"soakd_target_rate", "soakd_rows_total", "soakd_values_total", "soakd_ops_total",
			"soakd_errors_total", "soakd_dropped_total", "soakd_bytes_total", "soakd_response_seconds",
			"soakd_service_seconds", "soakd_dispatch_delay_seconds", "soakd_schedule_lag_seconds", "soakd_inflight", "soakd_workers",
			"soakd_build_info", "go_goroutines", "process_cpu_seconds_total"} {
			if !names[n] {
				t.Errorf("metric %s missing", n)
			}
		}
		for _, mf := range mfs {
			if mf.GetName() == "soakd_response_seconds" {
				h := mf.GetMetric()[0].GetHistogram()
				if h.GetSchema() == 0 && len(h.GetPositiveSpan()) == 0 {
					t.Error("soakd_response_seconds has no native histogram")
				}
				if len(h.GetBucket()) == 0 {
					t.Error("soakd_response_seconds has no classic buckets")
				}
			}
		}
	})
}

func TestPartialWritesCountStoredRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins(sinks.Entry{Schemes: []string{"half"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return failingSink{sinks.NewError(sinks.Rejected, false, partial{4})}, nil
			}})
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "half://x", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "1s"), p)
		res := runServed(context.Background(), cfg, p)
		w := res.sum.Workloads[0]
		if w.Units != 40 || w.Failed != 60 {
			t.Fatalf("acked %d failed %d, want 40 stored and 60 failed of 100", w.Units, w.Failed)
		}
		if got := gatherValue(t, res.reg, "soakd_rows_total"); got != 40 {
			t.Errorf("soakd_rows_total = %v, want 40", got)
		}
		// seq rows hold one value each: the stored rows' values count.
		if w.Values != 40 {
			t.Errorf("values %d, want the 40 of the 40 stored rows", w.Values)
		}
		if got := gatherValue(t, res.reg, "soakd_values_total"); got != 40 {
			t.Errorf("soakd_values_total = %v, want 40", got)
		}
	})
}

// /status's achieved_rate is the rows acknowledged per second over the
// last 10 s, not the rows scheduled: with a target keeping 4 rows of each
// 10-row batch at 1000 rows/s, it reads 400/s once 10 s have passed.
func TestStatusAchievedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins(sinks.Entry{Schemes: []string{"part"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return failingSink{sinks.NewError(sinks.Rejected, false, partial{4})}, nil
			}})
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "part://x", "SOAKD_SEQ_RATE", "1000",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "20s"), p)
		s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: prometheus.NewRegistry()})
		h := s.Handler()
		open := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
				Observers: []daemon.Observer{s, onStart(func([]*daemon.Handle) { close(open) })}})
			done <- err
		}()
		<-open
		// Half-way between two of the reporter's 1 s samples, so none
		// falls on the same instant as this read.
		time.Sleep(15500 * time.Millisecond)
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		var st report.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || len(st.Workloads) != 1 {
			t.Fatalf("/status: %v\n%s", err, rec.Body.String())
		}
		const want = 4.0 * 1000 / 10 // 4 rows kept of each of 100 batches/s
		if a := st.Workloads[0].Achieved; math.Abs(a-want) > want*0.01 {
			t.Errorf("/status achieved_rate %v, want %v (the rows acknowledged per second)", a, want)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// While the target cannot keep up, soakd_schedule_lag_seconds shows how far
// behind the schedule is; it stays within MAX_LAG (older work is dropped).
func TestLagGauge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "2s",
			"SOAKD_SEQ_TARGET", "null://?capacity=500"), p)
		reg := prometheus.NewRegistry()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Registry: reg})
			_, _ = daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{s}})
		}()
		time.Sleep(5500 * time.Millisecond)
		lag := gatherValue(t, reg, "soakd_schedule_lag_seconds")
		rate := gatherValue(t, reg, "soakd_target_rate")
		<-done
		if lag < 0.5 || lag > 2.5 {
			t.Errorf("lag %.3fs while the target does a quarter of the rate; want between 0.5s and MAX_LAG", lag)
		}
		if rate != 2000 {
			t.Errorf("soakd_target_rate = %v", rate)
		}
	})
}

// A stream may fill a batch with fewer units than asked and more to come
// (a wall-clock source whose devices hold their readings: offline, or
// late): the units it did not give were never made, so they are not
// counted scheduled. The run ends with nothing in flight, scheduled
// equal to what was acknowledged, in a closed and an open loop.
func TestShortFillsAreNotInFlight(t *testing.T) {
	for _, rate := range []string{"100", "max"} {
		t.Run("rate="+rate, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := daemon.Plugins()
				p.Sources = sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
					Names: []string{"seq"}, Kind: sources.Series,
					Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
					New: func(c *seq.Config, w sources.Common) (sources.Source, error) {
						s, err := seq.New(*c, w.Shard)
						return shortSource{s}, err
					},
				}))
				cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_SEQ_RATE", rate,
					"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "2s"), p)
				res := runServed(context.Background(), cfg, p)
				if res.err != nil {
					t.Fatal(res.err)
				}
				w := res.sum.Workloads[0]
				if w.Units == 0 || w.InFlight != 0 || w.Scheduled != w.Units || w.Failed != 0 || w.Dropped != 0 {
					t.Errorf("scheduled %d = acknowledged %d + failed %d + dropped %d + in flight %d: want every unit made acknowledged, none in flight",
						w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
				}
			})
		})
	}
}

// shortSource is the seq source whose streams fill at most half of what
// each batch asks, with more to come.
type shortSource struct{ *seq.Source }

func (s shortSource) Stream(part, parts int) (sources.Stream, error) {
	st, err := s.Source.Stream(part, parts)
	return shortStream{st}, err
}

type shortStream struct{ sources.Stream }

func (s shortStream) Fill(b *sources.Batch, max int, now int64) error {
	return s.Stream.Fill(b, (max+1)/2, now)
}
