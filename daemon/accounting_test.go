package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/seq"
	"github.com/soakd/soakd/thresholds"
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
var chaosClasses = []sinks.Class{sinks.Timeout, sinks.Connection, sinks.Rejected, sinks.Server, sinks.Empty, sinks.Other, "mystery"}

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
	p := testPlugins(sinks.Entry{Schemes: []string{"chaos"}, Kinds: []sources.Kind{sources.Series},
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
func checkBooks(t *testing.T, step string, w *workload, h http.Handler, sink *chaosSink, ended bool) {
	t.Helper()
	var total counts
	bound := int64(max(64, 2*w.cfg.Workers)+w.cfg.Workers+1) * int64(w.batchSize)
	for _, ps := range w.allPhases() {
		c := ps.snapshot()
		if in := c.inflight(); in < 0 || in > bound {
			t.Fatalf("%s: phase %s: in flight %d (scheduled %d, acked %d, failed %d, dropped %d), want 0..%d",
				step, ps.name, in, c.scheduled, c.acked, c.failed, c.dropped, bound)
		}
		if (ended || ps.ended.Load() != 0) && c.inflight() != 0 {
			t.Fatalf("%s: phase %s ended with %d units in flight", step, ps.name, c.inflight())
		}
		if c.cut > c.dropped {
			t.Fatalf("%s: %d cut at shutdown but only %d dropped", step, c.cut, c.dropped)
		}
		total.add(&c)
	}
	seen, stored := sink.truth()
	if total.acked != stored {
		t.Fatalf("%s: engine acknowledged %d rows, the sink stored %d", step, total.acked, stored)
	}
	sink.mu.Lock()
	inside := int64(sink.inside)
	sink.mu.Unlock()
	// Rows the sink saw but did not store are failed, or in flight (being
	// written, or waiting for a retry).
	if notStored := seen - stored; total.failed > notStored || (ended && total.failed != notStored) {
		t.Fatalf("%s: engine failed %d rows, the sink saw %d it did not store", step, total.failed, notStored)
	}
	if inside > total.inflight() {
		t.Fatalf("%s: %d rows inside Write but only %d in flight", step, inside, total.inflight())
	}

	// /metrics says the same.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := parseMetrics(t, rec.Body.String(), w.name)
	for name, want := range map[string]int64{
		"soakd_scheduled_total": total.scheduled, "soakd_rows_total": total.acked, "soakd_failed_total": total.failed,
		"soakd_dropped_total": total.dropped, "soakd_inflight_units": total.inflight(), "soakd_bytes_total": total.bytes,
		`soakd_ops_total{op="write",result="ok"}`:      total.ops[writeOp].ok,
		`soakd_response_seconds_count{op="write"}`:     total.ops[writeOp].ok,
		`soakd_ops_total{op="write",result="error"}`:   total.ops[writeOp].failed,
		`soakd_errors_total{class="other",op="write"}`: total.ops[writeOp].errors[sinks.Other.Index()],
		// every unit sent had its dispatch delay recorded, once
		"soakd_dispatch_delay_seconds_count": total.acked + total.failed,
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
	if sum.Scheduled != total.scheduled || sum.Acked != total.acked || sum.Failed != total.failed || sum.Dropped != total.dropped {
		t.Fatalf("%s: /status phases add up to %+v, counts say %+v", step, sum, total)
	}
}

// parseMetrics reads the text exposition's samples of one workload, keyed
// by name and the labels other than workload.
func parseMetrics(t *testing.T, text, workload string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	label := `workload="` + workload + `"`
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' || !strings.Contains(line, label) {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		key, val := line[:sp], line[sp+1:]
		key = strings.NewReplacer(label+",", "", ","+label, "", "{"+label+"}", "").Replace(key)
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[key] = f
	}
	return out
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
	env := testEnv("SOAKD_WORKLOADS", name, pre+"SOURCE", "seq", pre+"TARGET", "chaos://x",
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
	cfg := loadTest(t, env, p)
	t.Logf("config: %v", env)

	var (
		wl   *workload
		h    http.Handler
		open = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	done := make(chan struct{})
	var sum *report.Summary
	go func() {
		defer close(done)
		var err error
		d, hh := serving(cfg, Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"}, reg, nil)
		d.started = func(wls []*workload) { wl, h = wls[0], hh; close(open) }
		sum, err = Run(ctx, cfg, d)
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
		if isClosed(done) {
			break
		}
		checkBooks(t, fmt.Sprintf("step %d at %v", step, time.Since(start)), wl, h, sink, false)
		if time.Since(start) >= stopAt && ctx.Err() == nil {
			cancel() // SIGTERM
			continue
		}
		if !wl.started() || wl.finished.Load() || wl.sched.Load().profile == nil || rng.IntN(4) != 0 {
			continue
		}
		var req controlReq
		switch rng.IntN(3) {
		case 0:
			r, _ := pace.Parse([]string{"300", "3000", "2s:6000"}[rng.IntN(3)])
			req.rate = &r
		case 1:
			req.pause = true
		default:
			req.resume = true
		}
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		_ = wl.control(cctx, req) // the phase may end meanwhile: then it times out
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
	if rows := env[pre+"ROWS"]; rows != "" && sum.Workload(name, "run").StoppedBy == stopEndOfData {
		// A dropped ticket skips no data: the whole data set was sent.
		if n, _ := strconv.ParseInt(rows, 10, 64); sink.seenRun() != n {
			t.Fatalf("data set of %d rows: the sink was sent %d", n, sink.seenRun())
		}
	}
}

// The ops a threshold may name are the engine's op slots, in order.
func TestOpNamesAreThresholdOps(t *testing.T) {
	if !slices.Equal(opNames, thresholds.OpNames) {
		t.Errorf("engine ops %q, threshold ops %q", opNames, thresholds.OpNames)
	}
}

// The ops configuration checks a workload's thresholds against are the
// ones the engine reports for its kind.
func TestOpNamesOfKind(t *testing.T) {
	for _, k := range []sources.Kind{sources.Series, sources.KV, sources.Queries} {
		var engine []string
		for _, op := range opsFor(k, nil) {
			engine = append(engine, opName(op))
		}
		if got := config.OpNamesOf(k); !slices.Equal(got, engine) {
			t.Errorf("%s: configuration knows ops %q, the engine reports %q", k, got, engine)
		}
	}
}

// TestSnapshotIsOneCut checks that a snapshot shows each unit in one state
// while the scheduler and a worker keep counting: a goroutine schedules a
// unit and then finishes it, over and over, so no more than one unit is
// ever in flight. A snapshot that read the worker's tally and then the
// scheduler's would see units finished meanwhile still in flight, and the
// units scheduled after them too: two or more.
func TestSnapshotIsOneCut(t *testing.T) {
	ps := newPhaseStats("run", "1000", 1)
	w := ps.workers[0]
	var done atomic.Bool
	go func() {
		defer done.Store(true)
		for range 300_000 {
			ps.sched.release(1)
			w.mu.Lock()
			w.c.acked++
			w.mu.Unlock()
		}
	}()
	snaps := 0
	for !done.Load() || snaps == 0 {
		c := ps.snapshot()
		if in := c.inflight(); in < 0 || in > 1 {
			t.Fatalf("snapshot %d: %d in flight (scheduled %d, acknowledged %d), want 0 or 1", snaps, in, c.scheduled, c.acked)
		}
		snaps++
	}
	if c := ps.snapshot(); c.scheduled != 300_000 || c.inflight() != 0 {
		t.Fatalf("at the end: scheduled %d, %d in flight", c.scheduled, c.inflight())
	}
	t.Logf("%d snapshots", snaps)
}
