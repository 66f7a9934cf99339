package capacity

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/backoff"
	"github.com/soakd/soakd/internal/procstat"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// doneReason is what the run's phases say stopped them once the search
// has its answer.
const doneReason = "capacity search done"

// search drives one workload's rate through the search while the engine
// runs it: a daemon.Observer.
type searcher struct {
	cc   config.CapacityConfig
	name string  // the searched workload
	max  float64 // SOAKD_MAX_RATE, 0 when unset
	// onUpdate, when set, gets the search after every step.
	onUpdate func(Result)
	// figures reads the searched workload's target's own figures; nil
	// when no watch serves the search (the steps then have none).
	figures TargetFigures
	log     *zap.Logger
	done    chan struct{} // closed when the search goroutine has ended

	mu     sync.Mutex
	w      *daemon.Handle
	run    chan *daemon.Phase // gets the searched workload's run phase
	res    Result
	step   int     // index of the step running (soakd_capacity_step)
	target float64 // its rate
}

// Opened takes the searched workload's rate (/control may not change
// it: each step is judged at the rate the search set) and checks that
// SLO_OP names an op it issues.
func (s *searcher) Opened(w *daemon.Handle) error {
	if w.Name() != s.name {
		return nil
	}
	w.Steer("soakd capacity, which sets each step's rate")
	if s.cc.SLOOp == "" {
		return nil
	}
	if ops := issuedOps(w); !slices.Contains(ops, s.cc.SLOOp) {
		wc := w.Config()
		return &settings.Error{Key: config.EnvPrefix + "CAPACITY_SLO_OP", Err: fmt.Errorf(
			"%q: workload %s (source %s) never issues it, so no step could be judged (its ops: %s)",
			s.cc.SLOOp, wc.Name, wc.Source, strings.Join(ops, ", "))}
	}
	return nil
}

// issuedOps names the ops w issues: write for series, the query types
// of a query workload, the ops of a KV workload's mix.
func issuedOps(w *daemon.Handle) []string {
	ops := w.ReportedOps()
	if m, ok := w.Source().(interface{ Ops() []sources.Op }); ok && w.Kind() == sources.KV {
		mix := m.Ops()
		ops = slices.DeleteFunc(ops, func(op string) bool {
			return !slices.ContainsFunc(mix, func(o sources.Op) bool { return o.String() == op })
		})
	}
	return ops
}

// Started starts the search; it ends the run (stop) once it has its
// answer.
func (s *searcher) Started(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	for _, w := range ws {
		if w.Name() == s.name {
			s.mu.Lock()
			s.w = w
			s.mu.Unlock()
		}
	}
	go func() {
		defer close(s.done)
		s.search(ctx, ws, stop)
	}()
}

// PhaseBegun hands the search the searched workload's run phase.
func (s *searcher) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	if w.Name() == s.name && p.Name() == "run" {
		select {
		case s.run <- p:
		default:
		}
	}
}

// PhaseEnded is nothing to the search: it cuts its own windows.
func (s *searcher) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// AddStatus shows the search in the searched workload's /status object.
func (s *searcher) AddStatus(workload string) (string, any, bool) {
	if workload != s.name {
		return "", nil, false
	}
	step, target, knee := s.live()
	res := s.result()
	return "capacity", Status{Step: step, Target: target, Knee: knee, Steps: res.Steps, LimitedBy: res.LimitedBy, Advice: res.Advice}, true
}

// Status is where a capacity search is, in /status: the step running (0 =
// none), its rate, the knee so far and every step judged.
type Status struct {
	Step   int     `json:"step"`
	Target float64 `json:"target_rate"`
	Knee   float64 `json:"knee_rate"`
	Steps  []Step  `json:"steps"`
	// LimitedBy and Advice, once the search has ended, say whether the
	// knee is the target's or soakd's own limit (Result).
	LimitedBy string `json:"limited_by,omitempty"`
	Advice    string `json:"advice,omitempty"`
}

// limit is the highest rate the search may ask for.
func (s *searcher) limit() float64 {
	l := s.cc.Max
	if s.max > 0 {
		l = math.Min(l, s.max)
	}
	return l
}

