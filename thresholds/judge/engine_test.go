package judge

import (
	"net/url"

	"bytes"
	"context"
	"encoding/json"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/summary"
	"strings"
	"testing"
	"testing/synctest"
)

// A target whose latency steps from 2 ms to 4 ms half-way through the run
// fails drift.p99<20%; the same target without the step passes. Either
// way the summary lists every threshold, in text and JSON.
func TestDriftThresholdOnLatencyStep(t *testing.T) {
	for _, tc := range []struct {
		target string
		fail   bool
	}{
		{"null://?latency=2ms&slowdown=2ms@30s", true},
		{"null://?latency=2ms", false},
	} {
		t.Run(tc.target, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := enginetest.Plugins()
				cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
					"SOAKD_SEQ_DURATION", "60s", "SOAKD_SEQ_TARGET", tc.target, "SOAKD_SEQ_DRIFT_WARMUP", "10s",
					"SOAKD_SEQ_THRESHOLDS", "drift.p99<20%@20s, p99<50ms, achieved>99%, dropped=0"), p)
				res := runTest(context.Background(), cfg, p)
				if res.err != nil {
					t.Fatal(res.err)
				}
				w := res.sum.Workload("seq", "run")
				if len(w.Thresholds) != 4 {
					t.Fatalf("thresholds %+v", w.Thresholds)
				}
				d := w.Thresholds[0]
				t.Logf("%s: ok %v, value %v, early %+v, latest %+v", d.Threshold, d.OK, *d.Value, d.EarlyWindow, d.LatestWindow)
				if d.OK == tc.fail {
					t.Errorf("drift ok = %v, want %v: %+v", d.OK, !tc.fail, d)
				}
				// The late window ends with the run phase, a few ms after 60 s
				// (the last writes' latency): its last slice is that tail, so
				// it starts a step (2 s) later than 40 s.
				if d.EarlyWindow.From != 10 || d.EarlyWindow.To != 30 || d.LatestWindow.From != 42 ||
					d.LatestWindow.To < 60 || d.LatestWindow.To > 60.1 {
					t.Errorf("windows %+v and %+v, want 10s–30s and 42s–60s", d.EarlyWindow, d.LatestWindow)
				}
				for _, r := range w.Thresholds[1:] {
					if !r.OK {
						t.Errorf("%s failed: %+v", r.Threshold, r)
					}
				}
				err := res.sum.Failed()
				if tc.fail != (err != nil) || (err != nil && err.Error() != "workload seq: 1 of 4 thresholds failed: drift.p99<20%@20s") {
					t.Errorf("Failed() = %v", err)
				}
				var text bytes.Buffer
				summary.WriteText(&text, res.sum)
				mark := "✓"
				if tc.fail {
					mark = "✗"
				}
				if !strings.Contains(text.String(), "thresholds (run phase):\n  "+mark+" drift.p99<20%@20s  ") {
					t.Errorf("text summary:\n%s", text.String())
				}
				js, err := json.Marshal(res.sum)
				if err != nil || !strings.Contains(string(js), `"threshold":"drift.p99\u003c20%@20s","ok":`+map[bool]string{true: "false", false: "true"}[tc.fail]) {
					t.Errorf("JSON summary (%v): %s", err, js)
				}
			})
		})
	}
}

// A threshold marked ! stops the run once it fails for its window: a 1 s
// stall at 10 s fails p99<50ms@5s! at the first window holding it, and
// every workload stops with a summary that says why.
func TestAbortOnFailStopsWithinAWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq,other", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "60s", "SOAKD_SEQ_MAX_LAG", "5s", "SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@10s",
			"SOAKD_SEQ_THRESHOLDS", "p99<50ms@5s!, errors<1%",
			"SOAKD_OTHER_SOURCE", "seq", "SOAKD_OTHER_RATE", "100", "SOAKD_OTHER_TARGET", "null://", "SOAKD_DURATION", "60s"), p)
		res := runTest(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workload("seq", "run")
		t.Logf("stopped by %q after %.2fs", w.StoppedBy, w.Seconds)
		if w.StoppedBy != "threshold p99<50ms@5s! of workload seq failed" {
			t.Errorf("stopped by %q", w.StoppedBy)
		}
		// The stall ends 11 s in; the window ending at the next step (1 s
		// for a 5 s window) holds the writes it delayed.
		if w.Seconds < 11 || w.Seconds > 12.01 {
			t.Errorf("the run lasted %.2fs, want it stopped within a step of the stall's end (11 s)", w.Seconds)
		}
		if o := res.sum.Workload("other", "run"); o.StoppedBy != w.StoppedBy || o.Seconds > 12 {
			t.Errorf("the other workload: stopped by %q after %.2fs", o.StoppedBy, o.Seconds)
		}
		r := w.Thresholds[0]
		if r.OK || !r.Abort || r.FailedWindows == 0 || r.WorstWindow.From > 10 || r.WorstWindow.To < 11 {
			t.Errorf("%+v (worst %+v)", r, r.WorstWindow)
		}
		if !w.Thresholds[1].OK || res.sum.Failed() == nil {
			t.Errorf("errors<1%%: %+v; Failed() = %v", w.Thresholds[1], res.sum.Failed())
		}
	})
}

