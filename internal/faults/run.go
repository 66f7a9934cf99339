package faults

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
)

// Counts are one workload's counters read from one scrape of /metrics
// (soakd_* families), which all come from one snapshot of its books.
type Counts struct {
	At        time.Time
	Scheduled int64
	Acked     int64 // soakd_rows_total (series) or soakd_ops_total{result="ok"} (kv)
	Failed    int64
	Dropped   int64
	InFlight  int64
	Errors    map[string]int64 // soakd_errors_total by class
	Ready     bool             // soakd_ready
}

// sample is what the harness records every 100 ms.
type sample struct {
	Counts
	heap       uint64 // bytes of live heap objects
	goroutines int
}

// Run is the soakd engine running one workload, named w, in this
// process, as `soakd run` does.
type Run struct {
	reg    *prometheus.Registry
	logs   *observer.ObservedLogs
	cancel context.CancelFunc
	done   chan result
	rate   float64 // units/s, the workload's constant RATE
	maxLag time.Duration
	slots  int64 // units that may be in flight at once

	mu      sync.Mutex
	samples []sample
	stopped chan struct{} // closed when the sampler ends
}

type result struct {
	sum *report.Summary
	err error
	at  time.Time
}

// Start loads env (SOAKD_W_* settings of the workload w; SOURCE, TARGET
// and a constant RATE at least) and runs it until Stop, sampling its
// counts every 100 ms. The run ends with the test at the latest.
func Start(t *testing.T, env map[string]string) *Run {
	t.Helper()
	full := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "w",
		"SOAKD_SHUTDOWN_GRACE": "5s"}
	for k, v := range env {
		full[k] = v
	}
	p := plugins.All()
	cfg, err := config.Load(full, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatalf("config: %v", err)
	}
	w := cfg.Workload[0]
	if w.Rate.Max {
		t.Fatal("the fault matrix runs at a constant rate, not RATE=max")
	}
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	if testing.Verbose() {
		log = zap.New(zapcore.NewTee(core, zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
			zapcore.AddSync(testWriter{t}), zapcore.WarnLevel)))
	}
	batch := w.BatchSize
	if w.Source == "kv" {
		batch = w.Pipeline
	}
	r := &Run{
		reg: prometheus.NewRegistry(), logs: logs, done: make(chan result, 1),
		rate: w.Rate.Profile.RateAt(0), maxLag: w.MaxLag,
		// The queue holds max(64, 2·workers) tickets, each worker one more.
		slots:   int64(max(64, 2*w.Workers)+w.Workers+1) * int64(batch),
		stopped: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		metrics := serve.New(serve.Options{Config: cfg, Logger: log, Version: "test", Registry: r.reg})
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: log, Plugins: p, Version: "test", Observers: []daemon.Observer{metrics}})
		r.done <- result{sum, err, time.Now()}
		close(r.done)
	}()
	go r.sample(ctx)
	t.Cleanup(func() {
		cancel()
		for range r.done {
		}
		<-r.stopped
	})
	return r
}

// testWriter sends log lines to t.Log (with -v).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:max(len(p)-1, 0)]))
	return len(p), nil
}

func (r *Run) sample(ctx context.Context) {
	defer close(r.stopped)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var ms runtime.MemStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, err := r.read()
		if err != nil {
			continue
		}
		runtime.ReadMemStats(&ms)
		r.mu.Lock()
		r.samples = append(r.samples, sample{Counts: c, heap: ms.HeapAlloc, goroutines: runtime.NumGoroutine()})
		r.mu.Unlock()
	}
}

// read scrapes the registry.
func (r *Run) read() (Counts, error) {
	mfs, err := r.reg.Gather()
	if err != nil {
		return Counts{}, err
	}
	c := Counts{At: time.Now(), Errors: map[string]int64{}}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			label := func(name string) string {
				for _, l := range m.GetLabel() {
					if l.GetName() == name {
						return l.GetValue()
					}
				}
				return ""
			}
			v := int64(m.GetCounter().GetValue() + m.GetGauge().GetValue())
			switch mf.GetName() {
			case "soakd_scheduled_total":
				c.Scheduled += v
			case "soakd_rows_total":
				c.Acked += v
			case "soakd_ops_total":
				if label("result") == "ok" && label("op") != "write" {
					c.Acked += v // kv: operations; series count batches here
				}
			case "soakd_failed_total":
				c.Failed += v
			case "soakd_dropped_total":
				c.Dropped += v
			case "soakd_inflight_units":
				c.InFlight += v
			case "soakd_errors_total":
				c.Errors[label("class")] += v
			case "soakd_ready":
				c.Ready = v == 1
			}
		}
	}
	return c, nil
}

// Now reads the counts now.
func (r *Run) Now(t testing.TB) Counts {
	t.Helper()
	c, err := r.read()
	if err != nil {
		t.Fatalf("cannot read the metrics: %v", err)
	}
	return c
}