// search performs the search, then stops the engine (stop).
func (s *searcher) search(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	defer stop(daemon.Finish(doneReason))
	p := s.waitRunPhase(ctx)
	if p == nil {
		s.finish(0, false, true, "stopped before the run phase began")
		return
	}
	servers := serverVersions(ws)
	s.mu.Lock()
	s.res.Servers = servers
	s.mu.Unlock()
	win := p.StartWindow(daemon.LatencyKey{Op: s.cc.SLOOp}, daemon.LatencyKey{Op: s.cc.SLOOp, Service: true}, daemon.LatencyKey{Dispatch: true})
	defer win.Stop()
	if !s.setRate(ctx, s.cc.Start) || !backoff.Sleep(ctx, s.cc.Warmup) {
		s.finish(0, false, true, "stopped during the warm-up")
		return
	}
	stopped := false
	knee, found, outcome := search(s.cc, s.limit(), func(r float64, kind string) (bool, bool) {
		st, ok := s.runStep(ctx, p, win, r, kind)
		if ok && st.Pass {
			s.setKnee(r)
		}
		stopped = stopped || !ok
		return st.Pass, ok
	})
	s.mu.Lock()
	s.res.LimitedBy, s.res.Advice = s.limitedBy(knee, found)
	s.mu.Unlock()
	s.finish(knee, found, stopped, outcome)
}

// limitedBy names what bounds the knee: the bottleneck of the lowest
// failing step above it (the last one judged at that rate), and, when
// that is soakd, what to change. Holds s.mu.
func (s *searcher) limitedBy(knee float64, found bool) (string, string) {
	var at *Step
	for i := range s.res.Steps {
		st := &s.res.Steps[i]
		if st.Pass || st.Bottleneck == "" || (found && st.Target <= knee) {
			continue
		}
		if at == nil || st.Target <= at.Target {
			at = st
		}
	}
	if at == nil {
		return "", ""
	}
	wc := s.w.Config()
	size, units := wc.BatchUnits(s.w.Kind())
	p := config.Prefix(wc.Name)
	switch at.Bottleneck {
	case report.LimitWorkers:
		return report.LimitWorkers, fmt.Sprintf("soakd's workers, not the target, limited the search (%s); the knee is soakd's limit, "+
			"not the target's capacity: raise %sWORKERS (now %d) or send more units per round trip with %s%s (now %d), and search again",
			at.Diagnosis, p, wc.Workers, p, units, size)
	case report.LimitSoakd:
		return report.LimitSoakd, fmt.Sprintf("soakd itself, not the target, limited the search (%s); the knee is soakd's limit, "+
			"not the target's capacity: give soakd more CPU, raise %s%s (now %d) so it sends fewer, larger round trips, "+
			"or split the rate over processes with %sSHARD", at.Diagnosis, p, units, size, p)
	}
	return at.Bottleneck, ""
}

// waitRunPhase waits until the searched workload's run phase begins
// (after a prepare and a load phase); nil when the workload ended first or
// ctx did.
func (s *searcher) waitRunPhase(ctx context.Context) *daemon.Phase {
	if s.w == nil {
		return nil
	}
	if p := s.w.Phase(); p != nil && p.Name() == "run" {
		return p
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case p := <-s.run:
			return p
		case <-ctx.Done():
			return nil
		case <-t.C:
			if s.w.Finished() {
				return nil
			}
		}
	}
}

func (s *searcher) setRate(ctx context.Context, r float64) bool {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.w.SetRate(cctx, pace.ConstantRate(r)); err != nil {
		s.log.Warn("capacity: cannot set the rate", zap.Float64("rate", r), zap.Error(err))
		return false
	}
	return true
}

// steer asks the searched workload for f (pause or resume).
func (s *searcher) steer(ctx context.Context, f func(context.Context) error, what string) bool {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f(cctx); err != nil {
		s.log.Warn("capacity: cannot "+what, zap.Error(err))
		return false
	}
	return true
}

