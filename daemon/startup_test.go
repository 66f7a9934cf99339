package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/opener"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// lateSink is a target that comes up at a given time: until then its
// Ping fails as a server that is not listening does (quoting the URL's
// password, as some drivers do), or with refusal when set. Writes succeed.
type lateSink struct {
	up      time.Time
	refusal error // when set, Ping answers with it: the server refuses
	hang    bool  // when set, Ping never answers: it ends with its context
	pings   *atomic.Int64
}

func (s lateSink) Ping(ctx context.Context) error {
	s.pings.Add(1)
	if s.hang {
		<-ctx.Done()
		return sinks.NewError(sinks.Timeout, true, ctx.Err())
	}
	if s.refusal != nil {
		return s.refusal
	}
	if time.Now().Before(s.up) {
		return sinks.NewError(sinks.Connection, true, errors.New("dial late://u:hunter2@db/x: connect: connection refused"))
	}
	return nil
}
func (lateSink) Write(_ context.Context, b *sources.Batch) (int, error) { return b.Len(), nil }
func (lateSink) Close(context.Context) error                            { return nil }

func latePlugins(s lateSink) *config.Plugins {
	return daemon.Plugins(sinks.Entry{Schemes: []string{"late"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return s, nil }})
}

// runLate runs env against s, calling at (when not nil) with /readyz's
// answer 5 s into the run, and returns how long the run took.
func runLate(t *testing.T, s lateSink, env map[string]string, at func(*httptest.ResponseRecorder)) (served, time.Duration) {
	p := latePlugins(s)
	cfg := daemon.LoadTest(t, env, p)
	open := make(chan struct{})
	t0 := time.Now()
	done := make(chan served, 1)
	reg := prometheus.NewRegistry()
	srv := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: reg})
	h := srv.Handler()
	go func() {
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
			Observers: []daemon.Observer{srv, onStart(func([]*daemon.Handle) { close(open) })}})
		done <- served{sum, err, reg}
	}()
	<-open
	if at != nil {
		time.Sleep(5 * time.Second)
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		at(rec)
		hz := httptest.NewRecorder()
		h.ServeHTTP(hz, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if hz.Code != http.StatusOK {
			t.Errorf("/healthz %d while waiting for the target", hz.Code)
		}
	}
	res := <-done
	return res, time.Since(t0)
}

// A target that comes up 10 s after soakd: until then soakd is not ready
// and says why, retrying with backoff; then the run phase runs in full.
func TestSetupWaitsForTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pings := new(atomic.Int64)
		s := lateSink{up: time.Now().Add(10 * time.Second), pings: pings}
		res, took := runLate(t, s, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://u:hunter2@db/x",
			"SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "5s"),
			func(rec *httptest.ResponseRecorder) {
				body := rec.Body.String()
				t.Logf("/readyz at 5 s: %d %s", rec.Code, body)
				if rec.Code != http.StatusServiceUnavailable {
					t.Errorf("/readyz %d while the target is down", rec.Code)
				}
				for _, want := range []string{"seq: connection error, waiting for late://u:xxxxx@db/x (connect; ", " attempts failed, next retry in ", "connection refused"} {
					if !strings.Contains(body, want) {
						t.Errorf("/readyz lacks %q: %s", want, body)
					}
				}
				if strings.Contains(body, "hunter2") {
					t.Errorf("/readyz shows the password: %s", body)
				}
			})
		if res.err != nil {
			t.Fatal(res.err)
		}
		w := res.sum.Workloads[0]
		if !w.Prepared || w.Failure != nil || w.Units != 500 || w.Scheduled != 500 {
			t.Errorf("prepared %v, failure %+v, acked %d of %d scheduled: want the whole run phase once the target is up",
				w.Prepared, w.Failure, w.Units, w.Scheduled)
		}
		// Backoff 1, 2, 4, 5, 5 s ... (±20 %): the attempts of 10 s, then
		// one that succeeds; at most 5 s (+20 %) after the target is up.
		if n := pings.Load(); n < 4 || n > 6 {
			t.Errorf("%d pings over the 10 s the target was down: want 4-6 (backoff 1 s doubling to 5 s)", n)
		}
		if took < 15*time.Second || took > 21*time.Second {
			t.Errorf("the run took %v: want the 10 s wait, at most one backoff more, and the 5 s run", took)
		}
	})
}

