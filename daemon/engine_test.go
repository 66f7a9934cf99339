package daemon

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

func testEnv(kv ...string) map[string]string {
	m := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// A 1 s stall of the target at a constant 1000 ops/s must show in the
// response latency (measured from the intended start) while the service
// latency (from the actual send) stays small: the stall delays about 1000
// operations but only the few in flight saw it. A closed-loop tool would
// report only the latter.
func TestCoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "4", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "5s",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@4s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Units != 10000 || w.Dropped != 0 {
			t.Fatalf("acked %d dropped %d, want 10000 and 0", w.Units, w.Dropped)
		}
		op := w.Ops[0]
		t.Logf("response p50 %.4fs p99 %.4fs max %.4fs; service p50 %.4fs p99 %.4fs max %.4fs",
			op.Response.P50, op.Response.P99, op.Response.Max, op.Service.P50, op.Service.P99, op.Service.Max)
		if op.Response.P99 < 0.5 {
			t.Errorf("response p99 = %.3fs, want >= 0.5s: the stall is hidden", op.Response.P99)
		}
		if op.Service.P99 > 0.05 {
			t.Errorf("service p99 = %.3fs, want small", op.Service.P99)
		}
		if op.Service.Max < 0.9 {
			t.Errorf("service max = %.3fs: the writes in flight during the stall should have taken ~1s", op.Service.Max)
		}
	})
}

// /metrics keeps the two latencies apart: on the run of
// TestCoordinatedOmission (10,000 writes of 1 ms, a 1 s stall), the service
// time summed over every write is 10,000 × 1 ms plus at most 4 writes in
// flight that waited out the stall (≤ 4 × 1 s), while the response time
// adds the wait of the ~1000 writes due during the stall (about 0.5 s
// each, so ~500 s).
func TestMetricsServiceVsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "4", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "5s",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@4s"), p)
		res := runTest(context.Background(), cfg, p, nil)
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

// While the target stalls longer than MAX_LAG with every worker stuck in
// a write, the count scheduled keeps growing at the rate and the late
// work is counted as dropped as it happens: at every instant at least the
// rate's integral up to MAX_LAG ago is scheduled. (The scheduler used to
// wait for a free worker with a ticket in hand, so both counts froze for
// the whole stall and caught up only after it.)
func TestScheduleKeepsClockDuringStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_MAX_LAG", "500ms",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=10s@5s"), p)
		var wl *workload
		open := make(chan struct{})
		done := make(chan runResult, 1)
		go func() {
			reg := prometheus.NewRegistry()
			d, _ := serving(cfg, Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"}, reg, nil)
			d.started = func(wls []*workload) { wl = wls[0]; close(open) }
			sum, err := Run(context.Background(), cfg, d)
			done <- runResult{sum, err, reg}
		}()
		<-open
		for range 40 {
			time.Sleep(500 * time.Millisecond)
			synctest.Wait()
			ps := wl.cur.Load()
			if ps == nil {
				continue
			}
			el := wl.since()
			c := ps.snapshot()
			if lo := 1000*(el-500*time.Millisecond).Seconds() - 10; float64(c.scheduled) < lo {
				t.Errorf("at %v: %d scheduled (%d dropped), want >= %.0f", el, c.scheduled, c.dropped, lo)
			}
			if c.scheduled != c.acked+c.failed+c.dropped+c.inflight() {
				t.Fatalf("at %v: the books do not balance: %+v", el, c)
			}
		}
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Scheduled != 20000 || w.Units+w.Dropped != w.Scheduled || w.Dropped < 8000 {
			t.Errorf("scheduled %d, acked %d, dropped %d: want 20000 scheduled, about 9000 of them dropped", w.Scheduled, w.Units, w.Dropped)
		}
	})
}

// Past MAX_LAG, work is dropped and counted, and nothing is lost from the
// books: every scheduled unit is acknowledged or dropped.
func TestDropsAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_MAX_LAG", "100ms",
			"SOAKD_SEQ_TARGET", "null://?capacity=500"), p)
		res := runTest(context.Background(), cfg, p, nil)
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
		if got := gatherValue(t, res, "soakd_dropped_total"); int64(got) != w.Dropped {
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
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_MAX_LAG", "102ms",
			"SOAKD_SEQ_TARGET", "null://?stall=3s@5s"), p)
		res := runTest(context.Background(), cfg, p, nil)
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
		if got := gatherValue(t, res, "soakd_scheduled_total"); int64(got) != w.Scheduled {
			t.Errorf("soakd_scheduled_total = %v, summary says %d", got, w.Scheduled)
		}
	})
}

