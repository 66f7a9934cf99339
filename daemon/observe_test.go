package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/backoff"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/settings"
)

// recorder is an Observer that writes down what it is told, and can end
// the run, refuse a workload or add a field to /status.
type recorder struct {
	mu     sync.Mutex
	events []string
	refuse error                  // returned by Opened
	finish time.Duration          // when set, Started ends the run this long after it began
	steer  func(w *daemon.Handle) // called in Started, in a goroutine of its own
	runs   chan *daemon.Phase     // the run phases begun
	status map[string]any         // added to /status
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) Opened(w *daemon.Handle) error {
	r.add("opened %s", w.Name())
	return r.refuse
}

func (r *recorder) Started(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	r.add("started %d", len(ws))
	if r.steer != nil {
		go r.steer(ws[0])
	}
	if r.finish > 0 {
		go func() {
			if backoff.Sleep(ctx, r.finish) {
				stop(daemon.Finish("observer done"))
			}
		}()
	}
}

func (r *recorder) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	r.add("begun %s %s", w.Name(), p.Name())
	if r.runs != nil && p.Name() == "run" {
		r.runs <- p
	}
}

func (r *recorder) PhaseEnded(w *daemon.Handle, p *daemon.Phase, reason string) {
	r.add("ended %s %s: %s", w.Name(), p.Name(), reason)
}

func (r *recorder) AddStatus(workload string) (string, any, bool) {
	v, ok := r.status[workload]
	return "observed", v, ok
}

func (r *recorder) seen() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, "; ")
}

// An observer is told of each workload opened, of the run's start and of
// every phase's edges with why it ended, in that order.
func TestObserverSeesPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "2s"), p)
		r := &recorder{}
		if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{r}}); err != nil {
			t.Fatal(err)
		}
		if got, want := r.seen(), "opened seq; started 1; begun seq run; ended seq run: DURATION"; got != want {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// An observer that refuses a workload stops the run before anything is
// sent, with its error.
func TestObserverRefusesWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "2s"), p)
		refusal := &settings.Error{Key: "SOAKD_SEQ_X", Err: errors.New("not for this observer")}
		r := &recorder{refuse: refusal}
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{r}})
		if !errors.Is(err, refusal) || sum != nil {
			t.Fatalf("Run = %v, %v; want the observer's refusal and no summary", sum, err)
		}
		if got := r.seen(); got != "opened seq" {
			t.Errorf("events %q, want only the opening", got)
		}
	})
}

// An observer that finishes the run ends it as having run its course:
// the phase says the observer's reason, and nothing is cut.
func TestObserverFinishesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "1"), p)
		r := &recorder{finish: 3 * time.Second}
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{r}})
		if err != nil {
			t.Fatal(err)
		}
		w := sum.Workload("seq", "run")
		if w == nil || w.StoppedBy != "observer done" || w.Units < 250 || w.Units > 310 || w.InFlight != 0 {
			t.Fatalf("run phase %+v: want about 300 rows, stopped by the observer", w)
		}
		if !strings.HasSuffix(r.seen(), "ended seq run: observer done") {
			t.Errorf("events %q", r.seen())
		}
	})
}

// An observer steers a workload through its Handle: a new rate, a pause
// and a resume change what is scheduled, and a window cut each second
// counts exactly what the phase did in it.
func TestObserverSteersAndCutsWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_DURATION", "20s"), p)
		r := &recorder{runs: make(chan *daemon.Phase, 1)}
		var got []daemon.WindowStats
		done := make(chan struct{})
		r.steer = func(w *daemon.Handle) {
			defer close(done)
			ph := <-r.runs
			win := ph.StartWindow(daemon.LatencyKey{}, daemon.LatencyKey{Op: "write", Service: true}, daemon.LatencyKey{Op: "nosuchop"})
			defer win.Stop()
			step := func(f func(context.Context) error) {
				if err := f(context.Background()); err != nil {
					t.Error(err)
				}
				time.Sleep(5 * time.Second)
				got = append(got, win.Cut())
			}
			step(func(context.Context) error { return nil })                                        // 100/s
			step(func(ctx context.Context) error { return w.SetRate(ctx, pace.ConstantRate(300)) }) // 300/s
			step(w.Pause)
			step(w.Resume)
		}
		if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{r}}); err != nil {
			t.Fatal(err)
		}
		<-done
		want := []int64{500, 1500, 0, 1500}
		if len(got) != len(want) {
			t.Fatalf("%d windows, want %d", len(got), len(want))
		}
		for i, ws := range got {
			c := ws.Counts
			if d := c.Acked - want[i]; d < -5 || d > 5 || c.Failed != 0 || c.Dropped != 0 || ws.Seconds != 5 {
				t.Errorf("window %d: %+v over %vs, want about %d acknowledged", i, c, ws.Seconds, want[i])
			}
			if ws.Latency[0].Count != c.Acked || ws.Latency[1].Count != c.Acked || ws.Latency[2].Count != 0 {
				t.Errorf("window %d: latency counts %d, %d, %d; want %d, %d and none for an unknown op",
					i, ws.Latency[0].Count, ws.Latency[1].Count, ws.Latency[2].Count, c.Acked, c.Acked)
			}
			if c.Acked > 0 && ws.Latency[1].P50 < 0.001 {
				t.Errorf("window %d: service p50 %v, want at least the target's 1 ms", i, ws.Latency[1].P50)
			}
		}
	})
}

