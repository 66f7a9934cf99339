package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/opener"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Deps are what Run needs besides the configuration.
type Deps struct {
	Logger  *zap.Logger
	Plugins *config.Plugins
	Version string

	// Observers follow the run: each workload's phases, its steering and
	// what /status shows of them (see Observer); a Ticker follows the
	// engine's clock, a Finisher learns of the run's end. The HTTP
	// endpoints and the soakd_* metrics are one (package serve).
	Observers []Observer
}

// workload is one configured workload, opened and ready to run.
type workload struct {
	*runner
	entry *sources.Entry
	ready opener.Target // its wait for its target, and its readiness
	// steeredBy names the observer its rate is given to (Handle.Steer),
	// nil when none: /control then leaves it alone.
	steeredBy atomic.Pointer[string]
}

// errHardStop is the cause of a stop by SOAKD_DURATION.
var errHardStop = errors.New("SOAKD_DURATION reached")

// stopCause names why genCtx ended: an observer's Finish, SOAKD_DURATION,
// another workload's configuration error, a failed threshold marked !, or
// a signal (the caller's context).
func stopCause(ctx context.Context) string {
	cause := context.Cause(ctx)
	var ce *settings.Error
	var st *opener.TimeoutError
	if e := endingOf(cause); e != nil {
		return e.reason
	}
	switch {
	case errors.Is(cause, errHardStop):
		return stopHard
	case errors.As(cause, &ce):
		return stopConfig
	case errors.As(cause, &st):
		return stopStartTimeout
	}
	return stopSignal
}

// Run runs every workload of cfg until each ends, cfg.Duration passes, or
// ctx is done (SIGINT/SIGTERM): then scheduling stops, writes in flight get
// cfg.ShutdownGrace to finish, sinks are closed in reverse order and the
// summary is returned. It returns an error only when the run could not
// start or a workload failed for good (e.g. its schema was rejected); the
// summary says why as well.
func Run(ctx context.Context, cfg *config.Config, d Deps) (*report.Summary, error) {
	log := d.Logger
	started := time.Now()

	wls, err := openWorkloads(ctx, cfg, d)
	if err != nil {
		return nil, err
	}
	// After a stop (SIGINT/SIGTERM) the sinks close by the end of
	// SHUTDOWN_GRACE: a target that hangs must not hold the process past
	// it (closing a sink whose connections are stuck would take its whole
	// close timeout).
	var stoppedAt atomic.Int64
	defer func() {
		var by time.Time
		if at := stoppedAt.Load(); at != 0 {
			by = time.Unix(0, at).Add(cfg.ShutdownGrace)
		}
		closeSinks(wls, log, by)
	}()

	// genCtx ends scheduling (signal or SOAKD_DURATION); drainCtx ends
	// writes in flight SHUTDOWN_GRACE later.
	genCtx, stopGen := context.WithCancelCause(ctx)
	defer stopGen(nil)
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		genCtx, cancel = context.WithTimeoutCause(genCtx, cfg.Duration, errHardStop)
		defer cancel()
	}
	drainCtx, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	allDone := make(chan struct{})
	// graceDone: Run waits for this goroutine, which may still log after
	// the workloads are done (the caller may read the log once Run returns).
	graceDone := make(chan struct{})
	go func() {
		defer close(graceDone)
		select {
		case <-genCtx.Done():
		case <-allDone:
			// A stop that ended the workloads is still said, whichever
			// of the two this select saw first.
			if genCtx.Err() == nil {
				return
			}
		}
		for _, w := range wls {
			w.stopping.Store(true)
		}
		if ctx.Err() != nil {
			stoppedAt.Store(time.Now().UnixNano())
			log.Info("stopping: no new work is scheduled; writes in flight may finish", zap.Duration("shutdown_grace", cfg.ShutdownGrace),
				zap.String("cause", context.Cause(ctx).Error()))
		}
		t := time.NewTimer(cfg.ShutdownGrace)
		defer t.Stop()
		select {
		case <-t.C:
			log.Warn("shutdown grace over: cancelling writes still in flight")
			stopDrain()
		case <-allDone:
		}
	}()

	for _, o := range d.Observers {
		o.Started(genCtx, handles(wls), stopGen)
	}
	clockDone := make(chan struct{})
	go func() { runClock(genCtx, cfg.Progress, d.Observers); close(clockDone) }()
	pingDone := make(chan struct{})
	go func() { pingLoop(genCtx, wls); close(pingDone) }()

	g := new(errgroup.Group)
	for _, w := range wls {
		g.Go(func() error {
			err := w.runAll(genCtx, drainCtx, cfg)
			var ce *settings.Error
			var st *opener.TimeoutError
			if errors.As(err, &ce) || errors.As(err, &st) {
				// A setting the target contradicts: the configuration is
				// wrong, so the whole run stops now (exit 2). A target
				// not up within START_TIMEOUT stops it too (exit 1):
				// that bound asks to fail rather than run without it.
				stopGen(err)
			}
			return err
		})
	}
	runErr := g.Wait()
	close(allDone)
	<-graceDone
	// Whether the run ran its course (to its end or SOAKD_DURATION), read
	// before stopGen cancels genCtx.
	end := endingOf(context.Cause(genCtx))
	ranItsCourse := genCtx.Err() == nil || stopCause(genCtx) == stopHard || (end != nil && end.ranItsCourse)
	stopGen(nil)
	<-clockDone
	<-pingDone
	for _, o := range d.Observers {
		if f, ok := o.(Finisher); ok {
			f.Finished(ranItsCourse)
		}
	}
	sum := summarize(d.Version, started, cfg, wls, d.Observers)
	return sum, runErr
}