// When the scheduler itself falls behind by more than MAX_LAG (its thread
// stalled: a long GC pause, a stopped or starved process), it catches up
// in one step: every batch whose intended start is more than MAX_LAG
// before now is dropped, to the batch, and the next one is sent. The
// stall here is the scheduler starting late; the expected count is the
// batches of the constant rate due before now − MAX_LAG, counted one by
// one from the rate, the batch size and the stall.
func TestSchedulerCatchUpDropsExactly(t *testing.T) {
	const (
		rate   = 2000 // units/s
		batch  = 10   // a batch every 5 ms
		maxLag = 100 * time.Millisecond
		// Not a multiple of the batch interval: no batch is due exactly
		// MAX_LAG before the scheduler wakes.
		stall    = 3*time.Second + 2500*time.Microsecond
		duration = 5 * time.Second
	)
	// Batch k (from 1) holds units (k−1)·batch+1 … k·batch and is due when
	// its last unit is, at k·batch/rate.
	var wantDropped int64
	for k := int64(1); time.Duration(k*batch)*time.Second/rate < stall-maxLag; k++ {
		wantDropped += batch
	}
	if wantDropped != 5800 { // 2.9025 s at 2000/s is 5805 units: 580 whole batches
		t.Fatalf("expected count %d: the arithmetic above is off", wantDropped)
	}
	synctest.Test(t, func(t *testing.T) {
		pl := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_MAX_LAG", "100ms"), pl)
		wc := cfg.Workload[0]
		src, err := wc.NewSource()
		if err != nil {
			t.Fatal(err)
		}
		r := newRunner(wc, sources.Series, src, nil, zap.NewNop())
		p, err := r.newPhase(src)
		if err != nil {
			t.Fatal(err)
		}
		p.st = r.beginPhase("run", wc.Rate, p.rec)
		// A stand-in for the workers that takes every ticket at once and
		// notes what it got and when.
		type got struct {
			units    int64
			maxLate  time.Duration
			firstDue time.Duration
		}
		taken := make(chan got)
		go func() {
			g := got{firstDue: -1}
			for tk := range p.queue {
				if g.firstDue < 0 {
					g.firstDue = tk.due
				}
				g.units += int64(tk.units)
				g.maxLate = max(g.maxLate, r.since()-tk.due)
			}
			taken <- g
		}()
		time.Sleep(stall)
		r.schedule(context.Background(), p, duration)
		close(p.queue)
		g := <-taken
		c := p.st.snapshot()
		if c.dropped != wantDropped {
			t.Errorf("dropped %d units catching up after a %v stall, want %d (the batches due more than MAX_LAG %v before it ended)",
				c.dropped, stall, wantDropped, maxLag)
		}
		if want := int64(rate * duration / time.Second); c.scheduled != want || g.units+c.dropped != want {
			t.Errorf("scheduled %d, handed over %d + dropped %d, want %d scheduled, every one handed over or dropped",
				c.scheduled, g.units, c.dropped, want)
		}
		// The first batch sent is the first one not dropped, and it was
		// less than MAX_LAG late.
		if wantDue := time.Duration(wantDropped+batch) * time.Second / rate; g.firstDue != wantDue {
			t.Errorf("first batch handed over was due at %v, want %v", g.firstDue, wantDue)
		}
		if g.maxLate > maxLag {
			t.Errorf("a batch %v late was handed over, more than MAX_LAG %v", g.maxLate, maxLag)
		}
	})
}

// gatherValue returns the value of the one counter or gauge called name.
func gatherValue(t *testing.T, res runResult, name string) float64 {
	t.Helper()
	mfs, err := res.reg.Gather()
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

// Stages, step profiles and their end: a finite profile ends the workload
// after sending exactly its integral.
func TestFiniteProfileSendsIntegral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		// 0 -> 1000/s over 10 s, then 1000/s for 5 s: 5000 + 5000 units.
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "10s:1000,5s:1000", "SOAKD_SEQ_BATCH_SIZE", "7"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workloads[0]
		if w.Units != 10000 {
			t.Fatalf("acked %d, want 10000 (the integral, with a partial last batch)", w.Units)
		}
		if w.Seconds < 15 || w.Seconds > 15.1 {
			t.Errorf("took %.3fs, want 15s", w.Seconds)
		}
	})
}