// drain pauses the schedule until every unit released so far is
// acknowledged, failed or dropped: the queue of the step before (soakd's
// and the target's) is gone before the next step starts. It gives up
// after MAX_LAG + TIMEOUT + HOLD (a stuck target), saying so.
func (s *searcher) drain(ctx context.Context, p *daemon.Phase) (took time.Duration, drained, ok bool) {
	t0 := time.Now()
	if !s.steer(ctx, s.w.Pause, "pause to drain") {
		return 0, false, false
	}
	wc := s.w.Config()
	limit := wc.MaxLag + wc.Timeout + s.cc.Hold
	for {
		c := p.Snapshot()
		if c.InFlight() <= 0 {
			return time.Since(t0), true, true
		}
		if time.Since(t0) > limit {
			s.log.Warn("capacity: the backlog did not drain; the step starts anyway", zap.Int64("in_flight", c.InFlight()),
				zap.Duration("waited", time.Since(t0)))
			return time.Since(t0), false, true
		}
		if !backoff.Sleep(ctx, 2*time.Millisecond) {
			return 0, false, false
		}
	}
}

// hold waits HOLD, sampling how often every worker is inside a write,
// and measures soakd's CPU share over it (-1 when unknown).
func (s *searcher) hold(ctx context.Context, p *daemon.Phase) (busy, cpu float64, ok bool) {
	cpu0, _ := procstat.Self()
	t0 := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(s.cc.Hold)
	defer end.Stop()
	var n, all int
	for {
		select {
		case <-ctx.Done():
			return 0, 0, false
		case <-tick.C:
			n++
			if n := p.Workers(); n > 0 && p.Writing() == n { // every worker inside a write
				all++
			}
			continue
		case <-end.C:
		}
		break
	}
	if n > 0 {
		busy = float64(all) / float64(n)
	}
	cpu = -1
	if cpu1, _ := procstat.Self(); !math.IsNaN(cpu0) && !math.IsNaN(cpu1) {
		if wall := time.Since(t0).Seconds(); wall > 0 {
			cpu = (cpu1 - cpu0) / wall / float64(runtime.GOMAXPROCS(0))
		}
	}
	return busy, cpu, true
}

// runStep drains the backlog of the step before, holds rate r for
// SETTLE, then HOLD, and judges the HOLD part.
func (s *searcher) runStep(ctx context.Context, p *daemon.Phase, win *daemon.Window, r float64, kind string) (Step, bool) {
	s.mu.Lock()
	idx := len(s.res.Steps) + 1
	s.step, s.target = idx, r
	s.mu.Unlock()
	took, drained, ok := s.drain(ctx, p)
	if !ok || !s.setRate(ctx, r) || !s.steer(ctx, s.w.Resume, "resume after draining") || !backoff.Sleep(ctx, s.cc.Settle) {
		return Step{}, false
	}
	win.Cut() // the draining and settling part is not judged
	tcpu0 := s.targetCPU()
	busy, cpu, ok := s.hold(ctx, p)
	if !ok {
		return Step{}, false
	}
	ws := win.Cut()
	st := s.judge(idx, kind, r, &ws)
	st.DrainSeconds, st.Drained, st.WorkersBusy, st.CPU = took.Seconds(), drained, busy, cpu
	st.TargetMemoryBytes, st.TargetCPUCores = s.targetFigures(tcpu0)
	if !st.Pass {
		st.Bottleneck, st.Diagnosis = diagnose(&st, s.baseService(&st), p.Workers(), s.cc.SLOErrors)
	}
	s.mu.Lock()
	s.res.Steps = append(s.res.Steps, st)
	s.mu.Unlock()
	s.notify()
	verdict := "pass"
	if !st.Pass {
		verdict = "fail: " + strings.Join(st.Reasons, "; ")
	}
	if st.Bottleneck != "" {
		verdict += " (bottleneck: " + st.Bottleneck + ": " + st.Diagnosis + ")"
	}
	fd := pace.FormatSeconds
	s.log.Info(fmt.Sprintf("capacity step %d (%s) at %s/s, after a drain of %s: achieved %s/s, p99 %s, service p99 %s, errors %.3g%%, dropped %.3g%%: %s",
		idx, kind, pace.FormatRate(r), fd(st.DrainSeconds), pace.FormatRate(st.Achieved), fd(st.Response.P99), fd(st.Service.P99), 100*st.ErrorRatio, 100*st.DropRatio, verdict))
	return st, true
}

