package daemon

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Observer is how a feature (a capacity search, a checker, a reporter)
// follows the engine: the one way in besides Run's arguments. A feature
// sees a workload through its Handle and a phase through its Phase, steers
// a workload through the Handle (rate, pause, resume) and stops the run
// through the stop function Started hands it. It never reads the engine's
// internals and never changes the configuration Run was given.
//
// Batches reach an observer aggregated, not one by one: a Phase's Window
// collects what the phase acknowledged, failed and dropped, with the
// latencies of every batch, between two cuts. Cutting a window is the
// observer's clock tick; the workers pay nothing for observers that cut
// no window.
//
// Run calls Opened for each workload in order, then Started once, then
// PhaseBegun and PhaseEnded from the goroutine that runs each workload.
// Each call must return quickly: work that waits belongs in a goroutine
// of the observer's own, started in Started and ended with its context.
type Observer interface {
	// Opened is called once per workload, its source built and its sink
	// open, before anything is sent. An error stops the run before it
	// starts, as a configuration error (exit 2): it should be a
	// *settings.Error naming the setting at fault.
	Opened(w *Handle) error
	// Started is called once every workload is open (package serve's
	// observer starts serving the HTTP endpoints then). ctx ends when scheduling stops (the run's end, a
	// signal, SOAKD_DURATION); stop ends the whole run with cause — wrap
	// the reason in Finish when the observer has what it ran for.
	Started(ctx context.Context, ws []*Handle, stop func(cause error))
	// PhaseBegun is called when a phase of w (load, then run) begins,
	// before its first unit is scheduled.
	PhaseBegun(w *Handle, p *Phase)
	// PhaseEnded is called when the phase has ended, with why (the
	// summary's stopped_by: "end of data set", "DURATION", ...).
	PhaseEnded(w *Handle, p *Phase, reason string)
}

// StatusAdder is an Observer that adds a field of its own to a
// workload's object in /status (soakd capacity's "capacity").
type StatusAdder interface {
	// AddStatus returns the field's name and value for the workload
	// named workload, or ok false to add nothing.
	AddStatus(workload string) (key string, value any, ok bool)
}

// SummaryAdder is an Observer that adds a field of its own to a
// workload's entry in the summary (targetwatch's "target_figures"), as
// StatusAdder does to /status.
type SummaryAdder interface {
	// SummaryField returns the field's name and value for the workload
	// named workload, or ok false to add nothing. Run calls it once per
	// workload when it builds the summary, after every Finisher has been
	// told the run is over; the value lands on the workload's last entry
	// (its run phase's) as report.WorkloadSummary.Extra, and is
	// marshalled to JSON with the summary. key must not name one of the
	// entry's own fields (its JSON names): the summary's JSON then fails.
	SummaryField(workload string) (key string, value any, ok bool)
}

// PhaseSummarizer is an Observer that completes each phase's entry in
// the summary with what it kept of the phase (package record: what each
// stream wrote, in the entry's verify). Run calls it once per phase when
// it builds the summary, after every Finisher has been told the run is
// over and before report.Conclude reads the entry.
type PhaseSummarizer interface {
	SummarizePhase(w *Handle, p *Phase, entry *report.WorkloadSummary)
}

// Ticker is an Observer that follows the engine's one-second clock: the
// live sampler, the progress line, the bar, the history.
type Ticker interface {
	// Tick is called every second while the run schedules, from the
	// engine's own goroutine, on each Ticker in the order of
	// Deps.Observers; at is the tick's time. intervalEnded is true when
	// a progress interval (PROGRESS_INTERVAL, else 10 s) has just ended:
	// package live then closes each workload's latency window. The next
	// tick waits for it: it must return quickly.
	Tick(at time.Time, intervalEnded bool)
}

// Finisher is an Observer told once that the run is over: every workload
// has ended and the engine's clock has stopped, before Run returns the
// summary. ranItsCourse is false when the run was stopped before its end
// (a signal, a configuration error, a failed threshold).
type Finisher interface {
	Finished(ranItsCourse bool)
}

