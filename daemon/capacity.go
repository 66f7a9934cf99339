package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// CapacityConfig holds the capacity search's settings (SOAKD_CAPACITY_*,
// flags --capacity-*), read by soakd capacity.
type CapacityConfig struct {
	Workload  string        `env:"WORKLOAD" help:"soakd capacity: the workload whose rate is searched (the others hold their RATE); default: the first of SOAKD_WORKLOADS"`
	Start     float64       `env:"START" envDefault:"1000" help:"soakd capacity: the first step's rate (units/s, the total over shards)"`
	Step      Growth        `env:"STEP" envDefault:"x1.5" help:"soakd capacity: how the rate grows per step: +N adds N units/s, xF multiplies by F"`
	Hold      time.Duration `env:"HOLD" envDefault:"30s" help:"soakd capacity: how long each step is judged"`
	Settle    time.Duration `env:"SETTLE" envDefault:"5s" help:"soakd capacity: time after each rate change that is not judged (the queue and the target adjust)"`
	Warmup    time.Duration `env:"WARMUP" envDefault:"10s" help:"soakd capacity: time at START before the first step (not judged)"`
	Max       float64       `env:"MAX" envDefault:"10000000" help:"soakd capacity: the highest rate tried (SOAKD_MAX_RATE caps it too)"`
	SLOP99    time.Duration `env:"SLO_P99" envDefault:"100ms" help:"soakd capacity: a step passes when its response p99 (from the intended start) is at most this"`
	SLOOp     string        `env:"SLO_OP" help:"soakd capacity: judge only this op's p99 (write, read, update, insert, scan, rmw); default: every op together"`
	SLOErrors Ratio         `env:"SLO_ERRORS" envDefault:"0.1%" help:"soakd capacity: the highest share of failed units a passing step may have"`
	Refine    int           `env:"REFINE" envDefault:"3" help:"soakd capacity: steps of bisection between the last passing and the first failing rate"`
	Out       string        `env:"OUT" envDefault:"capacity" help:"soakd capacity: report files are OUT.md, OUT.csv, OUT.json and the charts OUT-rate and OUT-latency (.svg, .png)"`
}

// A step passes when, besides the SLO, at least minAchieved of its target
// rate was acknowledged and at most maxDropped of its scheduled units was
// dropped.
const (
	minAchieved = 0.95
	maxDropped  = 0.001
)

// Growth is how the capacity search raises the rate: by an amount (+N) or
// a factor (xF).
type Growth struct {
	Add, Factor float64
	text        string
}

// UnmarshalText parses +N or xF (also *F).
func (g *Growth) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	var err error
	switch {
	case strings.HasPrefix(s, "+"):
		g.Add, err = strconv.ParseFloat(s[1:], 64)
		if err != nil || !(g.Add > 0) || g.Add > pace.MaxRate {
			return fmt.Errorf("%q: want +N with 0 < N <= %g units/s, or xF with 1 < F <= 1000", s, pace.MaxRate)
		}
	case strings.HasPrefix(s, "x"), strings.HasPrefix(s, "*"):
		g.Factor, err = strconv.ParseFloat(s[1:], 64)
		if err != nil || !(g.Factor > 1) || g.Factor > 1000 {
			return fmt.Errorf("%q: want xF with 1 < F <= 1000, or +N with 0 < N <= %g", s, pace.MaxRate)
		}
	default:
		return fmt.Errorf("%q: want +N (add N units/s per step) or xF (multiply by F)", s)
	}
	g.text = s
	return nil
}

// MarshalText returns the setting as written.
func (g Growth) MarshalText() ([]byte, error) { return []byte(g.text), nil }

func (g Growth) next(r float64) float64 {
	if g.Factor > 0 {
		return r * g.Factor
	}
	return r + g.Add
}

// Ratio is a share written as 0.1% or 0.001.
type Ratio float64

// UnmarshalText parses a percentage or a fraction in [0, 1].
func (r *Ratio) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if strings.HasSuffix(s, "%") {
		f /= 100
	}
	if err != nil || f < 0 || f > 1 || math.IsNaN(f) {
		return fmt.Errorf("%q: want a share like 0.1%% or 0.001", s)
	}
	*r = Ratio(f)
	return nil
}