// cpuReading is one reading of the target's CPU time.
type cpuReading struct {
	seconds float64
	at      time.Time
	ok      bool
}

// targetCPU reads the searched workload's target's CPU time.
func (s *searcher) targetCPU() cpuReading {
	if s.figures == nil {
		return cpuReading{}
	}
	v, at, ok := s.figures.CPU(s.name)
	return cpuReading{v, at, ok}
}

// targetFigures reads, at the end of a step's judged part, the target's
// memory (its latest reading) and the cores it used since cpu0 (at the
// part's start): whether the knee is where the target runs out of memory
// or CPU. Each is nil when not known: no watch, no reading, or no new
// CPU reading within the part. The cores are the CPU time between two
// readings over the time between those readings, not over the part's
// length: the watch reads every WATCH_INTERVAL, so readings lag the part's
// bounds and the part's length would misstate the rate.
func (s *searcher) targetFigures(cpu0 cpuReading) (memory, cores *float64) {
	if s.figures == nil {
		return nil, nil
	}
	if v, _, ok := s.figures.Memory(s.name); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
		memory = &v
	}
	cpu1 := s.targetCPU()
	if cpu0.ok && cpu1.ok && cpu1.at.After(cpu0.at) && cpu1.seconds >= cpu0.seconds {
		c := (cpu1.seconds - cpu0.seconds) / cpu1.at.Sub(cpu0.at).Seconds()
		if !math.IsNaN(c) && !math.IsInf(c, 0) {
			cores = &c
		}
	}
	return memory, cores
}

// judge measures a step's window against the SLO.
func (s *searcher) judge(idx int, kind string, r float64, ws *daemon.WindowStats) Step {
	target := r
	if n := s.w.Config().Shard.Count; n > 1 {
		target /= float64(n) // this process runs its share
	}
	return judgeWindow(s.cc, idx, kind, r, target, s.w.BatchSize(), ws)
}

// judgeWindow judges a step's window ws at rate r (target: this process's
// share of it), batch units a batch, against the SLO.
func judgeWindow(cc config.CapacityConfig, idx int, kind string, r, target float64, batch int, ws *daemon.WindowStats) Step {
	st := Step{Index: idx, Kind: kind, Target: r, Seconds: ws.Seconds}
	c := &ws.Counts
	st.Response, st.Service, st.Dispatch = ws.Latency[0], ws.Latency[1], ws.Latency[2]
	if st.Seconds > 0 {
		st.Achieved = float64(c.Acked) / st.Seconds
	}
	if n := c.Acked + c.Failed; n > 0 {
		st.ErrorRatio = float64(c.Failed) / float64(n)
	}
	if c.Scheduled > 0 {
		st.DropRatio = float64(c.Dropped) / float64(c.Scheduled)
	}
	fd := pace.FormatSeconds
	if st.Response.Count == 0 {
		st.Reasons = append(st.Reasons, "nothing was acknowledged")
	} else if p99 := time.Duration(st.Response.P99 * 1e9); p99 > cc.SLOP99 {
		st.Reasons = append(st.Reasons, fmt.Sprintf("p99 %s > SLO_P99 %s", fd(st.Response.P99), fd(cc.SLOP99.Seconds())))
	}
	if st.ErrorRatio > float64(cc.SLOErrors) {
		st.Reasons = append(st.Reasons, fmt.Sprintf("errors %.3g%% > SLO_ERRORS %.3g%%", 100*st.ErrorRatio, 100*float64(cc.SLOErrors)))
	}
	// Units are scheduled and acknowledged a whole batch at a time: as the
	// batches' due times fall, the judged part holds one batch more or
	// less than the rate × its length (at 1,500/s in batches of 1,000, a
	// 3 s part holds 4 or 5 batches, 1,333 or 1,667/s), so one batch is
	// not counted against the step.
	if slack := float64(max(batch, 1)); st.Seconds <= 0 || float64(c.Acked)+slack < minAchieved*target*st.Seconds {
		st.Reasons = append(st.Reasons, fmt.Sprintf("achieved %s/s < 95%% of %s/s", pace.FormatRate(st.Achieved), pace.FormatRate(target)))
	}
	if st.DropRatio > maxDropped {
		st.Reasons = append(st.Reasons, fmt.Sprintf("dropped %.3g%% > 0.1%%", 100*st.DropRatio))
	}
	st.Pass = len(st.Reasons) == 0
	return st
}