// START_TIMEOUT: a target not up by then stops and fails the run, when
// the bound passes.
func TestSetupStartTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lateSink{up: time.Now().Add(time.Hour), pings: new(atomic.Int64)}
		res, took := runLate(t, s, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://db/x", "SOAKD_SEQ_START_TIMEOUT", "8s"), nil)
		var st *opener.TimeoutError
		if !errors.As(res.err, &st) || !strings.Contains(res.err.Error(), "SOAKD_SEQ_START_TIMEOUT=8s") {
			t.Fatalf("Run: %v, want the START_TIMEOUT error", res.err)
		}
		if took != 8*time.Second {
			t.Errorf("gave up after %v, want 8 s (the last attempt at the bound)", took)
		}
		if f := res.sum.Workloads[0].Failure; f == nil || !strings.Contains(f.Reason, "START_TIMEOUT") {
			t.Errorf("failure %+v: want START_TIMEOUT", f)
		}
	})
}

// START_TIMEOUT also bounds an attempt that never returns (a connect
// that hangs, a DDL behind a lock): the run gives up at START_TIMEOUT,
// not when the step's own attempt timeout (10 s for connect) ends it.
func TestSetupStartTimeoutBoundsAHungAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lateSink{hang: true, pings: new(atomic.Int64)}
		res, took := runLate(t, s, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://db/x", "SOAKD_SEQ_START_TIMEOUT", "3s"), nil)
		var st *opener.TimeoutError
		if !errors.As(res.err, &st) {
			t.Fatalf("Run: %v, want the START_TIMEOUT error", res.err)
		}
		if took != 3*time.Second || s.pings.Load() != 1 {
			t.Errorf("gave up after %v and %d attempts, want 3 s (START_TIMEOUT) and 1", took, s.pings.Load())
		}
	})
}

// A target that answers with a refusal is a configuration error naming
// TARGET, at once: no wait.
func TestSetupRefusalIsConfigError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := lateSink{refusal: sinks.NewError(sinks.Rejected, false, errors.New("WRONGPASS invalid username-password pair")), pings: new(atomic.Int64)}
		// SOAKD_DURATION ends a run that would retry (the bug this checks).
		res, took := runLate(t, s, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://u:hunter2@db/x", "SOAKD_DURATION", "30s"), nil)
		var ce *settings.Error
		if !errors.As(res.err, &ce) || ce.Key != "SOAKD_SEQ_TARGET" || !strings.Contains(ce.Error(), "WRONGPASS") ||
			!strings.Contains(ce.Error(), "SOAKD_SEQ_PASSWORD") || strings.Contains(ce.Error(), "hunter2") {
			t.Fatalf("Run: %v, want a configuration error naming SOAKD_SEQ_TARGET with the answer, without the password", res.err)
		}
		if took != 0 || s.pings.Load() != 1 {
			t.Errorf("%d pings over %v: a refusal must not be retried", s.pings.Load(), took)
		}
	})
}

// A stop while waiting for the target is no failure.
func TestSetupStopWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := latePlugins(lateSink{up: time.Now().Add(time.Hour), pings: new(atomic.Int64)})
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://db/x"), p)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(7*time.Second, cancel)
		res := runServed(ctx, cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if err := res.sum.Failed(); err != nil {
			t.Errorf("Failed() = %v after a stop while waiting", err)
		}
		w := res.sum.Workloads[0]
		if w.Prepared || w.StoppedBy != "signal" || w.LastError == nil {
			t.Errorf("entry %+v: want not prepared, stopped by signal, the last error", w)
		}
	})
}

// stallProber is a KV target whose check for loaded records waits until
// its context ends.
type stallProber struct{ probing chan struct{} }

func (s *stallProber) Write(context.Context, *sources.Batch) (int, error) { return 0, nil }
func (s *stallProber) Close(context.Context) error                        { return nil }
func (s *stallProber) Present(ctx context.Context, _ *sources.Batch) (int, error) {
	close(s.probing)
	<-ctx.Done()
	return 0, fmt.Errorf("cannot run a pipeline: %w", ctx.Err())
}