// MarshalText writes the share as a fraction.
func (r Ratio) MarshalText() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(r), 'g', -1, 64), nil
}

// CheckCapacity reports every problem of the capacity settings (soakd
// capacity), each naming its variable.
func (c *Config) CheckCapacity() error { return errors.Join(c.Capacity.validate(c)...) }

// validate checks the capacity settings against the configuration.
func (cc *CapacityConfig) validate(c *Config) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(EnvPrefix+"CAPACITY_"+key, format, args...))
	}
	w := cc.workload(c)
	if w == nil {
		bad("WORKLOAD", "%q is not one of SOAKD_WORKLOADS (%s)", cc.Workload, strings.Join(c.Workloads, ", "))
	}
	if !(cc.Start > 0) || cc.Start > pace.MaxRate {
		bad("START", "%g: want a rate above 0", cc.Start)
	}
	if cc.Max < cc.Start {
		bad("MAX", "%g is below CAPACITY_START %g", cc.Max, cc.Start)
	}
	if c.MaxRate > 0 && cc.Start > c.MaxRate {
		bad("START", "%g is above SOAKD_MAX_RATE %g", cc.Start, c.MaxRate)
	}
	if cc.Hold < time.Second {
		bad("HOLD", "%v: want at least 1s", cc.Hold)
	}
	if cc.Settle < 0 || cc.Warmup < 0 {
		bad("SETTLE", "SETTLE and WARMUP must not be negative")
	}
	if cc.SLOP99 <= 0 {
		bad("SLO_P99", "must be positive (e.g. 50ms)")
	}
	if cc.Refine < 0 || cc.Refine > 20 {
		bad("REFINE", "%d is out of range [0, 20]", cc.Refine)
	}
	if cc.SLOOp != "" && w != nil {
		if opSlot(cc.SLOOp) < 0 {
			bad("SLO_OP", "%q is not an op (write, read, update, insert, scan, rmw)", cc.SLOOp)
		}
	}
	if cc.Out == "" {
		bad("OUT", "must name where the report goes")
	}
	return errs
}

// workload returns the searched workload's configuration, or nil.
func (cc *CapacityConfig) workload(c *Config) *Workload {
	for _, w := range c.Workload {
		if cc.Workload == "" || w.Name == cc.Workload {
			return w
		}
	}
	return nil
}

// CapacityStep is one step of the search.
type CapacityStep struct {
	Index  int     `json:"index"`
	Kind   string  `json:"kind"` // step, recheck or refine
	Target float64 `json:"target_rate"`
	// Achieved is the rate acknowledged during the judged part.
	Achieved   float64   `json:"achieved_rate"`
	Seconds    float64   `json:"seconds"`
	Response   Quantiles `json:"response_seconds"` // of the op judged (SLO_OP), or of every op
	Service    Quantiles `json:"service_seconds"`
	ErrorRatio float64   `json:"error_ratio"`   // failed units / (acknowledged + failed)
	DropRatio  float64   `json:"dropped_ratio"` // dropped / scheduled
	// Dispatch is the delay from each batch's intended start to its send
	// (every op): soakd's own queue.
	Dispatch Quantiles `json:"dispatch_seconds"`
	// DrainSeconds is how long the backlog left by the step before took to
	// drain, the rate paused, before this step's SETTLE began: each step
	// starts clean, or a step just under the knee would fail on the queue
	// of the failing step before it.
	DrainSeconds float64 `json:"drain_seconds"`
	// Drained is false when the backlog had not drained within the limit
	// (MAX_LAG + TIMEOUT + HOLD) and the step started anyway.
	Drained bool `json:"drained"`
	// WorkersBusy is the share of the judged part during which every
	// worker was inside a write; CPU soakd's CPU time over the same part,
	// as a share of the cores it may use (GOMAXPROCS); -1 when unknown.
	WorkersBusy float64 `json:"workers_busy_share"`
	CPU         float64 `json:"cpu_share"`
	Pass        bool    `json:"pass"`
	// Reasons say which SLO each failing step broke.
	Reasons []string `json:"reasons,omitempty"`
	// Bottleneck names what limited a failing step: "target" (its service
	// latency rose), "workers" (soakd's workers were all busy while the
	// service latency stayed flat) or "soakd" (soakd sent late with idle
	// workers, or its CPU was saturated); Diagnosis says it in words.
	Bottleneck string `json:"bottleneck,omitempty"`
	Diagnosis  string `json:"diagnosis,omitempty"`
}