// A rate so low that its next unit is centuries away, set after the run
// started, sends nothing more and ends at DURATION: the next unit's due
// time, counted from the change, wrapped past the largest duration to a
// time long past, and the scheduler sent flat out past DURATION.
func TestTinyRateAfterAChangeSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_SEQ_RATE", "10",
			"SOAKD_SEQ_BATCH_SIZE", "1", "SOAKD_SEQ_DURATION", "5s"), p) // the writes' latency lets fake time pass while a broken scheduler sends
		r := &recorder{runs: make(chan *daemon.Phase, 1)}
		steered := make(chan error, 1)
		r.steer = func(w *daemon.Handle) {
			<-r.runs
			time.Sleep(1050 * time.Millisecond)
			steered <- w.SetRate(context.Background(), pace.ConstantRate(1e-12))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{r}})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-steered; err != nil {
			t.Fatal(err)
		}
		w := sum.Workload("seq", "run")
		if w.StoppedBy != "DURATION" || w.Scheduled != 10 || w.Seconds != 5 {
			t.Errorf("10/s for 1 s, then 1e-12/s: stopped by %q after %gs with %d scheduled; want DURATION after 5s, 10 scheduled",
				w.StoppedBy, w.Seconds, w.Scheduled)
		}
	})
}

// On the real clock, where the scheduler of a low rate waits for its
// precise alarm rather than on runtime timers: it releases every unit the
// rate has due, and hears a control request while it waits (here a rate
// of one unit in 1000 s, whose first unit is due long after the run
// ends, is raised to 200/s; unheard, the run would schedule nothing).
func TestLowRateSchedulerOnRealClock(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "20", "SOAKD_SEQ_BATCH_SIZE", "1",
		"SOAKD_SEQ_DURATION", "1s"), p)
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
	if err != nil {
		t.Fatal(err)
	}
	if w := sum.Workload("seq", "run"); w == nil || w.Units != 20 || w.Dispatch.Count != 20 {
		t.Fatalf("20/s for 1 s: %+v, want 20 units, each with its dispatch delay", w)
	}

	cfg = daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "0.001", "SOAKD_SEQ_BATCH_SIZE", "1",
		"SOAKD_SEQ_DURATION", "3s"), p)
	r := &recorder{runs: make(chan *daemon.Phase, 1)}
	steered := make(chan error, 1)
	r.steer = func(w *daemon.Handle) {
		<-r.runs
		time.Sleep(200 * time.Millisecond) // the scheduler waits by now
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		steered <- w.SetRate(ctx, pace.ConstantRate(200))
	}
	sum, err = daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{r}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-steered; err != nil {
		t.Fatalf("SetRate while the scheduler waits: %v", err)
	}
	if w := sum.Workload("seq", "run"); w == nil || w.Units == 0 {
		t.Fatalf("after the rate was raised to 200/s: %+v, want units", w)
	}
}

