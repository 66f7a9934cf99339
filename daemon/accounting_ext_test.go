package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/seq"
)

// chaosSink stores rows of the seq source (each row's n is unique) and
// misbehaves at random: stalls, failures of every class (and one no sink
// should return), retryable or not, and partial writes. It keeps its own
// books of which rows it was sent and which it stored, the truth the
// engine's counts are checked against.
type chaosSink struct {
	mu     sync.Mutex
	rng    *rand.Rand
	seen   map[int64]bool // rows sent at least once
	stored map[int64]bool // rows stored
	inside int            // rows inside Write now
}

func newChaosSink(seed uint64) *chaosSink {
	return &chaosSink{rng: rand.New(rand.NewPCG(seed, 7)), seen: map[int64]bool{}, stored: map[int64]bool{}}
}

// chaosClasses are the classes chaos fails with; "mystery" is not one of
// sinks.Classes and must be counted as other.
var chaosClasses = []sinks.Class{sinks.Timeout, sinks.Connection, sinks.Rejected, sinks.Server, sinks.OutOfOrder, sinks.Empty, sinks.Other, "mystery"}

func (s *chaosSink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	rows := b.Tables[0].Ints[0]
	s.mu.Lock()
	for _, n := range rows {
		s.seen[n] = true
	}
	var stall time.Duration
	switch p := s.rng.Float64(); {
	case p < 0.02:
		stall = time.Duration(1+s.rng.IntN(3)) * time.Second
	case p < 0.2:
		stall = time.Duration(1+s.rng.IntN(50)) * time.Millisecond
	}
	outcome := s.rng.Float64()
	class := chaosClasses[s.rng.IntN(len(chaosClasses))]
	retry := s.rng.IntN(2) == 0
	keep := s.rng.IntN(len(rows) + 1)
	s.inside += len(rows)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inside -= len(rows)
		s.mu.Unlock()
	}()
	if stall > 0 {
		t := time.NewTimer(stall)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
	switch {
	case outcome < 0.1:
		return 0, &sinks.Error{Class: class, Retry: retry, Err: errors.New("chaos says no")}
	case outcome < 0.13:
		s.mu.Lock()
		for _, n := range rows[:keep] {
			s.stored[n] = true
		}
		s.mu.Unlock()
		return 10 * keep, sinks.NewError(sinks.Rejected, false, partial{keep})
	}
	s.mu.Lock()
	for _, n := range rows {
		s.stored[n] = true
	}
	s.mu.Unlock()
	return 10 * len(rows), nil
}

func (s *chaosSink) Close(context.Context) error { return nil }

func (s *chaosSink) truth() (seen, stored int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.seen)), int64(len(s.stored))
}

// seenRun counts the rows of the run phase (not the load phase) sent.
func (s *chaosSink) seenRun() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for r := range s.seen {
		if r < loadOffset {
			n++
		}
	}
	return n
}

// loadOffset numbers the load phase's rows apart from the run's.
const loadOffset = 1 << 40

// preloadSource is the seq source with a load phase: a finite seq data set
// whose rows are numbered from loadOffset.
type preloadSource struct {
	*seq.Source
	loadRows int64
}

func (p preloadSource) Preload() (sources.Source, func(*sources.Batch), error) {
	if p.loadRows == 0 {
		return nil, nil, nil
	}
	s, err := seq.New(seq.Config{Devices: 7, Rows: p.loadRows, Interval: time.Second}, sources.Shard{})
	if err != nil {
		return nil, nil, err
	}
	return offsetSource{s}, nil, nil
}

type offsetSource struct{ *seq.Source }

func (o offsetSource) Stream(part, parts int) (sources.Stream, error) {
	st, err := o.Source.Stream(part, parts)
	return offsetStream{st}, err
}

type offsetStream struct{ sources.Stream }

func (o offsetStream) Fill(b *sources.Batch, max int, now int64) error {
	t := b.Tables[0]
	from := t.Len()
	err := o.Stream.Fill(b, max, now)
	for i := from; i < t.Len(); i++ {
		t.Ints[0][i] += loadOffset
	}
	return err
}

// chaosPlugins are the seq source (with LOAD_ROWS for a load phase) and
// the chaos sink.
func chaosPlugins(sink *chaosSink) *config.Plugins {
	p := daemon.Plugins(sinks.Entry{Schemes: []string{"chaos"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return sink, nil }})
	p.Sources = sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
		Names: []string{"seq"}, Kind: sources.Series,
		Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
		New: func(c *seq.Config, w sources.Common) (sources.Source, error) {
			s, err := seq.New(*c, w.Shard)
			if err != nil {
				return nil, err
			}
			n, _ := strconv.ParseInt(w.Workload[len("seq"):], 10, 64) // workload seqN loads N rows first
			return preloadSource{s, n}, nil
		},
	}))
	return p
}