// What limited a failing capacity step (CapacityStep.Bottleneck).
const (
	limitTarget  = "target"
	limitWorkers = "workers"
	limitSoakd   = "soakd"
)

// CapacityResult is the outcome of a capacity search.
type CapacityResult struct {
	Workload    string       `json:"workload"`
	Environment sysinfo.Info `json:"environment"`
	// Servers are the targets' versions, by workload, where a sink can
	// ask (SELECT version(), INFO server, InfluxDB's ping).
	Servers  map[string]string `json:"servers,omitempty"`
	Settings CapacityConfig    `json:"settings"`
	// Run lists every setting of the run (secrets hidden) as VAR=value.
	Run   []string       `json:"run_settings"`
	Steps []CapacityStep `json:"steps"`
	// Knee is the highest rate that passed; 0 with Found false when none
	// did.
	Knee  float64 `json:"knee_rate"`
	Found bool    `json:"found"`
	// LimitedBy is the bottleneck of the lowest failing step above the
	// knee. Unless it is "target", the knee is soakd's own limit, not the
	// target's capacity, and Advice names the setting to raise.
	LimitedBy string `json:"limited_by,omitempty"`
	Advice    string `json:"advice,omitempty"`
	// Outcome says how the search ended, in words.
	Outcome string `json:"outcome"`
}

// TargetCapacity reports whether the knee measures the target: found, and
// not bounded by soakd's workers or soakd itself.
func (r *CapacityResult) TargetCapacity() bool {
	return r.Found && (r.LimitedBy == "" || r.LimitedBy == limitTarget)
}

// errCapacityDone is the cause of the stop when the search has its
// answer.
var errCapacityDone = errors.New("capacity search done")

// capacitySearch drives one workload's rate through the search while the
// engine runs it.
type capacitySearch struct {
	cc  CapacityConfig
	cfg *Config
	w   *workload
	wls []*workload
	// onUpdate, when set, gets the search after every step (Deps.OnCapacity).
	onUpdate func(CapacityResult)
	log      *zap.Logger
	opt      int // op slot judged, or allOps
	hist     *hdrhistogram.Histogram

	mu     sync.Mutex
	res    CapacityResult
	step   int     // index of the step running (soakd_capacity_step)
	target float64 // its rate
}

// limit is the highest rate the search may ask for.
func (s *capacitySearch) limit() float64 {
	l := s.cc.Max
	if s.cfg.MaxRate > 0 {
		l = math.Min(l, s.cfg.MaxRate)
	}
	return l
}

// run performs the search, then stops the engine (stop).
func (s *capacitySearch) run(ctx context.Context, stop func(error)) {
	defer stop(errCapacityDone)
	ps := s.waitRunPhase(ctx)
	if ps == nil {
		s.finish(0, false, "stopped before the run phase began")
		return
	}
	servers := serverVersions(s.wls)
	s.mu.Lock()
	s.res.Servers = servers
	s.mu.Unlock()
	keys := []distKey{{op: s.opt}, {op: s.opt, service: true}, {op: allOps, dispatch: true}}
	rec := ps.startWindow(keys...)
	defer ps.stopWindow(rec)
	if !s.setRate(ctx, s.cc.Start) || !sleepCtx(ctx, s.cc.Warmup) {
		s.finish(0, false, "stopped during the warm-up")
		return
	}
	knee, found, outcome := search(s.cc, s.limit(), func(r float64, kind string) (bool, bool) {
		st, ok := s.runStep(ctx, ps, rec, r, kind)
		if ok && st.Pass {
			s.setKnee(r)
		}
		return st.Pass, ok
	})
	s.mu.Lock()
	s.res.LimitedBy, s.res.Advice = s.limitedBy(knee, found)
	s.mu.Unlock()
	s.finish(knee, found, outcome)
}