// A run stopped (SIGTERM, Ctrl-C) while it checks for loaded records
// ends as a stop, not as a failure of the target.
func TestStopWhileCheckingLoadedRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sp := &stallProber{probing: make(chan struct{})}
		p := daemon.Plugins(sinks.Entry{Schemes: []string{"stall"}, Kinds: []sources.Kind{sources.KV},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return sp, nil }})
		p.Sources.Add(sources.Register(sources.Spec[kv.Config]{
			Names: []string{"kv"}, Kind: sources.KV,
			Validate: func(c *kv.Config, _ sources.Common) error { return c.Validate() },
			New:      func(c *kv.Config, w sources.Common) (sources.Source, error) { return kv.New(*c, w.Seed, w.Shard) },
		}))
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_TARGET", "stall://", "SOAKD_KV_RECORDS", "100"), p)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan served, 1)
		go func() { done <- runServed(ctx, cfg, p) }()
		<-sp.probing
		cancel()
		res := <-done
		if res.err != nil {
			t.Fatalf("run stopped while checking for loaded records: %v, want a clean stop", res.err)
		}
		if res.sum != nil && res.sum.Failed() != nil {
			t.Errorf("summary says the run failed: %v", res.sum.Failed())
		}
	})
}

// prepRefuser is a target that connects but whose Prepare is refused, as
// a table of another shape is.
type prepRefuser struct{ lateSink }

func (prepRefuser) Prepare(context.Context) error {
	return sinks.NewError(sinks.Rejected, false, errors.New(`table "cpu" exists but lacks columns "hostname"`))
}

// A refusal at the prepare step is no matter of credentials: the target
// took them at connect. The error once ended "(check the target URL's
// database and user, and the credentials: ... SOAKD_SEQ_PASSWORD ...)"
// after a schema conflict, sending users after their password.
func TestSetupPrepareRefusalNoCredentialsHint(t *testing.T) {
	s := prepRefuser{lateSink{pings: new(atomic.Int64)}}
	p := daemon.Plugins(sinks.Entry{Schemes: []string{"late"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return s, nil }})
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "late://u:hunter2@db/x", "SOAKD_DURATION", "30s"), p)
	_, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p})
	var ce *settings.Error
	if !errors.As(err, &ce) || ce.Key != "SOAKD_SEQ_TARGET" || !strings.Contains(ce.Error(), `refused "prepare"`) ||
		!strings.Contains(ce.Error(), "lacks columns") {
		t.Fatalf("Run: %v, want a configuration error naming SOAKD_SEQ_TARGET with the answer at prepare", err)
	}
	if strings.Contains(ce.Error(), "credentials") || strings.Contains(ce.Error(), "PASSWORD") {
		t.Errorf("Run: %v: a refusal at prepare must not point at the credentials", err)
	}
}

// cancelSink is a target whose Ping answers, then stops the run (a signal
// that comes as the workload finishes its setup).
type cancelSink struct{ cancel context.CancelFunc }

func (s cancelSink) Ping(context.Context) error                           { s.cancel(); return nil }
func (cancelSink) Write(_ context.Context, b *sources.Batch) (int, error) { return b.Len(), nil }
func (cancelSink) Close(context.Context) error                            { return nil }

// A workload whose target became ready but whose run phase never began
// (the run stopped in between: a signal, SOAKD_DURATION=1ns) still says
// what stopped it. Bug caught: its entry had stopped_by "" and the text
// summary no "stopped by" line.
func TestStopAfterSetupSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := daemon.Plugins(sinks.Entry{Schemes: []string{"cancel"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return cancelSink{cancel}, nil }})
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "cancel://db/x"), p)
		res := runServed(ctx, cfg, p)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if err := res.sum.Failed(); err != nil {
			t.Errorf("Failed() = %v after a stop", err)
		}
		if w := res.sum.Workloads[0]; !w.Prepared || w.StoppedBy != "signal" {
			t.Errorf("entry: prepared %v, stopped by %q; want prepared, stopped by signal", w.Prepared, w.StoppedBy)
		}
	})
}