// checkBooks checks one workload's counts against each other, the HTTP
// endpoints and the sink's books while every goroutine is blocked.
func checkBooks(t *testing.T, step string, w *daemon.Handle, h http.Handler, sink *chaosSink, ended bool) {
	t.Helper()
	var total daemon.Books
	bound := int64(max(64, 2*w.Config().Workers)+w.Config().Workers+1) * int64(w.BatchSize())
	for _, c := range daemon.PhaseBooks(w) {
		if in := c.InFlight; in < 0 || in > bound {
			t.Fatalf("%s: phase %s: in flight %d (scheduled %d, acked %d, failed %d, dropped %d), want 0..%d",
				step, c.Name, in, c.Scheduled, c.Acked, c.Failed, c.Dropped, bound)
		}
		if (ended || c.Ended) && c.InFlight != 0 {
			t.Fatalf("%s: phase %s ended with %d units in flight", step, c.Name, c.InFlight)
		}
		if c.Cut > c.Dropped {
			t.Fatalf("%s: %d cut at shutdown but only %d dropped", step, c.Cut, c.Dropped)
		}
		total.Add(c)
	}
	seen, stored := sink.truth()
	if total.Acked != stored {
		t.Fatalf("%s: engine acknowledged %d rows, the sink stored %d", step, total.Acked, stored)
	}
	sink.mu.Lock()
	inside := int64(sink.inside)
	sink.mu.Unlock()
	// Rows the sink saw but did not store are failed, or in flight (being
	// written, or waiting for a retry).
	if notStored := seen - stored; total.Failed > notStored || (ended && total.Failed != notStored) {
		t.Fatalf("%s: engine failed %d rows, the sink saw %d it did not store", step, total.Failed, notStored)
	}
	if inside > total.InFlight {
		t.Fatalf("%s: %d rows inside Write but only %d in flight", step, inside, total.InFlight)
	}

	// /metrics says the same.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := daemon.ParseMetrics(t, rec.Body.String(), w.Name())
	for name, want := range map[string]int64{
		"soakd_scheduled_total": total.Scheduled, "soakd_rows_total": total.Acked, "soakd_failed_total": total.Failed,
		"soakd_dropped_total": total.Dropped, "soakd_inflight_units": total.InFlight, "soakd_bytes_total": total.Bytes,
		`soakd_ops_total{op="write",result="ok"}`:      total.WriteOK,
		`soakd_response_seconds_count{op="write"}`:     total.WriteOK,
		`soakd_ops_total{op="write",result="error"}`:   total.WriteFailed,
		`soakd_errors_total{class="other",op="write"}`: total.WriteOtherErrors,
		// every unit sent had its dispatch delay recorded, once
		"soakd_dispatch_delay_seconds_count": total.Acked + total.Failed,
	} {
		if got := m[name]; got != float64(want) {
			t.Fatalf("%s: /metrics %s = %v, counts say %d", step, name, got, want)
		}
	}
	// /status too, phase by phase.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
	var st report.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("%s: /status: %v", step, err)
	}
	var sum report.StatusCounts
	for _, p := range st.Workloads[0].Phases {
		if p.Scheduled != p.Acked+p.Failed+p.Dropped+p.InFlight {
			t.Fatalf("%s: /status phase %s: %+v does not add up", step, p.Name, p.StatusCounts)
		}
		sum.Scheduled += p.Scheduled
		sum.Acked += p.Acked
		sum.Failed += p.Failed
		sum.Dropped += p.Dropped
	}
	if sum.Scheduled != total.Scheduled || sum.Acked != total.Acked || sum.Failed != total.Failed || sum.Dropped != total.Dropped {
		t.Fatalf("%s: /status phases add up to %+v, counts say %+v", step, sum, total)
	}
}

// The accounting invariant holds at every step of runs where everything
// goes wrong at random: stalls, failures of every class, retries, partial
// writes, rate changes, pause and resume, a load phase, drops, and a
// shutdown that cuts writes in flight. At every step (all goroutines
// blocked) the counts add up, agree with /metrics and /status, and agree
// with what the sink itself saw and stored; at the end nothing is in
// flight.
func TestAccountingInvariant(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { chaosRun(t, seed) })
		})
	}
}

func chaosRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	sink := newChaosSink(seed)
	p := chaosPlugins(sink)
	loadRows := []int{0, 500, 3000}[rng.IntN(3)]
	name := fmt.Sprintf("seq%d", loadRows)
	pre := config.Prefix(name)
	env := daemon.Env("SOAKD_WORKLOADS", name, pre+"SOURCE", "seq", pre+"TARGET", "chaos://x",
		pre+"RATE", []string{"500", "2000", "5s:3000,20s:3000", "step:200+400/2s", "max"}[rng.IntN(5)],
		pre+"BATCH_SIZE", fmt.Sprint(1+rng.IntN(40)),
		pre+"WORKERS", fmt.Sprint(1+rng.IntN(6)),
		pre+"MAX_LAG", []string{"50ms", "300ms", "2s"}[rng.IntN(3)],
		pre+"RETRIES", fmt.Sprint(rng.IntN(4)),
		pre+"RETRY_BACKOFF", "20ms",
		pre+"TIMEOUT", []string{"0", "200ms", "2s"}[rng.IntN(3)],
		pre+"LOAD_RATE", []string{"max", "4000"}[rng.IntN(2)],
		pre+"DURATION", fmt.Sprintf("%ds", 5+rng.IntN(20)),
		"SOAKD_SHUTDOWN_GRACE", []string{"0s", "300ms", "5s"}[rng.IntN(3)])
	if rng.IntN(3) == 0 {
		env[pre+"ROWS"] = fmt.Sprint(1000 + rng.IntN(20000)) // a finite data set
	}
	cfg := daemon.LoadTest(t, env, p)
	t.Logf("config: %v", env)

	var (
		wl   *daemon.Handle
		open = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: prometheus.NewRegistry()})
	h := srv.Handler()
	done := make(chan struct{})
	var sum *report.Summary
	go func() {
		defer close(done)
		var err error
		sum, err = daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
			Observers: []daemon.Observer{srv, onStart(func(ws []*daemon.Handle) { wl = ws[0]; close(open) })}})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	<-open
	stopAt := time.Duration(1+rng.IntN(30)) * time.Second // may come before or after the natural end
	start := time.Now()
	for step := 0; ; step++ {
		time.Sleep(time.Duration(1+rng.IntN(700)) * time.Millisecond)
		synctest.Wait()
		if closed(done) {
			break
		}
		checkBooks(t, fmt.Sprintf("step %d at %v", step, time.Since(start)), wl, h, sink, false)
		if time.Since(start) >= stopAt && ctx.Err() == nil {
			cancel() // SIGTERM
			continue
		}
		if _, paced := wl.TargetRate(); wl.Phase() == nil || wl.Finished() || !paced || rng.IntN(4) != 0 {
			continue
		}
		// The phase may end meanwhile: then the request times out.
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		switch rng.IntN(3) {
		case 0:
			r, _ := pace.Parse([]string{"300", "3000", "2s:6000"}[rng.IntN(3)])
			_ = wl.SetRate(cctx, r)
		case 1:
			_ = wl.Pause(cctx)
		default:
			_ = wl.Resume(cctx)
		}
		ccancel()
	}
	<-done
	checkBooks(t, "end", wl, h, sink, true)
	for _, ws := range sum.Workloads {
		t.Logf("%s phase, stopped by %s: scheduled %d = acked %d + failed %d + dropped %d (%d cut) + in flight %d; errors %v",
			ws.Phase, ws.StoppedBy, ws.Scheduled, ws.Units, ws.Failed, ws.Dropped, ws.DroppedAtShutdown, ws.InFlight, ws.Errors)
		if ws.InFlight != 0 || ws.Scheduled != ws.Units+ws.Failed+ws.Dropped {
			t.Fatalf("summary %s phase: scheduled %d, acked %d, failed %d, dropped %d, in flight %d",
				ws.Phase, ws.Scheduled, ws.Units, ws.Failed, ws.Dropped, ws.InFlight)
		}
	}
	if rows := env[pre+"ROWS"]; rows != "" && sum.Workload(name, "run").StoppedBy == "end of data set" {
		// A dropped ticket skips no data: the whole data set was sent.
		if n, _ := strconv.ParseInt(rows, 10, 64); sink.seenRun() != n {
			t.Fatalf("data set of %d rows: the sink was sent %d", n, sink.seenRun())
		}
	}
}

// closed reports whether c is closed.
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