// A finite data set ends the workload when every stream is exhausted,
// with every row written once.
func TestFiniteSourceEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "max", "SOAKD_SEQ_ROWS", "123457",
			"SOAKD_SEQ_DEVICES", "13", "SOAKD_SEQ_WORKERS", "3", "SOAKD_SEQ_BATCH_SIZE", "1000"), p)
		res := runTest(context.Background(), cfg, p, nil)
		if got := res.sum.Workloads[0].Units; got != 123457 {
			t.Fatalf("acked %d rows, want 123457", got)
		}
	})
}

// failingSink fails every write with a given error.
type failingSink struct{ err error }

func (f failingSink) Write(context.Context, *sources.Batch) (int, error) { return 0, f.err }
func (f failingSink) Close(context.Context) error                        { return nil }

func TestErrorsCountedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"fail"}, Kinds: []sources.Kind{sources.Series},
			Open: func(_ context.Context, u *url.URL, _ sinks.Options) (sinks.Sink, error) {
				retry := u.Query().Get("retry") == "1"
				return failingSink{sinks.NewError(sinks.Connection, retry, context.Canceled)}, nil
			}})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "10", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_RETRIES", "2", "SOAKD_SEQ_TARGET", "fail://x?retry=1"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workloads[0]
		if w.Units != 0 || w.Failed != 100 {
			t.Fatalf("acked %d failed %d, want 0 and 100", w.Units, w.Failed)
		}
		if got := w.Errors["connection"]; got != 300 {
			t.Errorf("connection errors %d, want 300 (3 attempts per batch)", got)
		}
		if res.sum.Failed() == nil {
			t.Error("a run where every write failed must fail")
		}
	})
}

// SIGTERM (ctx done) stops scheduling; writes in flight get the grace
// period; Run returns with a summary.
func TestGracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		latency  string
		wantAcks bool
		maxTook  time.Duration
	}{
		{"in-flight writes finish within grace", "2s", true, 5*time.Second + 2*time.Second},
		{"grace cuts writes still in flight", "1h", false, 5*time.Second + 3*time.Second + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := testPlugins()
				cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
					"SOAKD_SEQ_WORKERS", "2", "SOAKD_SHUTDOWN_GRACE", "3s", "SOAKD_SEQ_TIMEOUT", "0",
					"SOAKD_SEQ_TARGET", "null://?latency="+tc.latency), p)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(5*time.Second, cancel)
				t0 := time.Now()
				res := runTest(ctx, cfg, p, nil)
				took := time.Since(t0)
				if res.err != nil {
					t.Fatal(res.err)
				}
				if took > tc.maxTook {
					t.Errorf("Run took %v after a stop at 5s with grace 3s", took)
				}
				w := res.sum.Workloads[0]
				if tc.wantAcks && w.Units == 0 {
					t.Error("writes in flight should have finished within the grace period")
				}
				if !tc.wantAcks && w.Errors["timeout"] == 0 {
					t.Errorf("writes cut by the grace period should count as timeouts: %+v", w.Errors)
				}
			})
		})
	}
}

// Metric names follow Prometheus conventions and are exactly DESIGN.md's.
func TestMetricsLintAndNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "2s", "SOAKD_SEQ_TARGET", "null://"), p)
		res := runTest(context.Background(), cfg, p, nil)
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

// SHARD=i/N runs 1/N of the rate: N processes add up to RATE.
func TestShardRunsItsShareOfTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "4000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_SHARD", "1/4", "SOAKD_SEQ_DURATION", "10s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		if got := res.sum.Workloads[0].Units; got != 10000 {
			t.Fatalf("shard 1/4 of 4000/s for 10 s acked %d, want 10000", got)
		}
	})
}

// Every write failing fails the run, and the summary gives the last
// error and the number of failed attempts.
func TestNoWriteSucceededExplained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?fail=1&fail_class=rejected",
			"SOAKD_SEQ_RATE", "10", "SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_DURATION", "5s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		f := res.sum.Workloads[0].Failure
		if f == nil || !strings.Contains(f.Reason, "no write succeeded") || f.Class != "rejected" || f.Attempts != 50 ||
			f.LastError == "" || f.Seconds < 4.8 || f.Seconds > 5 {
			t.Fatalf("failure %+v, want no write succeeded, rejected, 50 attempts over ~4.9 s", f)
		}
	})
}

// slowPrepare is a sink whose schema takes a while to create.
type slowPrepare struct{ failingSink }