// What an observer adds to a workload's /status object follows its own
// fields, under the observer's name; a workload it adds nothing to has
// no such field.
func TestObserverAddsStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
			"SOAKD_A_RATE", "10", "SOAKD_B_RATE", "10"), p)
		r := &recorder{status: map[string]any{"a": map[string]int{"step": 3}}}
		var h http.Handler
		open := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Registry: prometheus.NewRegistry()})
			h = s.Handler()
			_, _ = daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{r, s, onStart(func([]*daemon.Handle) { close(open) })}})
		}()
		<-open
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		var st struct {
			Workloads []map[string]json.RawMessage `json:"workloads"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Workloads) != 2 || compactJSON(st.Workloads[0]["observed"]) != `{"step":3}` || st.Workloads[1]["observed"] != nil ||
			st.Workloads[0]["name"] == nil || st.Workloads[0]["phases"] == nil {
			t.Errorf("/status %s: want a's own fields and observed {\"step\":3}, and no observed field for b", rec.Body)
		}
		cancel()
		<-done
	})
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// checker is a Checker with fixed verdicts, and the final ones once the
// run is over.
type checker struct {
	recorder
	live, final []report.ThresholdResult
	asked       []bool // the final argument of each call, in order
	mu          sync.Mutex
}

func (c *checker) Verdicts(workload string, final bool) []report.ThresholdResult {
	c.mu.Lock()
	c.asked = append(c.asked, final)
	c.mu.Unlock()
	if workload != "seq" {
		return nil
	}
	if final {
		return c.final
	}
	return c.live
}

// A Checker's verdicts show in /status and as soakd_threshold_ok and
// soakd_threshold_value while the run lasts, and its final ones in the
// summary, where a failed one fails the run.
func TestCheckerShowsInStatusAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "5s",
			"SOAKD_SEQ_THRESHOLDS", "p99<1s"), p)
		v := 0.25
		c := &checker{live: []report.ThresholdResult{{Threshold: "p99<1s", OK: true, Unit: "seconds", Value: &v, Current: &v}},
			final: []report.ThresholdResult{{Threshold: "p99<1s", OK: false, Unit: "seconds", Value: &v}}}
		reg := prometheus.NewRegistry()
		var h http.Handler
		open := make(chan struct{})
		var sum *report.Summary
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Registry: reg})
			h = s.Handler()
			sum, _ = daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
				Observers: []daemon.Observer{c, s, onStart(func([]*daemon.Handle) { close(open) })}})
		}()
		<-open
		time.Sleep(time.Second)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
		var st report.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		if ts := st.Workloads[0].Thresholds; len(ts) != 1 || !ts[0].OK || *ts[0].Value != 0.25 {
			t.Errorf("/status thresholds %+v, want the checker's live verdict", ts)
		}
		want := `
# HELP soakd_threshold_value The threshold's latest measurement: the run phase so far, the last window (@W) or the change since the early window (drift.); in seconds, as a ratio (1 = 100 %), a count, units/s or bytes (target.).
# TYPE soakd_threshold_value gauge
soakd_threshold_value{threshold="p99<1s",workload="seq"} 0.25
# HELP soakd_threshold_ok 1 while the threshold passes so far, 0 once it fails (a windowed one stays failed once a window failed).
# TYPE soakd_threshold_ok gauge
soakd_threshold_ok{threshold="p99<1s",workload="seq"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "soakd_threshold_ok", "soakd_threshold_value"); err != nil {
			t.Error(err)
		}
		<-done
		w := sum.Workload("seq", "run")
		if len(w.Thresholds) != 1 || w.Thresholds[0].OK || sum.Failed() == nil {
			t.Errorf("summary thresholds %+v, Failed() = %v: want the final, failed verdict", w.Thresholds, sum.Failed())
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if n := len(c.asked); n == 0 || !c.asked[n-1] || slices.Contains(c.asked[:n-1], true) {
			t.Errorf("asked for final verdicts %v: want once, last", c.asked)
		}
	})
}

// Thresholds with nothing to judge them are refused, not ignored.
func TestThresholdsWithoutChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "1s",
			"SOAKD_SEQ_THRESHOLDS", "p99<1s"), p)
		_, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
		if err == nil || !strings.Contains(err.Error(), "SOAKD_SEQ_THRESHOLDS") {
			t.Errorf("Run = %v, want an error naming SOAKD_SEQ_THRESHOLDS", err)
		}
	})
}

// Phase.Acked counts what Snapshot counts as acknowledged, samples still
// in a worker's buffer included, and allocates nothing: the live sampler
// reads it every second.
func TestPhaseAcked(t *testing.T) {
	tp := daemon.NewTestPhase("run")
	p := tp.Phase()
	if got := p.Acked(); got != 0 {
		t.Fatalf("acked %d before anything", got)
	}
	tp.Ack("read", 7, time.Millisecond)
	tp.Count(5, 3, 2, "update", 3, 0)
	if got, snap := p.Acked(), p.Snapshot().Acked; got != 10 || snap != 10 {
		t.Fatalf("acked %d, the snapshot's %d, want 10", got, snap)
	}
	if a := testing.AllocsPerRun(20, func() { p.Acked() }); a != 0 {
		t.Fatalf("Acked allocates %v times a call", a)
	}
}