func openWorkloads(ctx context.Context, cfg *config.Config, d Deps) ([]*workload, error) {
	var wls []*workload
	fail := func(err error) ([]*workload, error) {
		closeSinks(wls, d.Logger, time.Time{})
		return nil, err
	}
	for _, wc := range cfg.Workload {
		e, src, err := opener.Source(d.Plugins, wc)
		if err != nil {
			return fail(err)
		}
		if err := opener.CheckMemory(wc, e.Kind, src); err != nil {
			return fail(err)
		}
		if len(wc.Checks) > 0 && !slices.ContainsFunc(d.Observers, func(o Observer) bool { _, ok := o.(Checker); return ok }) {
			return fail(fmt.Errorf("%sTHRESHOLDS: set, but no Checker among Deps.Observers judges them", config.Prefix(wc.Name)))
		}
		if wc.Verify > 0 && !slices.ContainsFunc(d.Observers, func(o Observer) bool { _, ok := o.(Verifier); return ok }) {
			return fail(fmt.Errorf("%sVERIFY: set, but no Verifier among Deps.Observers reads back", config.Prefix(wc.Name)))
		}
		log := d.Logger.With(zap.String("workload", wc.Name))
		batch, _ := wc.BatchUnits(e.Kind)
		sink, err := opener.Sink(ctx, d.Plugins, wc, e.Kind, src, wc.Workers, batch, log)
		if err != nil {
			return fail(err)
		}
		w := &workload{entry: e}
		w.runner = newRunner(wc, e.Kind, src, sink, log)
		w.ready.Init(wc, log, w.scrub)
		w.handle, w.observers = &Handle{w}, d.Observers
		wls = append(wls, w)
		for _, o := range d.Observers {
			if err := o.Opened(w.handle); err != nil {
				return fail(err)
			}
		}
		for _, o := range d.Observers {
			if bo, ok := o.(BatchObserver); ok {
				if f := bo.Follow(w.handle); f != nil {
					w.followers = append(w.followers, f)
				}
			}
		}
		rate := wc.Rate.String()
		if wc.Builtin {
			fields := []zap.Field{zap.String("target", wc.Sink.Redacted), zap.String("set", config.Prefix(wc.Name)+"TARGET")}
			msg := "no target set: using the built-in target, nothing leaves this process"
			if len(wc.BuiltinDefaults) > 0 {
				msg += "; defaults for it, unless set: " + strings.Join(wc.BuiltinDefaults, " ")
			}
			log.Warn(msg, fields...)
		}
		log.Info("workload", zap.String("source", wc.Source), zap.String("target", wc.Sink.Redacted),
			zap.String("rate", rate), zap.Int("workers", wc.Workers), zap.Int("batch", w.batchSize))
	}
	return wls, nil
}