func (slowPrepare) Prepare(ctx context.Context) error {
	select {
	case <-time.After(5 * time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (slowPrepare) Write(context.Context, *sources.Batch) (int, error) { return 0, nil }

// The schedule starts when the target is ready, not when soakd started:
// a slow Prepare must not make the first seconds look late.
func TestScheduleStartsAfterPrepare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"slow"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return slowPrepare{}, nil }})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "slow://x", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_MAX_LAG", "100ms"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workloads[0]
		if w.Units != 500 || w.Dropped != 0 {
			t.Fatalf("acked %d dropped %d, want 500 and 0", w.Units, w.Dropped)
		}
		if w.Seconds < 4.99 || w.Seconds > 5.01 {
			t.Errorf("workload ran %.3fs, want 5s after the target was ready", w.Seconds)
		}
	})
}

// partial is a write error after which the target kept some rows.
type partial struct{ n int }

func (p partial) Error() string { return "partial write" }
func (p partial) Stored() int   { return p.n }

func TestPartialWritesCountStoredRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"half"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return failingSink{sinks.NewError(sinks.Rejected, false, partial{4})}, nil
			}})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "half://x", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "1s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workloads[0]
		if w.Units != 40 || w.Failed != 60 {
			t.Fatalf("acked %d failed %d, want 40 stored and 60 failed of 100", w.Units, w.Failed)
		}
		if got := gatherValue(t, res, "soakd_rows_total"); got != 40 {
			t.Errorf("soakd_rows_total = %v, want 40", got)
		}
	})
}

// The achieved rate is what the target acknowledged per second, not what
// was scheduled: on a run where each 10-row batch keeps only 4 rows (a
// partial write), 1000 rows/s for 10 s schedules 10,000 rows and
// acknowledges 4,000, so the summary's units_per_second (and its JSON)
// reads 400/s where the schedule says 1000/s (the achieved thresholds:
// thresholds/judge's TestAchievedCountsAcknowledged).
func TestSummaryRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"part"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return failingSink{sinks.NewError(sinks.Rejected, false, partial{4})}, nil
			}})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "part://x", "SOAKD_SEQ_RATE", "1000",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "10s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workload("seq", "run")
		if w.Scheduled != 10000 || w.Units != 4000 || w.Failed != 6000 {
			t.Fatalf("scheduled %d acked %d failed %d, want 10000, 4000 and 6000", w.Scheduled, w.Units, w.Failed)
		}
		// The phase lasts the 10 s DURATION (the fake clock makes the
		// writes take no time).
		if w.Seconds < 10 || w.Seconds > 10.001 {
			t.Fatalf("phase lasted %vs, want 10s", w.Seconds)
		}
		const want = 4000.0 / 10 // acknowledged rows over the duration
		if math.Abs(w.UnitRate-want) > want*1e-3 {
			t.Errorf("units_per_second %v, want %v (4000 rows acknowledged in 10 s)", w.UnitRate, want)
		}
		js, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Rate float64 `json:"units_per_second"`
		}
		if err := json.Unmarshal(js, &back); err != nil || math.Abs(back.Rate-want) > want*1e-3 {
			t.Errorf("JSON units_per_second %v (%v), want %v", back.Rate, err, want)
		}
	})
}

// /status's achieved_rate is the rows acknowledged per second over the
// last 10 s, not the rows scheduled: with a target keeping 4 rows of each
// 10-row batch at 1000 rows/s, it reads 400/s once 10 s have passed.
func TestStatusAchievedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins(sinks.Entry{Schemes: []string{"part"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return failingSink{sinks.NewError(sinks.Rejected, false, partial{4})}, nil
			}})
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "part://x", "SOAKD_SEQ_RATE", "1000",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "20s"), p)
		var h http.Handler
		open := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			d, hh := serving(cfg, Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"}, prometheus.NewRegistry(), nil)
			d.started = func([]*workload) { h = hh; close(open) }
			_, err := Run(context.Background(), cfg, d)
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
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "2s",
			"SOAKD_SEQ_TARGET", "null://?capacity=500"), p)
		reg := prometheus.NewRegistry()
		done := make(chan struct{})
		go func() {
			defer close(done)
			d, _ := serving(cfg, Deps{Logger: zap.NewNop(), Plugins: p}, reg, nil)
			_, _ = Run(context.Background(), cfg, d)
		}()
		time.Sleep(5500 * time.Millisecond)
		lag := gatherValue(t, runResult{reg: reg}, "soakd_schedule_lag_seconds")
		rate := gatherValue(t, runResult{reg: reg}, "soakd_target_rate")
		<-done
		if lag < 0.5 || lag > 2.5 {
			t.Errorf("lag %.3fs while the target does a quarter of the rate; want between 0.5s and MAX_LAG", lag)
		}
		if rate != 2000 {
			t.Errorf("soakd_target_rate = %v", rate)
		}
	})
}