// baseService is the target's median service time when it keeps up: the
// lowest median of the passing steps, or, before any passed, the fastest
// answer of any step, cur included. Medians, not p99s: a busy machine
// moves the tail of a flat service time by more than 2×, hardly its
// median, while a target's own queue raises the median too.
func (s *searcher) baseService(cur *Step) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := math.Inf(1)
	for _, st := range s.res.Steps {
		if st.Pass && st.Service.Count > 0 {
			base = math.Min(base, st.Service.P50)
		}
	}
	if math.IsInf(base, 1) {
		for _, st := range append(s.res.Steps, *cur) {
			if st.Service.Count > 0 {
				base = math.Min(base, st.Service.Min)
			}
		}
	}
	if math.IsInf(base, 1) {
		return 0
	}
	return base
}

func (s *searcher) setKnee(r float64) {
	s.mu.Lock()
	s.res.Knee, s.res.Found = r, true
	s.mu.Unlock()
}

func (s *searcher) finish(knee float64, found, stopped bool, outcome string) {
	s.mu.Lock()
	s.res.Knee, s.res.Found, s.res.Stopped, s.res.Outcome = knee, found, stopped, outcome
	s.step = 0
	s.mu.Unlock()
	s.notify()
	s.log.Info("capacity: " + outcome)
}

// notify hands the search so far to onUpdate.
func (s *searcher) notify() {
	if s.onUpdate != nil {
		s.onUpdate(s.result())
	}
}

// result returns the search so far.
func (s *searcher) result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.Steps = append([]Step(nil), s.res.Steps...)
	return r
}

// live is what /metrics and /status show: the step running (0 = none)
// and its rate, and the knee so far.
func (s *searcher) live() (step int, target, knee float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step, s.target, s.res.Knee
}

// Run runs the workloads of cfg and searches the capacity of the one
// cfg.Capacity names: its rate is stepped up from START, each step judged
// against the SLO, the boundary refined, and the knee reported. The other
// workloads hold their rate. It returns the run's summary and the search
// (partial when ctx ends first, e.g. on SIGINT).
//
// environ is the environment the configuration was read from; the report
// lists its settings, secrets hidden. cfg is not changed: the search runs
// on a copy whose searched workload runs open loop from START.
func Run(ctx context.Context, cfg *config.Config, environ map[string]string, d daemon.Deps, o Options) (*report.Summary, *Result, error) {
	if err := cfg.CheckCapacity(d.Plugins); err != nil {
		return nil, nil, err
	}
	s := newSearcher(cfg, environ, d, o.OnUpdate)
	s.figures = o.Target
	return s.runEngine(ctx, cfg, d, o.Metrics)
}

// Options are what a capacity search reports to besides its result.
type Options struct {
	// Metrics, when set, gets soakd_capacity_step and
	// soakd_capacity_knee_rate for the search's duration: the registry
	// the run's /metrics serves.
	Metrics prometheus.Registerer
	// OnUpdate, when set, gets the search after each step and at its
	// end (the live console).
	OnUpdate func(Result)
	// Target, when set, reads the target's own figures (the target
	// watch): each step then says the target's memory and the cores it
	// used, whether the knee is memory- or CPU-bound.
	Target TargetFigures
}