// closeSinks closes sinks in reverse open order, each with a deadline:
// 10 s, or by (when not zero) but at least closeFloor from now.
func closeSinks(wls []*workload, log *zap.Logger, by time.Time) {
	for i := len(wls) - 1; i >= 0; i-- {
		w := wls[i]
		if w.sink == nil {
			continue
		}
		t0 := time.Now()
		deadline := t0.Add(10 * time.Second)
		if !by.IsZero() {
			deadline = maxTime(by, t0.Add(closeFloor))
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		if err := w.sink.Close(ctx); err != nil {
			w.log.Warn("cannot close sink", zap.String("error", w.scrub(err.Error())))
		}
		cancel()
		w.sink = nil
		w.log.Debug("sink closed", zap.Duration("took", time.Since(t0)))
	}
}

// runAll prepares the sink, runs the load phase when the source has one,
// then the workload's run phase.
func (w *workload) runAll(genCtx, drainCtx context.Context, cfg *config.Config) error {
	defer w.finished.Store(true)
	for _, f := range w.followers {
		// A follower ends after the phases (a read-back checker once what
		// they acknowledged and it picked has been read back).
		f.Begin(drainCtx)
		defer f.End()
	}
	err := w.runPhases(genCtx, drainCtx, cfg)
	if err != nil {
		w.ready.Fail(err)
	}
	return err
}

func (w *workload) runPhases(genCtx, drainCtx context.Context, cfg *config.Config) error {
	stopped := func(err error) error {
		if genCtx.Err() != nil {
			// Stopped while waiting for the target: not a failure of
			// the target, and the summary says what stopped it.
			w.ready.Stopped(stopCause(genCtx))
			return nil
		}
		return err
	}
	if err := w.ready.Setup(genCtx, w.sink); err != nil {
		return stopped(err)
	}
	if w.cfg.ResetFirst && w.kind != sources.Queries { // a query workload reads data it did not write
		if err := w.resetTarget(genCtx); err != nil {
			return err
		}
	}
	load, err := w.probe(genCtx)
	if err != nil {
		return stopped(err)
	}
	w.ready.Done()
	if load != nil {
		if err := w.preload(genCtx, drainCtx, cfg, load); err != nil {
			return err
		}
		if st := w.allPhases()[len(w.allPhases())-1].snapshot(); st.acked == 0 && st.failed > 0 && genCtx.Err() == nil {
			// The target refused every insert (a user without the
			// command, a replica, a key of another type): the run would
			// read records that are not there, and bury the load's
			// reason under its own.
			w.log.Error("every insert of the load phase failed: the run phase is not run, as it would read records that are not there",
				zap.Int64("failed", st.failed), zap.String("last_error", w.lastError().Text))
			return nil
		}
	}
	if genCtx.Err() != nil {
		// Ready, but stopped before its run phase began: its entry
		// (no phase ran) still says what stopped it.
		w.ready.Stopped(stopCause(genCtx))
		return nil
	}
	_, err = w.run(genCtx, drainCtx, "run", w.src, w.cfg.Rate, w.cfg.Duration, stopDuration)
	return err
}

// closeFloor is the least time a sink gets to close after a stop, even
// when SHUTDOWN_GRACE is over.
const closeFloor = 500 * time.Millisecond

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// resetTarget empties what soakd wrote to the target, where the sink can.
func (w *workload) resetTarget(ctx context.Context) error {
	r, ok := w.sink.(sinks.Resetter)
	if !ok {
		w.log.Warn("the target cannot be reset: this point starts from the state the previous ones left")
		return nil
	}
	if err := r.Reset(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while resetting: a stop, not a failure
		}
		return fmt.Errorf("workload %s: cannot reset the target: %s", w.name, w.scrub(err.Error()))
	}
	return nil
}

