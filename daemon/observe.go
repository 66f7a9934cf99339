package daemon

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/soakd/soakd/daemon/pace"
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
	// Started is called once every workload is open and the HTTP
	// endpoints serve. ctx ends when scheduling stops (the run's end, a
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

// Finish wraps the reason an observer ends the run with when it has
// what it ran for (a capacity search's answer): the run then counts as
// having run its course, and its phases say reason as what stopped them.
func Finish(reason string) error { return &finished{reason} }

type finished struct{ reason string }

func (f *finished) Error() string { return f.reason }

// finishedReason is the reason of a Finish cause, or "".
func finishedReason(err error) string {
	var f *finished
	if errors.As(err, &f) {
		return f.reason
	}
	return ""
}

// Handle is an observer's view of one workload and the way to steer it.
type Handle struct{ w *workload }

// Name is the workload's name.
func (h *Handle) Name() string { return h.w.name }

// Config is the workload's configuration, a copy: an observer reads it,
// the engine owns it.
func (h *Handle) Config() Workload { return *h.w.cfg }

// Kind is the kind of the workload's source.
func (h *Handle) Kind() sources.Kind { return h.w.kind }

// Ops names the ops the workload issues: write for series, the query
// types of a query workload, the ops of a KV workload's mix.
func (h *Handle) Ops() []string {
	ops := h.w.ops
	if m, ok := h.w.src.(interface{ Ops() []sources.Op }); ok && h.w.kind == sources.KV {
		mix := m.Ops()
		ops = slices.DeleteFunc(slices.Clone(ops), func(op int) bool { return !slices.Contains(mix, sources.Op(op)) })
	}
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = opName(op)
	}
	return names
}

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

// Pause stops scheduling until Resume; work in flight goes on.
func (h *Handle) Pause(ctx context.Context) error { return h.w.control(ctx, controlReq{pause: true}) }

// Resume schedules again after Pause.
func (h *Handle) Resume(ctx context.Context) error { return h.w.control(ctx, controlReq{resume: true}) }

// ServerVersion asks the target for its version, where the sink can.
func (h *Handle) ServerVersion(ctx context.Context) (string, bool) {
	v, ok := h.w.sink.(sinks.Versioner)
	if !ok {
		return "", false
	}
	s, err := v.ServerVersion(ctx)
	return s, err == nil && s != ""
}

// Phase is an observer's view of one phase of a workload.
type Phase struct{ ps *phaseStats }

// Name is the phase's name: load or run.
func (p *Phase) Name() string { return p.ps.name }

// Workers is the number of workers of the phase.
func (p *Phase) Workers() int { return len(p.ps.workers) }

// AllWriting reports whether every worker is inside a write now.
func (p *Phase) AllWriting() bool {
	for _, t := range p.ps.workers {
		if !t.writing.Load() {
			return false
		}
	}
	return len(p.ps.workers) > 0
}

// Counts is what a phase (or a window of it) did, in units: every unit
// scheduled is acknowledged, failed, dropped or still in flight.
type Counts struct {
	Scheduled, Acked, Failed, Dropped int64
}

// InFlight is the units scheduled and not yet acknowledged, failed or
// dropped.
func (c Counts) InFlight() int64 { return c.Scheduled - c.Acked - c.Failed - c.Dropped }

func countsOf(c *counts) Counts {
	return Counts{Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped}
}

// Counts are the phase's counts so far.
func (p *Phase) Counts() Counts {
	c := p.ps.snapshot()
	return countsOf(&c)
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
	ps   *phaseStats
	rec  *windowRecorder
	hist *hdrhistogram.Histogram
}

// WindowStats is one window of a phase.
type WindowStats struct {
	Seconds float64
	Counts  Counts
	// Latency holds a distribution per key the window was started with,
	// in their order.
	Latency []Quantiles
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
	out := WindowStats{Seconds: ws.seconds(), Counts: countsOf(&ws.c), Latency: make([]Quantiles, len(ws.lat))}
	for i, d := range ws.lat {
		if w.hist == nil {
			w.hist = hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
		}
		w.hist.Reset()
		d.addTo(w.hist)
		out.Latency[i] = quantiles(w.hist)
	}
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

// SleepFor waits d or until ctx ends; it reports whether d passed: the
// engine's own wait, for observers.
func SleepFor(ctx context.Context, d time.Duration) bool { return sleepCtx(ctx, d) }