// TargetFigures is what the search reads of a workload's target: its
// memory, the latest reading, and its CPU time (user + system, seconds,
// a counter); ok is false while there is no reading. The target watch
// (targetwatch.Watcher) is one.
type TargetFigures interface {
	Memory(workload string) (v float64, at time.Time, ok bool)
	CPU(workload string) (seconds float64, at time.Time, ok bool)
}

func newSearcher(cfg *config.Config, environ map[string]string, d daemon.Deps, onUpdate func(Result)) *searcher {
	name := cfg.Capacity.Searched(cfg).Name
	return &searcher{cc: cfg.Capacity, name: name, max: cfg.MaxRate, onUpdate: onUpdate,
		log: d.Logger.With(zap.String("workload", name)), done: make(chan struct{}), run: make(chan *daemon.Phase, 1),
		res: Result{Workload: name, Settings: cfg.Capacity, Environment: sysinfo.Collect(d.Version),
			Run: config.SettingValues(cfg, environ), Shards: cfg.Capacity.Searched(cfg).Shard.Count}}
}

// runEngine runs the engine on a copy of cfg made for the search, with s
// among its observers, and returns the summary and the search.
func (s *searcher) runEngine(ctx context.Context, cfg *config.Config, d daemon.Deps, reg prometheus.Registerer) (*report.Summary, *Result, error) {
	if reg != nil {
		c := &collector{s: s}
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("capacity metrics: %w", err)
		}
		defer reg.Unregister(c)
	}
	d.Observers = append(slices.Clone(d.Observers), s)
	sum, err := daemon.Run(ctx, forSearch(cfg), d)
	s.mu.Lock()
	started := s.w != nil
	s.mu.Unlock()
	if !started {
		return sum, nil, err
	}
	<-s.done
	res := s.result()
	if res.Outcome == "" {
		res.Outcome, res.Stopped = "stopped before the search ended", true
	}
	return sum, &res, err
}

// forSearch copies cfg with the searched workload running open loop from
// START until the search stops it: its own RATE and DURATION do not apply.
func forSearch(cfg *config.Config) *config.Config {
	run := *cfg
	run.Workload = slices.Clone(cfg.Workload)
	cc := cfg.Capacity
	for i, w := range run.Workload {
		if w != cc.Searched(cfg) {
			continue
		}
		wc := *w
		wc.Rate = pace.ConstantRate(cc.Start)
		wc.Duration = 0
		if b, builtin := wc.BuiltinBatchFor(pace.Rate{Profile: pace.Constant(cc.Max)}); builtin {
			wc.BatchSize = b
		}
		run.Workload[i] = &wc
	}
	return &run
}

// serverVersions asks each workload's target for its version where the
// sink can.
func serverVersions(ws []*daemon.Handle) map[string]string {
	out := map[string]string{}
	for _, w := range ws {
		if cfg := w.Config(); cfg.BuiltinTarget() != "" {
			// A report passed on without its log must not read as a
			// database's capacity.
			out[w.Name()] = cfg.BuiltinTarget() + ": the knee is soakd's own with it, not a database's"
			continue
		}
		v, ok := w.Sink().(sinks.Versioner)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if s, err := v.ServerVersion(ctx); err == nil && s != "" {
			out[w.Name()] = s
		}
		cancel()
	}
	return out
}

// collector exports the search as soakd_capacity_step and
// soakd_capacity_knee_rate.
type collector struct{ s *searcher }

var (
	stepDesc = prometheus.NewDesc("soakd_capacity_step",
		"soakd capacity: the index of the step running (1, 2, ...), 0 when none is.", []string{"workload"}, nil)
	kneeDesc = prometheus.NewDesc("soakd_capacity_knee_rate",
		"soakd capacity: the highest rate that passed the SLO so far, 0 while none has.", []string{"workload"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- stepDesc; ch <- kneeDesc }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	started := c.s.w != nil
	c.s.mu.Unlock()
	if !started {
		return
	}
	step, _, knee := c.s.live()
	ch <- prometheus.MustNewConstMetric(stepDesc, prometheus.GaugeValue, float64(step), c.s.name)
	ch <- prometheus.MustNewConstMetric(kneeDesc, prometheus.GaugeValue, knee, c.s.name)
}