// probe decides whether the KV load phase runs (LOAD=auto: when records
// are missing; LOAD=on: always; LOAD=off: never) and checks, through the
// sink's probe,
// that the target holds no records of another DATA_TYPE. It returns the
// load source, or nil when there is no load phase. The probe is a setup
// step: waited for while the target is down.
func (w *workload) probe(ctx context.Context) (sources.Source, error) {
	pl, ok := w.src.(sources.Preloader)
	if !ok {
		return nil, nil
	}
	load, probe, err := pl.Preload()
	if err != nil {
		return nil, fmt.Errorf("workload %s: cannot build the load phase: %w", w.name, err)
	}
	pr, ok := w.sink.(sinks.Prober)
	if !ok || probe == nil {
		return load, nil
	}
	b := newBatch(w.src)
	probe(b)
	n := 0
	err = w.ready.Await(ctx, opener.StepProbe, opener.ProbeAttemptTimeout, func(ctx context.Context) (err error) {
		n, err = pr.Present(ctx, b)
		return err
	})
	if err != nil {
		return nil, err
	}
	if load == nil {
		return nil, nil // LOAD=off: the probe checked the records' type only
	}
	if al, ok := w.src.(sources.AlwaysLoader); ok && al.AlwaysLoad() {
		w.log.Info("LOAD=on: loading every record", zap.Int("probed", len(b.Ops)), zap.Int("present", n))
		return load, nil
	}
	if n == len(b.Ops) {
		w.log.Info("records already loaded; skipping the load phase", zap.Int("probed", n))
		return nil, nil
	}
	return load, nil
}

// preload runs the KV load phase of load.
func (w *workload) preload(genCtx, drainCtx context.Context, cfg *config.Config, load sources.Source) error {
	fields := []zap.Field{zap.String("load_rate", w.cfg.LoadRate.String())}
	if cfg.Duration > 0 {
		fields = append(fields, zap.Duration("soakd_duration", cfg.Duration),
			zap.String("note", "SOAKD_DURATION is a hard stop for the process and includes this load phase; "+
				config.Prefix(w.name)+"DURATION covers the run phase only"))
	}
	w.log.Info("loading records before the run", fields...)
	t0 := time.Now()
	reason, err := w.run(genCtx, drainCtx, "load", load, w.cfg.LoadRate, w.cfg.LoadDuration, stopLoadDuration)
	if err != nil {
		return err
	}
	switch reason {
	case stopEndOfData:
		w.log.Info("load phase done", zap.Duration("took", time.Since(t0)))
	case stopLoadDuration, stopEndOfProfile:
		// A finite LOAD_RATE profile ends like LOAD_DURATION does:
		// maybe before every record was loaded.
		st := w.allPhases()[len(w.allPhases())-1].snapshot()
		total := int64(-1)
		if s, ok := load.(sources.Sized); ok {
			total = s.Total()
		}
		by := "LOAD_DURATION"
		if reason == stopEndOfProfile {
			by = "the end of LOAD_RATE's profile"
		}
		w.log.Warn("load phase stopped by "+by+" before every record was loaded; reads of the records not loaded will fail as empty",
			zap.Int64("loaded", st.acked), zap.Int64("records", total), zap.Duration("load_duration", w.cfg.LoadDuration),
			zap.String("load_rate", w.cfg.LoadRate.String()))
	}
	return nil
}

// pingLoop refreshes every sink's readiness every 5 s.
func pingLoop(ctx context.Context, wls []*workload) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		for _, w := range wls {
			p, ok := w.sink.(sinks.Pinger)
			if !ok {
				continue
			}
			if !w.ready.Prepared() {
				continue // setup is trying the target and says why it waits
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := p.Ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			w.ready.Pinged(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