// limitedBy names what bounds the knee: the bottleneck of the lowest
// failing step above it (the last one judged at that rate), and, when
// that is soakd, what to change. Holds s.mu.
func (s *capacitySearch) limitedBy(knee float64, found bool) (string, string) {
	var at *CapacityStep
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
	wc := s.w.cfg
	units := "PIPELINE"
	size := wc.Pipeline
	if s.w.kind == sources.Series {
		units, size = "BATCH_SIZE", wc.BatchSize
	}
	p := Prefix(wc.Name)
	switch at.Bottleneck {
	case limitWorkers:
		return limitWorkers, fmt.Sprintf("soakd's workers, not the target, limited the search (%s); the knee is soakd's limit, "+
			"not the target's capacity: raise %sWORKERS (now %d) or send more units per round trip with %s%s (now %d), and search again",
			at.Diagnosis, p, wc.Workers, p, units, size)
	case limitSoakd:
		return limitSoakd, fmt.Sprintf("soakd itself, not the target, limited the search (%s); the knee is soakd's limit, "+
			"not the target's capacity: give soakd more CPU, raise %s%s (now %d) so it sends fewer, larger round trips, "+
			"or split the rate over processes with %sSHARD", at.Diagnosis, p, units, size, p)
	}
	return at.Bottleneck, ""
}