// A whole-run check marked ! stops the run as soon as the run so far
// fails it.
func TestAbortOnFailWholeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_DURATION", "60s", "SOAKD_SEQ_RETRIES", "0", "SOAKD_SEQ_TARGET", "null://?fail=0.2",
			"SOAKD_SEQ_THRESHOLDS", "errors<5%!"), p)
		res := runTest(context.Background(), cfg, p)
		w := res.sum.Workload("seq", "run")
		if w.Seconds > 1.01 || !strings.HasPrefix(w.StoppedBy, "threshold errors<5%!") {
			t.Errorf("stopped by %q after %.2fs, want the first evaluation at 1 s", w.StoppedBy, w.Seconds)
		}
		// About 1000 writes failing with probability 0.2 each: the ratio
		// is binomial (mean 0.2, sd 0.013), so these bounds, 11 sd below
		// and 19 above, hold in every run (a ratio of 5 % or less has a
		// chance under 1e-25). With 100 batches of 10 the sd was 0.04 and
		// 5 % only 3.75 sd below: 1 run in 50,000 then stayed under the
		// threshold and went on past 1 s.
		if r := w.Thresholds[0]; r.OK || *r.Value <= 0.05 || *r.Value > 0.45 {
			t.Errorf("%+v: value %v, want the error ratio, near 0.2", r, *r.Value)
		}
	})
}

// A whole-run check on service. judges the service time (send → done),
// a plain or response. one the response time (intended start → done), on
// a run where the two differ a hundredfold: at 1000 writes/s of 1 ms each,
// a 1 s stall of the target delays the ~1000 writes due during it (the
// response time) but only the ≤4 in flight saw it while being served (at
// most 4 of 10,000 service times exceed 1 ms). So the service p99 is the
// modelled 1 ms and its mean at most 1 ms + 4 × 1 s / 10,000 = 1.4 ms,
// while the response p99 is most of the stall and the response mean near
// 1000 × 0.5 s / 10,000 = 50 ms.
func TestWholeRunServiceThresholds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "1000", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "4", "SOAKD_SEQ_DURATION", "10s", "SOAKD_SEQ_MAX_LAG", "5s",
			"SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=1s@4s",
			"SOAKD_SEQ_THRESHOLDS", "service.p99<5ms, service.mean<5ms, p99<5ms, response.mean<5ms"), p)
		res := runTest(context.Background(), cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workload("seq", "run")
		if w.Units != 10000 || w.Dropped != 0 {
			t.Fatalf("acked %d dropped %d, want 10000 and 0", w.Units, w.Dropped)
		}
		for _, tc := range []struct {
			name   string
			ok     bool
			lo, hi float64 // seconds
		}{
			// hdrhistogram keeps 3 significant digits: 1 ms reads back
			// within 0.1 %.
			{"service.p99<5ms", true, 0.001, 0.001001},
			{"service.mean<5ms", true, 0.001, 0.0014},
			{"p99<5ms", false, 0.5, 1.001},
			{"response.mean<5ms", false, 0.02, 0.1},
		} {
			r := result(t, w.Thresholds, tc.name)
			if r.Value == nil {
				t.Errorf("%s: no value: %+v", tc.name, r)
				continue
			}
			if r.OK != tc.ok || *r.Value < tc.lo || *r.Value > tc.hi || r.Unit != "seconds" {
				t.Errorf("%s: ok %v value %v %s, want ok %v and a value in [%v, %v] s", tc.name, r.OK, *r.Value, r.Unit, tc.ok, tc.lo, tc.hi)
			}
		}
	})
}

// The achieved checks read what the target acknowledged, not what was
// scheduled: on a run where each 10-row batch keeps only 4 rows (a
// partial write), 1000 rows/s for 10 s acknowledges 400/s, 40 % of the
// schedule.
func TestAchievedCountsAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins(sinks.Entry{Schemes: []string{"part"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
				return enginetest.FailingSink{Err: sinks.NewError(sinks.Rejected, false, enginetest.Partial{N: 4})}, nil
			}})
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "part://x", "SOAKD_SEQ_RATE", "1000",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "10s",
			"SOAKD_SEQ_THRESHOLDS", "achieved>390/s, achieved<410/s, achieved>39%, achieved<41%"), p)
		res := runTest(context.Background(), cfg, p)
		w := res.sum.Workload("seq", "run")
		if len(w.Thresholds) != 4 {
			t.Fatalf("thresholds %+v", w.Thresholds)
		}
		for _, r := range w.Thresholds {
			if !r.OK {
				t.Errorf("%s failed with value %v %s: the achieved rate is 400/s, 40%% of the schedule", r.Threshold, *r.Value, r.Unit)
			}
		}
	})
}
