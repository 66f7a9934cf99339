package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
)

// While a run drops work, /status says what could not keep up: one
// worker against a target that takes 20 ms per write sends at most 50/s,
// so at 100/s the worker is busy all the time and the workers are named,
// with the settings to raise. Before anything was dropped, nothing is
// said.
func TestStatusNamesDropBottleneck(t *testing.T) {
	for _, latency := range []string{"20ms", "20s"} {
		t.Run(latency, func(t *testing.T) { statusNamesDropBottleneck(t, latency) })
	}
}

// statusNamesDropBottleneck is TestStatusNamesDropBottleneck with writes
// of latency: at 20 s (a stalled target) the one write under way is the
// worker's whole time, though it has not ended yet.
func statusNamesDropBottleneck(t *testing.T, latency string) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency="+latency, "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_MAX_LAG", "200ms", "SOAKD_SEQ_DURATION", "30s"), p)
		var h http.Handler
		open := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Registry: prometheus.NewRegistry()})
			h = s.Handler()
			_, _ = daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{s, onStart(func([]*daemon.Handle) { close(open) })}})
		}()
		<-open
		get := func() report.StatusWorkload {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
			var st report.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			return st.Workloads[0]
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if s := get(); s.Dropped != 0 || s.DropCause != nil {
			t.Fatalf("after 100 ms: dropped %d, cause %+v; want neither", s.Dropped, s.DropCause)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		s := get()
		if d := s.DropCause; s.Dropped == 0 || d == nil || d.Bottleneck != report.LimitWorkers ||
			!strings.Contains(d.Diagnosis, "SOAKD_SEQ_WORKERS (now 1)") || !strings.Contains(d.Diagnosis, "SOAKD_SEQ_BATCH_SIZE (now 1)") {
			t.Errorf("dropped %d, cause %+v: want the workers and the settings to raise", s.Dropped, d)
		}
		cancel()
		<-done
	})
}

// A worker whose writes all fail is as busy as one whose writes succeed:
// the same 20 ms a write, rejected every time, at twice what one worker
// can send, names the workers. Counted from the acknowledged writes'
// service times, the workers were "busy only 0%" and soakd was blamed.
func TestDropCauseCountsFailedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=20ms&fail=1&fail_class=rejected",
			"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_MAX_LAG", "200ms",
			"SOAKD_SEQ_DURATION", "5s"), p)
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
		if err != nil {
			t.Fatal(err)
		}
		w := sum.Workload("seq", "run")
		if d := w.DropCause; w.Dropped == 0 || w.Failed == 0 || d == nil || d.Bottleneck != report.LimitWorkers || d.WorkersBusy < 0.9 {
			t.Errorf("dropped %d, failed %d, cause %+v: want the workers named, busy nearly all the time", w.Dropped, w.Failed, d)
		}
	})
}

// Work dropped while the target stalls is the target's doing, not
// soakd's: a 3 s stall in a 20 s run keeps the workers busy only ~15 %
// of the phase, but every unit dropped waited for a worker while every
// worker was busy. That once read "soakd itself fell behind (CPU or
// scheduling)", sending users after soakd's CPU instead of the target.
func TestDropCauseTargetStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=3s@2s",
			"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_MAX_LAG", "200ms",
			"SOAKD_SEQ_DURATION", "20s"), p)
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
		if err != nil {
			t.Fatal(err)
		}
		w := sum.Workload("seq", "run")
		d := w.DropCause
		if w.Dropped == 0 || d == nil {
			t.Fatalf("dropped %d, cause %+v: want drops during the stall, with a cause", w.Dropped, d)
		}
		if d.WorkersBusy > 0.5 {
			t.Fatalf("workers busy %.0f%% of the phase: want a stall short against the phase", 100*d.WorkersBusy)
		}
		if d.Bottleneck != report.LimitWorkers || strings.Contains(d.Diagnosis, "soakd itself fell behind") {
			t.Errorf("cause %+v: want the workers (waiting on the target) named, not soakd", d)
		}
	})
}

// The same on the real clock at a rate where tickets come due closer
// together than a timer wakes: the scheduler, held by the full queue
// through the stall, drops the ticket it held when the timer fires and,
// on its next loop, in bulk what came due meanwhile. Counted as soakd's
// lateness, those bulk drops (two thirds of the stall's) named soakd
// although the target held every worker.
func TestDropCauseTargetStallAtHighRate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 6 s on the real clock")
	}
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms&stall=2s@1s",
		"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_WORKERS", "32", "SOAKD_SEQ_RATE", "3000", "SOAKD_SEQ_MAX_LAG", "1s",
		"SOAKD_SEQ_DURATION", "6s"), p)
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
	if err != nil {
		t.Fatal(err)
	}
	w := sum.Workload("seq", "run")
	d := w.DropCause
	if w.Dropped < 1000 || d == nil {
		t.Fatalf("dropped %d, cause %+v: want the stall's drops, with a cause", w.Dropped, d)
	}
	if d.Bottleneck != report.LimitWorkers {
		t.Errorf("dropped %d, cause %+v: want the workers (held by the target) named", w.Dropped, d)
	}
}