// Finish wraps the reason an observer ends the run with when it has
// what it ran for (a capacity search's answer): the run then counts as
// having run its course, and its phases say reason as what stopped them.
func Finish(reason string) error { return &ending{reason: reason, ranItsCourse: true} }

// Fail wraps the reason an observer stops the run with when the run has
// failed (a threshold marked ! failed): its phases say reason as what
// stopped them, and the run did not run its course.
func Fail(reason string) error { return &ending{reason: reason} }

// ending is an observer's cause for ending the run (Finish, Fail).
type ending struct {
	reason       string
	ranItsCourse bool
}

func (e *ending) Error() string { return e.reason }

// endingOf is err's Finish or Fail cause, or nil.
func endingOf(err error) *ending {
	var e *ending
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Handle is an observer's view of one workload and the way to steer it.
type Handle struct{ w *workload }

// Name is the workload's name.
func (h *Handle) Name() string { return h.w.name }

// Config is the workload's configuration, a copy: an observer reads it,
// the engine owns it.
func (h *Handle) Config() config.Workload { return *h.w.cfg }

// Kind is the kind of the workload's source.
func (h *Handle) Kind() sources.Kind { return h.w.kind }

// Phase is the phase running now, or nil before the first one begins.
func (h *Handle) Phase() *Phase {
	if ps := h.w.cur.Load(); ps != nil {
		return &Phase{ps}
	}
	return nil
}

// Finished reports whether the workload has ended (every phase done, or
// stopped for good).
func (h *Handle) Finished() bool { return h.w.finished.Load() }

// SetRate makes rate the workload's schedule from now on, as /control
// does; it fails for a closed-loop workload.
func (h *Handle) SetRate(ctx context.Context, rate pace.Rate) error {
	return h.w.control(ctx, controlReq{rate: &rate})
}

// Steer gives the workload's rate to the caller, by naming it (soakd
// capacity, which sets each step's rate): from then on /control refuses
// to change, pause or resume it, as such a change would be judged as the
// caller's own. Call it from Opened, before /control serves.
func (h *Handle) Steer(by string) { h.w.steeredBy.Store(&by) }

// SteeredBy names who Steer gave the workload's rate to, or "".
func (h *Handle) SteeredBy() string {
	if by := h.w.steeredBy.Load(); by != nil {
		return *by
	}
	return ""
}

// Pause stops scheduling until Resume; work in flight goes on.
func (h *Handle) Pause(ctx context.Context) error { return h.w.control(ctx, controlReq{pause: true}) }

// Resume schedules again after Pause.
func (h *Handle) Resume(ctx context.Context) error { return h.w.control(ctx, controlReq{resume: true}) }

// Phase is an observer's view of one phase of a workload.
type Phase struct{ ps *phaseStats }

// Name is the phase's name: load or run.
func (p *Phase) Name() string { return p.ps.name }

// Workers is the number of workers of the phase.
func (p *Phase) Workers() int { return len(p.ps.workers) }

// Acked is the units the phase acknowledged so far, as Snapshot counts
// them, without the copy of every op's latency buckets a Snapshot makes
// (the live sampler reads it every second). Each tally is read under its
// own lock, one at a time, as no writer holds two: the sum lies between
// two snapshots' (acknowledged units only grow).
func (p *Phase) Acked() int64 {
	ps := p.ps
	read := func(t *tally) int64 {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.c.acked
	}
	var n int64
	for _, t := range ps.workers {
		n += read(t)
	}
	if v := ps.verify; v != nil {
		n += read(v)
	}
	return n + read(&ps.sched)
}

// Counts is what a phase (or a window of it) did, in units: every unit
// scheduled is acknowledged, failed, dropped or still in flight.
type Counts struct {
	Scheduled, Acked, Failed, Dropped int64
	// Ops is what each op that did something did, by name.
	Ops map[string]OpCount
}

// InFlight is the units scheduled and not yet acknowledged, failed or
// dropped.
func (c Counts) InFlight() int64 { return c.Scheduled - c.Acked - c.Failed - c.Dropped }

func countsOf(c *counts) Counts {
	return Counts{Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped, Ops: opCountsOf(c)}
}

// LatencyKey names a latency distribution a Window records: the response
// time (from each batch's intended start) of one op, or of every op when
// Op is ""; the service time (from the send) with Service; or the
// batches' dispatch delay, whatever the op, with Dispatch.
type LatencyKey struct {
	Op       string
	Service  bool
	Dispatch bool
}

// Window collects what a phase does between two cuts: the units it
// acknowledged, failed and dropped and their latencies, each in exactly
// one window (see window.go).
type Window struct {
	ps  *phaseStats
	rec *windowRecorder
}

// WindowStats is one window of a phase.
type WindowStats struct {
	// From and To are the window's edges, since its phase began.
	From, To time.Duration
	Seconds  float64
	Counts   Counts
	// Latency holds the quantiles of each distribution the window was
	// started with, in their order; Dists the distributions themselves
	// (CutWindows only).
	Latency []report.Quantiles
	Dists   []report.Dist
}

// StartWindow begins collecting the distributions keys, from now on, until
// Stop. An op the engine does not know records nothing.
func (p *Phase) StartWindow(keys ...LatencyKey) *Window {
	dk := make([]distKey, len(keys))
	for i, k := range keys {
		op := opSlot(k.Op)
		if k.Op != "" && op < 0 {
			op = noOp
		}
		dk[i] = distKey{op: op, service: k.Service, dispatch: k.Dispatch}
	}
	return &Window{ps: p.ps, rec: p.ps.startWindow(dk...)}
}

// noOp as a distKey's op matches no sample: an op the engine does not
// know.
const noOp = -2

// Cut ends the window in progress, returns it, and begins the next.
func (w *Window) Cut() WindowStats {
	ws := w.ps.cutWindows(nil, w.rec)[0]
	return w.stats(&ws, true)
}

// stats converts a window cut from w's recorder: its quantiles when
// withQuantiles is true, else its distributions.
func (w *Window) stats(ws *windowStats, withQuantiles bool) WindowStats {
	out := WindowStats{From: ws.from - w.ps.begin, To: ws.to - w.ps.begin, Seconds: ws.seconds(), Counts: countsOf(&ws.c)}
	if !withQuantiles {
		out.Dists = ws.lat
		return out
	}
	out.Latency = make([]report.Quantiles, len(ws.lat))
	for i, d := range ws.lat {
		out.Latency[i] = d.Quantiles()
	}
	return out
}

// Peek is the latency of the window in progress, without cutting it: the
// quantiles of each distribution the window was started with, in their
// order.
func (w *Window) Peek() []report.Quantiles {
	out := make([]report.Quantiles, len(w.rec.keys))
	w.ps.snapshotThen(func(*phaseHist) { // merges the workers' latest samples
		for i := range w.rec.hists {
			out[i] = w.rec.hists[i].Dist().Quantiles()
		}
	})
	return out
}

// Stop ends the window; what it held since its last cut is lost.
func (w *Window) Stop() { w.ps.stopWindow(w.rec) }

// handles wraps each workload in its Handle, once per workload.
func handles(wls []*workload) []*Handle {
	out := make([]*Handle, len(wls))
	for i, w := range wls {
		out[i] = w.handle
	}
	return out
}

// notifyBegun and notifyEnded tell every observer of a phase's edges.
func (r *runner) notifyBegun(ps *phaseStats) {
	for _, o := range r.observers {
		o.PhaseBegun(r.handle, &Phase{ps})
	}
}

func (r *runner) notifyEnded(ps *phaseStats, reason string) {
	for _, o := range r.observers {
		o.PhaseEnded(r.handle, &Phase{ps}, reason)
	}
}

// Checker is an Observer that judges workloads (thresholds): its verdicts
// show in /status and as soakd_threshold_ok and soakd_threshold_value
// while the run lasts, and in the summary, where a failed one fails the
// run (exit 1).
type Checker interface {
	// Verdicts returns the verdicts of the workload named workload so far,
	// or, with final, its last ones: Run asks for those once every phase
	// has ended and scheduling has stopped.
	Verdicts(workload string, final bool) []report.ThresholdResult
}

// OpCount is what one op did: OK batches, queries or operations
// acknowledged, and Errors, failed attempts of every class.
type OpCount struct {
	OK, Errors int64
}

// opCountsOf lists c's ops that did something, by name.
func opCountsOf(c *counts) map[string]OpCount {
	out := map[string]OpCount{}
	for op := range c.ops {
		o := &c.ops[op]
		var errs int64
		for _, e := range o.errors {
			errs += e
		}
		if o.ok != 0 || errs != 0 {
			out[opName(op)] = OpCount{OK: o.ok, Errors: errs}
		}
	}
	return out
}

// Elapsed is the phase's running time, to its end or now.
func (p *Phase) Elapsed() time.Duration { return p.ps.elapsed() }

// Ended reports whether the phase has ended.
func (p *Phase) Ended() bool { return p.ps.ended.Load() != 0 }

// Totals is what a phase did from its start, read in the same snapshot
// as the windows CutWindows cuts.
type Totals struct {
	Counts  Counts
	Seconds float64
	h       *phaseHist
}

// Latency is the phase's latency distribution of k since it began
// (empty without samples). It is read only during the call CutWindows
// makes.
func (t *Totals) Latency(k LatencyKey) report.Dist {
	key := distKey{op: opSlot(k.Op), service: k.Service}
	if k.Op != "" && key.op < 0 {
		return report.Dist{}
	}
	pick := func(oh *opHist) report.Dist {
		if key.service {
			return oh.service.total.Dist()
		}
		return oh.response.total.Dist()
	}
	if key.op != allOps {
		if oh := t.h.ops[key.op]; oh != nil {
			return pick(oh)
		}
		return report.Dist{}
	}
	var d report.Dist
	for _, oh := range t.h.ops {
		if oh != nil {
			d = d.Merge(pick(oh))
		}
	}
	return d
}

// CutWindows ends the window in progress of each of ws (windows of p) and
// begins the next, all in one snapshot, and returns the windows ended, in
// the order of ws. then, when not nil, is called in the same snapshot with
// the phase's totals, before they can change again.
func (p *Phase) CutWindows(then func(*Totals), ws ...*Window) []WindowStats {
	recs := make([]*windowRecorder, len(ws))
	for i, w := range ws {
		recs[i] = w.rec
	}
	var hook func(*counts, *phaseHist)
	if then != nil {
		hook = func(c *counts, h *phaseHist) {
			t := &Totals{Counts: countsOf(c), Seconds: (p.ps.windowEdge() - p.ps.begin).Seconds(), h: h}
			then(t)
		}
	}
	cut := p.ps.cutWindows(hook, recs...)
	out := make([]WindowStats, len(cut))
	for i := range cut {
		out[i] = ws[i].stats(&cut[i], false)
	}
	return out
}

// verdictsOf is the verdicts of every Checker among observers on the
// workload named workload, nil when none judges it.
func verdictsOf(observers []Observer, workload string, final bool) []report.ThresholdResult {
	var out []report.ThresholdResult
	for _, o := range observers {
		if c, ok := o.(Checker); ok {
			out = append(out, c.Verdicts(workload, final)...)
		}
	}
	return out
}

// ReportedOps names the ops the workload reports (soakd_ops_total's op):
// write for series, every KV op, the query types of a query workload.
func (h *Handle) ReportedOps() []string {
	names := make([]string, len(h.w.ops))
	for i, op := range h.w.ops {
		names[i] = opName(op)
	}
	return names
}

// Source is the workload's source, for what an observer reads of it (its
// schemas, how it recomputes or replays its rows): an observer never
// draws streams from it.
func (h *Handle) Source() sources.Source { return h.w.src }

// Sink is the workload's sink, open from Opened until the workload has
// finished (a WriteFollower's End): an observer may use its read
// capabilities (sinks.SeriesReader, sinks.KVReader) until then, and never
// writes through it.
func (h *Handle) Sink() sinks.Sink { return h.w.sink }

// BatchObserver is an Observer that follows the batches a workload
// writes, one by one: a read-back checker (VERIFY) picks from them what
// it reads back. Run asks it once per workload, after every Opened,
// whether it follows that workload; the workers of a workload nobody
// follows pay nothing for it.
type BatchObserver interface {
	Observer
	// Follow returns what follows w's writes, or nil to follow none.
	Follow(w *Handle) WriteFollower
}

// WriteFollower follows one workload's writes (BatchObserver).
type WriteFollower interface {
	// Begin is called from the goroutine that runs the workload, before
	// it sets up its target. drain ends when writes in flight must stop
	// (SHUTDOWN_GRACE after a stop): the follower's work on the
	// workload's batches ends with it.
	Begin(drain context.Context)
	// Written is called by a worker after each write of a batch of the
	// phase p, with the batch (read-only, valid only during the call)
	// and how the write ended. It runs on the write path: it must not
	// block, and should not allocate.
	Written(p *Phase, b *sources.Batch, o WriteOutcome)
	// End is called from the same goroutine as Begin once the
	// workload's last write has returned, before its sink closes and the
	// summary counts it: it may wait for the follower's work on the
	// batches, which drain bounds.
	End()
}

// WriteOutcome is how the write of a batch ended.
type WriteOutcome struct {
	// Acked is true when the target acknowledged the write; in a KV or
	// query batch, operations it answered as failed (a read that found
	// no record) may be among them.
	Acked bool
	// Stored is the units a failed write stored anyway (a partial write).
	Stored int
	// Streams are what the batch was filled from, a span of a stream
	// each, in the order filled; valid only during the call.
	Streams []StreamSpan
}

// StreamSpan is the part of one of a phase's streams that a batch was
// filled from: where the stream stood before and after filling it (the
// zero Position for a stream that does not report its position).
type StreamSpan struct {
	Stream   int // the stream's index among the phase's (Phase.StreamStarts)
	From, To sources.Position
}

// StreamStarts are where each of the phase's streams stood when the
// phase began, by index (the zero Position for a stream that does not
// report its position).
func (p *Phase) StreamStarts() []sources.Position { return slices.Clone(p.ps.starts) }

// Verifier is a BatchObserver that reads back what workloads had
// acknowledged (SOAKD_<W>_VERIFY) and counts its checks into each
// phase's ReadBack. Run refuses VERIFY when no observer is one.
type Verifier interface {
	BatchObserver
	// ReadsBack marks the observer as a Verifier; Run never calls it.
	ReadsBack()
}

// ReadBack is a phase's tally of VERIFY's read-back checks: what a
// Verifier counts into it shows as the phase's verify counts (/status,
// the summary and its exit code, soakd_verify_*), and the latencies of
// its reads as op verify. A phase of a workload without VERIFY counts
// nothing.
type ReadBack struct{ ps *phaseStats }

// ReadBack is the phase's tally of read-back checks.
func (p *Phase) ReadBack() ReadBack { return ReadBack{p.ps} }

// Skipped counts units picked for read-back but not checked: the
// checker was behind, a read failed, or the run ended first.
func (r ReadBack) Skipped(units int64) {
	if r.ps == nil || r.ps.verify == nil {
		return
	}
	t := r.ps.verify
	t.mu.Lock()
	t.c.verify.skipped += units
	t.mu.Unlock()
}

// Checked counts units read back in one read, one verdict each, and
// records the read's latency for them: response from when they were due
// to be read back, service from the read's send.
func (r ReadBack) Checked(verdicts []sources.Verdict, response, service time.Duration) {
	if r.ps == nil || r.ps.verify == nil {
		return
	}
	ps := r.ps
	t := ps.verify
	t.mu.Lock()
	if t.lat.n >= len(t.lat.s) {
		t.mu.Unlock()
		ps.hist.mu.Lock()
		t.mu.Lock()
		ps.hist.mergeLocked(&t.lat)
		ps.hist.mu.Unlock()
	}
	t.lat.add(sample{op: uint8(verifyOp), n: int32(len(verdicts)), response: response, service: service})
	t.c.verify.checked += int64(len(verdicts))
	for _, vd := range verdicts {
		for k, kind := range verifyKinds {
			if vd == kind {
				t.c.verify.failures[k]++
			}
		}
	}
	t.mu.Unlock()
}