// WaitFor polls the counts until ok holds, failing the test after d.
func (r *Run) WaitFor(t testing.TB, d time.Duration, what string, ok func(Counts) bool) Counts {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		c := r.Now(t)
		if ok(c) {
			return c
		}
		select {
		case res, open := <-r.done:
			if open {
				t.Fatalf("waiting for %s: the run ended (%v) at %+v", what, res.err, c)
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v: %+v", what, d, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Resumed waits until the target acknowledges more than it had at c:
// writing has resumed.
func (r *Run) Resumed(t testing.TB, c Counts, within time.Duration) Counts {
	t.Helper()
	return r.WaitFor(t, within, "writes acknowledged after the fault", func(n Counts) bool { return n.Acked > c.Acked })
}

// Logged reports whether a log line at level or above has a message
// containing msg and, when class is not "", that class.
func (r *Run) Logged(level zapcore.Level, msg, class string) (string, bool) {
	for _, e := range r.logs.All() {
		if e.Level < level || !strings.Contains(e.Message, msg) {
			continue
		}
		ctx := e.ContextMap()
		if class != "" && ctx["class"] != class {
			continue
		}
		return fmt.Sprintf("%s %v", e.Message, ctx), true
	}
	return "", false
}

// Stop ends the run as SIGTERM does and returns the workload's run phase
// and how long the run took to return after the stop.
func (r *Run) Stop(t testing.TB) (*report.WorkloadSummary, time.Duration) {
	t.Helper()
	t0 := time.Now()
	r.cancel()
	var res result
	select {
	case res = <-r.done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end within a minute of the stop")
	}
	<-r.stopped
	if res.err != nil {
		t.Errorf("Run: %v", res.err)
	}
	if res.sum == nil {
		t.Fatal("no summary")
	}
	w := res.sum.Workload("w", "run")
	if w == nil {
		t.Fatalf("no run phase in the summary: %+v", res.sum.Workloads)
	}
	return w, res.at.Sub(t0)
}

// Check checks what must hold in every fault, from the samples taken
// while the run lasted and from its summary w:
//   - every sample: nothing counted finished that was not scheduled, in
//     flight no more than the queue and the workers can hold;
//   - the schedule kept its clock: at every sample at least the rate's
//     integral up to MAX_LAG (+1 s of slack for a busy machine) ago was
//     scheduled, and never more than the integral: no silent slow-down;
//   - heap below 512 MiB and goroutines below 2000 throughout;
//   - the summary: scheduled = acknowledged + failed + dropped, nothing in
//     flight, and no error that soakd could not classify.
func (r *Run) Check(t testing.TB, w *report.WorkloadSummary) {
	t.Helper()
	r.mu.Lock()
	samples := append([]sample(nil), r.samples...)
	r.mu.Unlock()
	if len(samples) == 0 {
		t.Fatal("no samples")
	}
	var maxHeap uint64
	maxG, maxIn := 0, int64(0)
	started := w.Started
	for _, s := range samples {
		c := s.Counts
		if c.Acked+c.Failed+c.Dropped+c.InFlight != c.Scheduled || c.InFlight < 0 {
			t.Errorf("at %v: scheduled %d != acked %d + failed %d + dropped %d + in flight %d",
				c.At.Sub(started).Round(time.Millisecond), c.Scheduled, c.Acked, c.Failed, c.Dropped, c.InFlight)
		}
		if c.InFlight > r.slots {
			t.Errorf("at %v: %d units in flight, more than the %d the queue and workers hold", c.At.Sub(started), c.InFlight, r.slots)
		}
		maxHeap, maxG, maxIn = max(maxHeap, s.heap), max(maxG, s.goroutines), max(maxIn, c.InFlight)
		if !w.Started.IsZero() && c.At.After(started) && c.Scheduled > 0 {
			el := c.At.Sub(started).Seconds()
			lo := r.rate*(el-r.maxLag.Seconds()-1) - float64(w.Batch)
			hi := r.rate*el + float64(w.Batch)
			if float64(c.Scheduled) < lo || float64(c.Scheduled) > hi {
				t.Errorf("at %.1fs: %d units scheduled at %.0f/s, want within [%.0f, %.0f]: the schedule lost its clock",
					el, c.Scheduled, r.rate, lo, hi)
			}
		}
	}
	if maxHeap > 512<<20 || maxG > 2000 {
		t.Errorf("heap reached %d MiB, goroutines %d: not bounded", maxHeap>>20, maxG)
	}
	if w.Scheduled != w.Units+w.Failed+w.Dropped || w.InFlight != 0 {
		t.Errorf("summary: scheduled %d != acked %d + failed %d + dropped %d (in flight %d)",
			w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
	}
	if w.Errors["other"] > 0 {
		t.Errorf("%d errors soakd could not classify: last %+v", w.Errors["other"], w.LastError)
	}
	t.Logf("acked %d failed %d dropped %d of %d scheduled in %.1fs; errors %v; peak in flight %d, heap %d MiB, goroutines %d",
		w.Units, w.Failed, w.Dropped, w.Scheduled, w.Seconds, w.Errors, maxIn, maxHeap>>20, maxG)
}
