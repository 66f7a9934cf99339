package daemon

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/pace"
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
		res := runTest(context.Background(), cfg, p)
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
		h, done := runStarted(cfg, p)
		wl := h.w
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
		g, c := scheduleAfterStall(t, stall, duration)
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

// A scheduler stalled past the end of DURATION (a stopped process, a
// paused VM) drops what was due within it and no more: 2000 units/s for
// 5 s is 10,000 units, all of them more than MAX_LAG late after an 8 s
// stall, none handed over.
func TestSchedulerStalledPastDurationDropsItsIntegral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, c := scheduleAfterStall(t, 8*time.Second, 5*time.Second)
		if c.scheduled != 10000 || c.dropped != 10000 || g.units != 0 {
			t.Errorf("scheduled %d, dropped %d, handed over %d; want 10000 scheduled and dropped, none handed over",
				c.scheduled, c.dropped, g.units)
		}
	})
}

// stalledTake is what a stand-in for the workers took of the scheduler's
// tickets: their units, the latest one's lateness, the first one's due
// time (-1 with none).
type stalledTake struct {
	units    int64
	maxLate  time.Duration
	firstDue time.Duration
}

// scheduleAfterStall runs the scheduler of a seq workload at 2000 units/s
// in batches of 10 with MAX_LAG 100 ms for duration, started stall after
// its phase began, with a stand-in for the workers that takes every
// ticket at once; inside a synctest bubble.
func scheduleAfterStall(t *testing.T, stall, duration time.Duration) (stalledTake, counts) {
	t.Helper()
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
	p.st = r.beginPhase("run", wc.Rate, p.starts)
	taken := make(chan stalledTake)
	go func() {
		g := stalledTake{firstDue: -1}
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
	return g, p.st.snapshot()
}

// Stages, step profiles and their end: a finite profile ends the workload
// after sending exactly its integral.
func TestFiniteProfileSendsIntegral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		// 0 -> 1000/s over 10 s, then 1000/s for 5 s: 5000 + 5000 units.
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "10s:1000,5s:1000", "SOAKD_SEQ_BATCH_SIZE", "7"), p)
		res := runTest(context.Background(), cfg, p)
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
		res := runTest(context.Background(), cfg, p)
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
		res := runTest(context.Background(), cfg, p)
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
				res := runTest(ctx, cfg, p)
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

// SHARD=i/N runs 1/N of the rate: N processes add up to RATE.
func TestShardRunsItsShareOfTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "4000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_SHARD", "1/4", "SOAKD_SEQ_DURATION", "10s"), p)
		res := runTest(context.Background(), cfg, p)
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
		res := runTest(context.Background(), cfg, p)
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
		res := runTest(context.Background(), cfg, p)
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
		res := runTest(context.Background(), cfg, p)
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

// A workload paused during its load phase is still paused when its run
// phase begins (the pause was answered ok; the run started at full rate).
func TestPauseCarriesIntoTheNextPhase(t *testing.T) {
	pl := testPlugins()
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100"), pl)
	wc := cfg.Workload[0]
	src, err := wc.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(wc, sources.Series, src, nil, zap.NewNop())
	r.beginPhase("load", wc.LoadRate, nil)
	r.applyControl(controlReq{pause: true, reply: make(chan error, 1)}, 0, new(tally), false, r.since())
	r.beginPhase("run", wc.Rate, nil)
	if s := r.sched.Load(); !s.paused || s.rateAt(time.Second) != 0 {
		t.Errorf("run phase after a pause in the load phase: paused %v, rate %v; want paused", s.paused, s.rateAt(time.Second))
	}
	r.applyControl(controlReq{resume: true, reply: make(chan error, 1)}, 0, new(tally), false, r.since())
	if s := r.sched.Load(); s.paused || s.rateAt(time.Second) != 100 {
		t.Errorf("after resume: paused %v, rate %v; want 100/s", s.paused, s.rateAt(time.Second))
	}
}

// A rate changed while every worker is busy (a ticket waiting for one, a
// backlog under MAX_LAG) counts the batches the old rate had due and not
// sent as scheduled and dropped: the new rate plans from the change, and
// they are never sent. They vanished from the books, so a capacity
// search's step at 40,000/s that achieved 25,600/s said 0 % dropped.
// A control request heard while a wake-up's batches are due and the
// workers are free to take them (SLACK holds the scheduler back half a
// second here) hands them over first: nothing is dropped, and the count
// scheduled is the rates' integral. The requests once dropped what was
// due, failing dropped=0 and blaming soakd for falling behind.
func TestControlWithIdleWorkersDropsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "4", "SOAKD_SEQ_SLACK", "500ms", "SOAKD_SEQ_DURATION", "4s",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms"), p)
		wl, done := runStarted(cfg, p)
		rate := func(s string) pace.Rate {
			r, err := pace.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		ctx := context.Background()
		start := time.Now() // the fake clock: the run starts now
		step := func(at time.Duration, what string, f func() error) {
			time.Sleep(time.Until(start.Add(at)))
			if err := f(); err != nil {
				t.Fatalf("%s at %v: %v", what, at, err)
			}
		}
		// 100/s to 1.5 s (the same rate set again at 1.2 s), paused
		// from 1.5 s to 1.8 s with the rate set to 200 meanwhile, then
		// 200/s to 4 s: 150 + 440 units.
		step(1200*time.Millisecond, "rate 100", func() error { return wl.SetRate(ctx, rate("100")) })
		step(1500*time.Millisecond, "pause", func() error { return wl.Pause(ctx) })
		step(1600*time.Millisecond, "rate 200", func() error { return wl.SetRate(ctx, rate("200")) })
		step(1800*time.Millisecond, "resume", func() error { return wl.Resume(ctx) })
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Dropped != 0 || w.Scheduled != 590 || w.Units != 590 {
			t.Errorf("scheduled %d = acked %d + failed %d + dropped %d; want 590 scheduled and acknowledged, none dropped",
				w.Scheduled, w.Units, w.Failed, w.Dropped)
		}
	})
}

func TestRateChangeCountsTheBacklogDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		// One worker takes 10 units per 100 ms (100/s) of the 1,000/s due.
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_DURATION", "4s", "SOAKD_SEQ_MAX_LAG", "1m",
			"SOAKD_SEQ_TARGET", "null://?latency=100ms"), p)
		wl, done := runStarted(cfg, p)
		time.Sleep(2 * time.Second)
		r, err := pace.Parse("100")
		if err != nil {
			t.Fatal(err)
		}
		if err := wl.SetRate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		c := wl.w.cur.Load().snapshot()
		// 2,000 units were due by the change, whole batches of 10.
		// The queue holds 64 tickets (640 units), sent late; the rest
		// not sent by then are dropped.
		if c.scheduled < 1990 || c.scheduled != c.acked+c.failed+c.dropped+c.inflight() || c.dropped < 1000 {
			t.Errorf("after the change at 2 s: scheduled %d = acked %d + failed %d + dropped %d + in flight %d; want the 2,000 units due scheduled, those neither sent nor queued dropped",
				c.scheduled, c.acked, c.failed, c.dropped, c.inflight())
		}
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if w.Scheduled < 2000 || w.Scheduled != w.Units+w.Dropped+w.Failed {
			t.Errorf("scheduled %d, acked %d, dropped %d: want at least the 2,000 due before the change, adding up", w.Scheduled, w.Units, w.Dropped)
		}
		t.Logf("scheduled %d = acked %d + dropped %d", w.Scheduled, w.Units, w.Dropped)
	})
}