// search steps the rate up from START until a step fails twice in a row
// (one failure among passing steps is judged again: it may be noise), then
// bisects REFINE times between the last passing and the failing rate.
// step runs one step and says whether it passed, and false as its second
// result when the search must stop (the run is ending). It returns the
// highest rate that passed.
func search(cc CapacityConfig, limit float64, step func(rate float64, kind string) (pass, ok bool)) (knee float64, found bool, outcome string) {
	const stopped = "stopped before the search ended"
	var firstFail float64
	for r := cc.Start; ; {
		pass, ok := step(r, "step")
		if ok && !pass {
			pass, ok = step(r, "recheck")
		}
		if !ok {
			return knee, found, stopped
		}
		if !pass {
			firstFail = r
			break
		}
		knee, found = r, true
		if r >= limit {
			return knee, true, fmt.Sprintf("every step passed up to the highest rate allowed (%s/s): the knee is at least that", pace.FormatRate(r))
		}
		r = math.Min(cc.Step.next(r), limit)
	}
	if !found {
		return 0, false, fmt.Sprintf("the first step (%s/s) failed twice: the target does not meet the SLO even at CAPACITY_START", pace.FormatRate(cc.Start))
	}
	lo, hi := knee, firstFail
	for i := 0; i < cc.Refine; i++ {
		mid := (lo + hi) / 2
		pass, ok := step(mid, "refine")
		if !ok {
			return lo, true, "stopped while refining"
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true, fmt.Sprintf("the knee is between %s/s (passed) and %s/s (failed)", pace.FormatRate(lo), pace.FormatRate(hi))
}

// waitRunPhase waits until the workload's run phase begins (after a
// prepare and a load phase).
func (s *capacitySearch) waitRunPhase(ctx context.Context) *phaseStats {
	for {
		if ps := s.w.cur.Load(); ps != nil && ps.name == "run" {
			return ps
		}
		if s.w.finished.Load() || !sleepCtx(ctx, 50*time.Millisecond) {
			return nil
		}
	}
}

func (s *capacitySearch) setRate(ctx context.Context, r float64) bool {
	rate := pace.ConstantRate(r)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.w.control(cctx, controlReq{rate: &rate}); err != nil {
		s.log.Warn("capacity: cannot set the rate", zap.Float64("rate", r), zap.Error(err))
		return false
	}
	return true
}

// control asks the searched workload's scheduler for c.
func (s *capacitySearch) control(ctx context.Context, c controlReq, what string) bool {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.w.control(cctx, c); err != nil {
		s.log.Warn("capacity: cannot "+what, zap.Error(err))
		return false
	}
	return true
}

// drain pauses the schedule until every unit released so far is
// acknowledged, failed or dropped: the queue of the step before (soakd's
// and the target's) is gone before the next step starts. It gives up
// after MAX_LAG + TIMEOUT + HOLD (a stuck target), saying so.
func (s *capacitySearch) drain(ctx context.Context, ps *phaseStats) (took time.Duration, drained, ok bool) {
	t0 := time.Now()
	if !s.control(ctx, controlReq{pause: true}, "pause to drain") {
		return 0, false, false
	}
	limit := s.w.cfg.MaxLag + s.w.cfg.Timeout + s.cc.Hold
	for {
		c := ps.snapshot()
		if c.inflight() <= 0 {
			return time.Since(t0), true, true
		}
		if time.Since(t0) > limit {
			s.log.Warn("capacity: the backlog did not drain; the step starts anyway", zap.Int64("in_flight", c.inflight()),
				zap.Duration("waited", time.Since(t0)))
			return time.Since(t0), false, true
		}
		if !sleepCtx(ctx, 2*time.Millisecond) {
			return 0, false, false
		}
	}
}

// hold waits HOLD, sampling how often every worker is inside a write,
// and measures soakd's CPU share over it (-1 when unknown).
func (s *capacitySearch) hold(ctx context.Context, ps *phaseStats) (busy, cpu float64, ok bool) {
	cpu0, _ := osProc()
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
			if allWriting(ps) {
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
	if cpu1, _ := osProc(); !math.IsNaN(cpu0) && !math.IsNaN(cpu1) {
		if wall := time.Since(t0).Seconds(); wall > 0 {
			cpu = (cpu1 - cpu0) / wall / float64(runtime.GOMAXPROCS(0))
		}
	}
	return busy, cpu, true
}

// allWriting reports whether every worker of ps is inside a write now.
func allWriting(ps *phaseStats) bool {
	for _, t := range ps.workers {
		if !t.writing.Load() {
			return false
		}
	}
	return len(ps.workers) > 0
}

// runStep drains the backlog of the step before, holds rate r for
// SETTLE, then HOLD, and judges the HOLD part.
func (s *capacitySearch) runStep(ctx context.Context, ps *phaseStats, rec *windowRecorder, r float64, kind string) (CapacityStep, bool) {
	s.mu.Lock()
	idx := len(s.res.Steps) + 1
	s.step, s.target = idx, r
	s.mu.Unlock()
	took, drained, ok := s.drain(ctx, ps)
	if !ok || !s.setRate(ctx, r) || !s.control(ctx, controlReq{resume: true}, "resume after draining") || !sleepCtx(ctx, s.cc.Settle) {
		return CapacityStep{}, false
	}
	ps.cutWindows(nil, rec) // the draining and settling part is not judged
	busy, cpu, ok := s.hold(ctx, ps)
	if !ok {
		return CapacityStep{}, false
	}
	ws := ps.cutWindows(nil, rec)[0]
	st := s.judge(idx, kind, r, &ws)
	st.DrainSeconds, st.Drained, st.WorkersBusy, st.CPU = took.Seconds(), drained, busy, cpu
	if !st.Pass {
		st.Bottleneck, st.Diagnosis = diagnose(&st, s.baseService(&st), len(ps.workers), s.cc.SLOErrors)
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
	s.log.Info(fmt.Sprintf("capacity step %d (%s) at %s/s, after a drain of %s: achieved %s/s, p99 %s, service p99 %s, errors %.3g%%, dropped %.3g%%: %s",
		idx, kind, pace.FormatRate(r), fmtDur(st.DrainSeconds), pace.FormatRate(st.Achieved), fmtDur(st.Response.P99), fmtDur(st.Service.P99), 100*st.ErrorRatio, 100*st.DropRatio, verdict))
	return st, true
}

// judge measures a step's window against the SLO.
func (s *capacitySearch) judge(idx int, kind string, r float64, ws *windowStats) CapacityStep {
	st := CapacityStep{Index: idx, Kind: kind, Target: r, Seconds: ws.seconds()}
	c := &ws.c
	st.Response = s.quantiles(ws.lat[0])
	st.Service = s.quantiles(ws.lat[1])
	st.Dispatch = s.quantiles(ws.lat[2])
	if st.Seconds > 0 {
		st.Achieved = float64(c.acked) / st.Seconds
	}
	if n := c.acked + c.failed; n > 0 {
		st.ErrorRatio = float64(c.failed) / float64(n)
	}
	if c.scheduled > 0 {
		st.DropRatio = float64(c.dropped) / float64(c.scheduled)
	}
	target := r
	if n := s.w.cfg.Shard.Count; n > 1 {
		target /= float64(n) // this process runs its share
	}
	if st.Response.Count == 0 {
		st.Reasons = append(st.Reasons, "nothing was acknowledged")
	} else if p99 := time.Duration(st.Response.P99 * 1e9); p99 > s.cc.SLOP99 {
		st.Reasons = append(st.Reasons, fmt.Sprintf("p99 %s > SLO_P99 %s", fmtDur(st.Response.P99), fmtDur(s.cc.SLOP99.Seconds())))
	}
	if st.ErrorRatio > float64(s.cc.SLOErrors) {
		st.Reasons = append(st.Reasons, fmt.Sprintf("errors %.3g%% > SLO_ERRORS %.3g%%", 100*st.ErrorRatio, 100*float64(s.cc.SLOErrors)))
	}
	if st.Achieved < minAchieved*target {
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
func (s *capacitySearch) baseService(cur *CapacityStep) float64 {
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

// Thresholds of diagnose: a median service time this many times the
// baseline is the target slowing down; workers all busy for this share of
// a step are the workers' limit; soakd using this share of its cores is
// CPU-bound.
const (
	serviceRise = 2.0
	busyLimit   = 0.5
	cpuLimit    = 0.9
)

// diagnose names the bottleneck of a failing step, in this order: the
// target when its service latency rose (or it failed requests), soakd
// when its CPU was saturated, the workers when every one was busy while
// the service latency stayed flat, and soakd otherwise (it sent late with
// workers idle: its scheduler or runtime fell behind).
func diagnose(st *CapacityStep, baseService float64, workers int, sloErrors Ratio) (string, string) {
	svc := st.Service.P99
	switch {
	case st.ErrorRatio > 0 && st.Response.Count == 0:
		return limitTarget, "the target failed every request"
	case st.Service.Count > 0 && baseService > 0 && st.Service.P50 > serviceRise*baseService:
		return limitTarget, fmt.Sprintf("the target's median service time rose from %s to %s (p99 %s)",
			fmtDur(baseService), fmtDur(st.Service.P50), fmtDur(svc))
	case st.ErrorRatio > float64(sloErrors):
		return limitTarget, fmt.Sprintf("the target failed %.3g%% of units", 100*st.ErrorRatio)
	case st.CPU >= cpuLimit:
		return limitSoakd, fmt.Sprintf("soakd used %.0f%% of its CPU; service p99 stayed %s", 100*st.CPU, fmtDur(svc))
	case st.WorkersBusy >= busyLimit:
		return limitWorkers, fmt.Sprintf("all %d workers were busy %.0f%% of the time and dispatch p99 was %s, while service p99 stayed %s",
			workers, 100*st.WorkersBusy, fmtDur(st.Dispatch.P99), fmtDur(svc))
	}
	return limitSoakd, fmt.Sprintf("soakd sent late (dispatch p99 %s) while its workers were idle %.0f%% of the time and service p99 stayed %s",
		fmtDur(st.Dispatch.P99), 100*(1-st.WorkersBusy), fmtDur(svc))
}

func (s *capacitySearch) quantiles(d sparseDist) Quantiles {
	if s.hist == nil {
		s.hist = hdrhistogram.New(hdrLowest, hdrHighest, hdrDigits)
	}
	s.hist.Reset()
	d.addTo(s.hist)
	return quantiles(s.hist)
}

func (s *capacitySearch) setKnee(r float64) {
	s.mu.Lock()
	s.res.Knee, s.res.Found = r, true
	s.mu.Unlock()
}

func (s *capacitySearch) finish(knee float64, found bool, outcome string) {
	s.mu.Lock()
	s.res.Knee, s.res.Found, s.res.Outcome = knee, found, outcome
	s.step = 0
	s.mu.Unlock()
	s.notify()
	s.log.Info("capacity: " + outcome)
}

// notify hands the search so far to Deps.OnCapacity.
func (s *capacitySearch) notify() {
	if s.onUpdate != nil {
		s.onUpdate(s.result())
	}
}

// result returns the search so far.
func (s *capacitySearch) result() CapacityResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.Steps = append([]CapacityStep(nil), s.res.Steps...)
	return r
}

// live is what /metrics and /status show: the step running (0 = none)
// and its rate, and the knee so far.
func (s *capacitySearch) live() (step int, target, knee float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step, s.target, s.res.Knee
}

// Capacity runs the workloads of cfg and searches the capacity of the one
// cc names: its rate is stepped up from START, each step judged against
// the SLO, the boundary refined, and the knee reported. The other
// workloads hold their rate. It returns the run's summary and the search
// (partial when ctx ends first, e.g. on SIGINT).
//
// environ is the environment the configuration was read from; the report
// lists its settings, secrets hidden.
func Capacity(ctx context.Context, cfg *Config, environ map[string]string, d Deps) (*Summary, *CapacityResult, error) {
	cc := cfg.Capacity
	if err := errors.Join(cc.validate(cfg)...); err != nil {
		return nil, nil, err
	}
	wc := cc.workload(cfg)
	// The searched workload runs open loop from START until the search
	// stops it; its own RATE and DURATION do not apply.
	saved := *wc
	defer func() { *wc = saved }()
	wc.Rate = pace.ConstantRate(cc.Start)
	wc.Duration = 0
	if wc.builtinBatch {
		wc.BatchSize = builtinBatch(pace.Rate{Profile: pace.Constant(cc.Max)})
	}
	opt := opSlot(cc.SLOOp) // allOps when unset
	d.checkSource = func(w *Workload, kind sources.Kind, src sources.Source) error {
		if w.Name != wc.Name || cc.SLOOp == "" {
			return nil
		}
		var names []string
		for _, op := range issuedOps(kind, src) {
			names = append(names, opName(op))
		}
		if !slices.Contains(names, cc.SLOOp) {
			return cfgErr(EnvPrefix+"CAPACITY_SLO_OP", "%q: workload %s (source %s) never issues it, so no step could be judged (its ops: %s)",
				cc.SLOOp, w.Name, w.Source, strings.Join(names, ", "))
		}
		return nil
	}
	var s *capacitySearch
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	done := make(chan struct{})
	d.started = chainStarted(d.started, func(wls []*workload, _ http.Handler) {
		for _, w := range wls {
			if w.name == wc.Name {
				s = &capacitySearch{cc: cc, cfg: cfg, w: w, wls: wls, log: d.Logger.With(zap.String("workload", w.name)), opt: opt,
					onUpdate: d.OnCapacity,
					res: CapacityResult{Workload: w.name, Settings: cc, Environment: sysinfo.Collect(d.Version),
						Run: settingValues(cfg, environ)}}
				w.capacity = s
			}
		}
		go func() { defer close(done); s.run(runCtx, stop) }()
	})
	sum, err := Run(runCtx, cfg, d)
	if s == nil {
		return sum, nil, err
	}
	stop(nil)
	<-done
	res := s.result()
	if res.Outcome == "" {
		res.Outcome = "stopped before the search ended"
	}
	return sum, &res, err
}

// issuedOps are the op slots a workload's source issues: those it
// reports (opsFor), narrowed to the ops of its mix when the source says
// (a KV workload's proportions).
func issuedOps(kind sources.Kind, src sources.Source) []int {
	ops := opsFor(kind, src)
	m, ok := src.(interface{ Ops() []sources.Op })
	if !ok || kind != sources.KV {
		return ops
	}
	mix := m.Ops()
	return slices.DeleteFunc(ops, func(op int) bool { return !slices.Contains(mix, sources.Op(op)) })
}

// serverVersions asks each workload's target for its version where the
// sink can.
func serverVersions(wls []*workload) map[string]string {
	out := map[string]string{}
	for _, w := range wls {
		v, ok := w.sink.(sinks.Versioner)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := v.ServerVersion(ctx)
		cancel()
		if err == nil && s != "" {
			out[w.name] = s
		}
	}
	return out
}
