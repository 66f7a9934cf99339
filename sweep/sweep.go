// Package sweep runs one workload closed loop over a grid of settings
// (soakd sweep), each point through the engine as a run of its own, and
// reports each point's throughput, the best, and a Universal
// Scalability Law fit along WORKERS.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/opener"
	"github.com/soakd/soakd/pace"
	runreport "github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Point is one point of the sweep, over its runs: a WORKERS × BATCH_SIZE
// (PIPELINE) setting, or one value of each axis of SOAKD_SWEEP_GRID.
type Point struct {
	// AxisValues are the point's value of each axis of the grid (a URL's
	// password redacted); none in a WORKERS × BATCH sweep.
	AxisValues []string `json:"axis_values,omitempty"`
	// Workers and Batch are the point's WORKERS and BATCH_SIZE (PIPELINE),
	// whether swept or not.
	Workers int       `json:"workers"`
	Batch   int       `json:"batch"`
	Rates   []float64 `json:"units_per_second"` // one per run
	Min     float64   `json:"min"`
	Median  float64   `json:"median"`
	Max     float64   `json:"max"`
	// ValueRates are values (points: rows × values per row) per second,
	// one per run, for series sources; Value* their min, median and max.
	ValueRates  []float64 `json:"values_per_second,omitempty"`
	ValueMin    float64   `json:"values_min,omitempty"`
	ValueMedian float64   `json:"values_median,omitempty"`
	ValueMax    float64   `json:"values_max,omitempty"`
	P99         float64   `json:"p99_seconds"` // median over runs of the response p99 (every op)
	Failed      int64     `json:"failed_units"`
	// Runs are each run's counts, as its summary gives them.
	Runs []RunCounts `json:"runs,omitempty"`
	Best bool        `json:"best,omitempty"`
	// Falls is set when the median is below the one with fewer workers
	// at the same batch size: more workers made it slower.
	Falls bool `json:"throughput_falls,omitempty"`
	// TargetMemoryBytes is the peak of the target's memory readings
	// taken during the point's runs, and TargetCPUCores the cores the
	// target used over them: the CPU seconds between the point's first
	// and last readings over the time between them. Either is left out
	// when the target watch is off or read too little (a point shorter
	// than WATCH_INTERVAL has one reading at most: no CPU figure).
	TargetMemoryBytes *float64 `json:"target_memory_bytes,omitempty"`
	TargetCPUCores    *float64 `json:"target_cpu_cores,omitempty"`
	// FailedShare is the share of the point's scheduled units that
	// failed, over its runs; LeftOut is set when it is above
	// MaxFailedShare: the point is then neither the best, nor compared
	// with its neighbours, nor fitted, as its rate measures failing
	// fast as much as writing.
	FailedShare float64 `json:"failed_share,omitempty"`
	LeftOut     bool    `json:"left_out,omitempty"`
	// ThresholdsPassed is how many of the point's runs passed every one
	// of the workload's THRESHOLDS; nil when it has none.
	// FailedThresholds are those that failed in any run, each once, as
	// the run summary gives them (p99<50ms, errors<5%@1m!).
	ThresholdsPassed *int     `json:"thresholds_passed_runs,omitempty"`
	FailedThresholds []string `json:"failed_thresholds,omitempty"`
	// CutShortRuns is how many of the point's runs a failed threshold
	// marked !, or a stop of the sweep (SIGINT, SIGTERM, SOAKD_DURATION),
	// ended before their end (their CutShort says which):
	// their rates are over the time they ran, so the point is left out
	// (LeftOut) as one that failed too much is.
	CutShortRuns int `json:"cut_short_runs,omitempty"`
	// BestPassing is set on the point ranked highest of those that
	// passed every threshold in each of their runs (and are not left
	// out), when that is not the best point: the best failed them.
	BestPassing bool `json:"best_passing_thresholds,omitempty"`

	// at are the point's value indexes on the grid's axes: two values
	// may show alike, their indexes never are.
	at []int
}

// MaxFailedShare is the share of a point's scheduled units that may fail
// before the point is left out of the best, the falls and the fit.
const MaxFailedShare = 0.01

// RunCounts are one run's counts: scheduled = units + failed + dropped +
// in flight, as in the summary.
type RunCounts struct {
	Seconds   float64 `json:"seconds"`
	Units     int64   `json:"units"`
	Values    int64   `json:"values,omitempty"`
	Scheduled int64   `json:"scheduled_units"`
	Failed    int64   `json:"failed_units"`
	Dropped   int64   `json:"dropped_units"`
	InFlight  int64   `json:"in_flight_units"`
	P99       float64 `json:"p99_seconds"`
	// LastError is the run's last write error, "class: text" (secrets
	// scrubbed, as in the summary), when units failed.
	LastError string `json:"last_error,omitempty"`
	// FailedThresholds are the run's thresholds that failed, as its
	// summary gives them.
	FailedThresholds []string `json:"failed_thresholds,omitempty"`
	// CutShort says what stopped the run before its end, as its summary's
	// stopped_by does: a failed threshold marked ! ("threshold
	// p99<50ms! of workload w failed"), or a signal (then also the
	// result's CutShort); "" for a run that ran its course.
	CutShort string `json:"cut_short,omitempty"`
}

// Axis is one axis of a grid sweep: a setting of the workload and the
// values it took, in order (a URL's password redacted).
type Axis struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
	// Numeric is set when every value is a number: the charts place them
	// on a numeric axis; the others (DATA_TYPE, TARGET) are categories.
	Numeric bool `json:"numeric"`
}

// USL is the Universal Scalability Law fitted to throughput against
// workers (at the best batch size, or the best values of the grid's
// other axes): X(N) = λN / (1 + σ(N−1) + κN(N−1)).
type USL struct {
	Batch int `json:"batch"`
	// Where names the other axes' values of a grid sweep's fit, NAME=value.
	Where    []string  `json:"where,omitempty"`
	Lambda   float64   `json:"lambda"`       // throughput of one worker without contention
	Sigma    float64   `json:"sigma"`        // contention
	Kappa    float64   `json:"kappa"`        // coherency (crosstalk)
	R2       float64   `json:"r_squared"`    // of the fitted throughputs
	PeakN    float64   `json:"peak_workers"` // where X(N) peaks; +Inf without coherency
	PeakX    float64   `json:"peak_units_per_second"`
	Poor     bool      `json:"poor_fit"`
	Note     string    `json:"note"`
	Workers  []int     `json:"workers"`
	Measured []float64 `json:"measured"`
}

// At is the fitted throughput with n workers.
func (u USL) At(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// Result is a sweep's outcome.
type Result struct {
	Workload    string             `json:"workload"`
	Unit        string             `json:"unit"`       // rows or ops
	BatchName   string             `json:"batch_name"` // BATCH_SIZE or PIPELINE
	Environment sysinfo.Info       `json:"environment"`
	Settings    config.SweepConfig `json:"settings"`
	Run         []string           `json:"run_settings"`
	// Axes are SOAKD_SWEEP_GRID's, in order, the last varying fastest;
	// none in a WORKERS × BATCH sweep.
	Axes []Axis `json:"axes,omitempty"`
	// Values says whether the points count values (series sources).
	Values bool    `json:"values,omitempty"`
	Points []Point `json:"points"`
	// NotReset are the targets (URLs redacted) SOAKD_SWEEP_RESET asked to
	// reset whose sink cannot empty what soakd wrote: their points start
	// where the ones before left them.
	NotReset []string `json:"not_reset,omitempty"`
	USL      *USL     `json:"usl,omitempty"`
	Outcome  string   `json:"outcome"`
	// CutShort names the run a stop (SIGINT/SIGTERM) ended early, which
	// the report keeps with its point: the point, the run and how long
	// it ran; "" when none was.
	CutShort string `json:"cut_short,omitempty"`
	// BuiltinTarget says that no TARGET was set: every point ran against
	// the built-in target in soakd's own process, so its figures are
	// soakd's own with it, not a database's.
	BuiltinTarget string `json:"builtin_target,omitempty"`
}

// Grid says whether r is a sweep over SOAKD_SWEEP_GRID.
func (r *Result) Grid() bool { return len(r.Axes) > 0 }

// planned is one point to run: its configuration and the workload's.
type planned struct {
	values []string
	at     []int
	cfg    *config.Config
	wc     *config.Workload
}

// Sweep runs the workload SOAKD_SWEEP_WORKLOAD names, alone, closed loop
// (RATE=max), once per run for every point, REPEATS times: every
// WORKERS × BATCH_SIZE (PIPELINE), or every point of SOAKD_SWEEP_GRID. It
// reports the throughput of each, the best, where more workers made it
// slower, and a Universal Scalability Law fit along WORKERS. Every point
// is built and validated before the first runs. It stops early, with
// what it has, when ctx ends.
func Run(ctx context.Context, cfg *config.Config, environ map[string]string, d daemon.Deps, o Options) (*Result, error) {
	if err := cfg.CheckSweep(); err != nil {
		return nil, err
	}
	sc := cfg.Sweep
	if cfg.Duration > 0 {
		// SOAKD_DURATION bounds the process, as in a run or a capacity
		// search: each point's own run is bounded by SWEEP_DURATION.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cfg.Duration, errDuration)
		defer cancel()
	}
	orig := sc.Swept(cfg)
	e := d.Plugins.Sources.Lookup(orig.Source)
	kv := e != nil && e.Kind != sources.Series // KV and queries: PIPELINE units per batch
	res := &Result{Workload: orig.Name, Unit: "rows", BatchName: "BATCH_SIZE", Environment: sysinfo.Collect(d.Version),
		Settings: sc, Run: config.SettingValues(cfg, environ)}
	res.Settings.Grid = nil // the axes say it, with the URLs' passwords redacted
	if kv {
		res.Unit, res.BatchName = runreport.UnitName(e.Kind), "PIPELINE"
	}
	res.Values = !kv
	plan, err := res.plan(cfg, environ, d.Plugins, kv)
	if err != nil {
		return nil, err
	}
	if b := plan[0].wc.BuiltinTarget(); b != "" && !slices.ContainsFunc(res.Axes, func(a Axis) bool { return a.Name == "TARGET" }) {
		res.BuiltinTarget = b + ": the figures are soakd's own with it, not a database's"
	}
	if err := checkShapes(ctx, res, plan, d.Plugins, sc.Reset); err != nil {
		return nil, err
	}
	log := d.Logger.With(zap.String("workload", orig.Name))
	if sc.Reset && (e == nil || e.Kind != sources.Queries) {
		if res.NotReset, err = notReset(ctx, plan, d.Plugins); err != nil {
			return nil, err
		}
		for _, t := range res.NotReset {
			// Each run's own warning goes to a silent logger: say it
			// once, before the first run.
			log.Warn(fmt.Sprintf("%sSWEEP_RESET: the target %s cannot be reset (its sink cannot empty what soakd wrote): its points start where the ones before left it",
				config.EnvPrefix, t))
		}
	}
	total := len(plan) * sc.Repeats
	lo, hi, all := planTime(plan, sc.Repeats)
	per := fmt.Sprintf("%s per point (DURATION %s × REPEATS %d", hi, hi/time.Duration(sc.Repeats), sc.Repeats)
	if lo != hi {
		// A DURATION axis, or a RATE one's own duration: points differ.
		per = fmt.Sprintf("%s to %s per point (each point's DURATION × REPEATS %d", lo, hi, sc.Repeats)
	}
	load := ""
	if src, err := orig.NewSource(); err == nil {
		if _, ok := src.(sources.Preloader); ok {
			load = ", plus a load phase where the target lacks the records"
		}
	}
	log.Info(fmt.Sprintf("sweep: %d points (%s), %s each: at most %s%s); about %s in all",
		len(plan), res.order(), runs(sc.Repeats), per, load, all),
		zap.Strings("points", res.labels(plan)))
	t0 := time.Now()
	n := 0
	var done time.Duration // the planned time of the runs made
	for i, pl := range plan {
		if ctx.Err() != nil {
			break
		}
		wc := *pl.wc
		pt := Point{AxisValues: pl.values, Workers: wc.Workers, Batch: wc.BatchSize, at: pl.at}
		if kv {
			pt.Batch = wc.Pipeline
		}
		label := res.label(pt)
		if sc.Reset && res.Grid() && !kv {
			// Before the point's first run, whose reset only empties
			// tables: one made for another shape goes.
			if err := reshape(ctx, d.Plugins, &wc); err != nil {
				return res.failed(fmt.Errorf("sweep point %s: %w", label, err))
			}
		}
		var p99s []float64
		tw := watchPoint(o.Target, orig.Name)
		for r := 0; r < sc.Repeats && ctx.Err() == nil; r++ {
			n++
			one := *pl.cfg
			wc := wc
			one.Workload, one.Listen, one.Duration = []*config.Workload{&wc}, config.ListenOff, 0
			dd := d
			dd.Logger = notReadyOnly(d.Logger, label, r+1)
			sum, err := daemon.Run(ctx, &one, dd)
			if err != nil {
				tw.stop()
				return res.failed(fmt.Errorf("sweep point %s: %w", label, err))
			}
			ws := sum.Workload(wc.Name, "run")
			cut := ""
			if ws != nil && ctx.Err() != nil && ws.StoppedBy == "signal" {
				res.CutShort = fmt.Sprintf("point %s, run %d of %d, after %s of at most %s", label, r+1, sc.Repeats,
					pace.FormatSeconds(ws.Seconds), runTime(pl))
				cut = ws.StoppedBy
				// Its rate is over the part it ran, as a run a threshold
				// cut short: the point is left out of the best (it was
				// marked best on a run stopped half-way).
				pt.CutShortRuns++
			}
			if ws == nil || ws.Seconds <= 0 || ws.Failure != nil {
				reason := "no run phase"
				switch {
				case ws != nil && ws.Failure != nil:
					reason = ws.Failure.Reason
				case ws != nil && !ws.Prepared:
					// Stopped while waiting for a target that never came
					// up (START_TIMEOUT 0 waits until then): say so, and
					// why, not that the point had no run phase.
					reason = "stopped while waiting for the target, which never became ready"
					if e := ws.LastError; e != nil {
						reason += " (last error: " + e.Text + ")"
					}
				}
				tw.stop()
				return res.failed(fmt.Errorf("sweep point %s: %s", label, reason))
			}
			rate := ws.UnitRate
			pt.Rates = append(pt.Rates, rate)
			if res.Values {
				pt.ValueRates = append(pt.ValueRates, ws.ValueRate)
			}
			pt.Failed += ws.Failed
			var p99 float64
			for _, o := range ws.Ops {
				p99 = max(p99, o.Response.P99)
			}
			p99s = append(p99s, p99)
			rc := RunCounts{Seconds: ws.Seconds, Units: ws.Units, Values: ws.Values, Scheduled: ws.Scheduled,
				Failed: ws.Failed, Dropped: ws.Dropped, InFlight: ws.InFlight, P99: p99}
			failed := ""
			if ws.Failed > 0 && ws.LastError != nil {
				// The runs' own logs are silent: say why here.
				rc.LastError = ws.LastError.Class + ": " + ws.LastError.Text
				failed = fmt.Sprintf(", %d failed (last error %s)", ws.Failed, rc.LastError)
			}
			if len(wc.Checks) > 0 {
				rc.FailedThresholds = ws.FailedThresholds()
				if t := ws.StoppedByThreshold(); t != "" {
					// Not a whole run: the point says so and is left out.
					cut = ws.StoppedBy
					pt.CutShortRuns++
					failed += fmt.Sprintf(", cut short by %s after %s of at most %s", t, pace.FormatSeconds(ws.Seconds), runTime(pl))
				}
				if len(rc.FailedThresholds) > 0 {
					failed += ", thresholds failed: " + strings.Join(rc.FailedThresholds, ", ")
				}
				pt.judged(rc.FailedThresholds)
			}
			rc.CutShort = cut
			pt.Runs = append(pt.Runs, rc)
			// The time left is the planned time of the runs left, at the
			// pace the runs so far kept to theirs: setup, load phases and
			// finite data sets included.
			done += runTime(pl)
			elapsed := time.Since(t0)
			left := timeLeft(elapsed, done, all-done)
			log.Info(fmt.Sprintf("sweep %d/%d (point %d/%d, run %d/%d): %s: %.0f %s/s, p99 %s%s; %s elapsed, about %s left",
				n, total, i+1, len(plan), r+1, sc.Repeats, label, rate, res.Unit, pace.FormatSeconds(p99), failed,
				elapsed.Round(time.Second), left.Round(time.Second)))
		}
		pt.TargetMemoryBytes, pt.TargetCPUCores = tw.stop()
		if len(pt.Rates) == 0 {
			break
		}
		pt.Min, pt.Median, pt.Max = minMedMax(pt.Rates)
		if res.Values {
			pt.ValueMin, pt.ValueMedian, pt.ValueMax = minMedMax(pt.ValueRates)
		}
		_, pt.P99, _ = minMedMax(p99s)
		pt.failedShare()
		res.Points = append(res.Points, pt)
	}
	outcome := "done"
	if ctx.Err() != nil {
		outcome = "stopped before every point ran"
		if context.Cause(ctx) == errDuration {
			outcome += fmt.Sprintf(" (%sDURATION=%s passed)", config.EnvPrefix, cfg.Duration)
		}
	}
	res.finish(outcome)
	return res, nil
}

// finish ranks the points run and fits the USL to them, and says how the
// sweep ended.
func (r *Result) finish(outcome string) {
	r.mark()
	r.USL = r.fitUSL()
	r.Outcome = outcome
}

// failed ends a sweep that cannot go on: the points run so far are
// ranked as in a whole sweep, and the report says it failed and why.
// (It read as a whole sweep of fewer points, its JSON outcome empty.)
func (r *Result) failed(err error) (*Result, error) {
	r.finish("failed: " + err.Error())
	return r, err
}

// errDuration ends a sweep at SOAKD_DURATION.
var errDuration = errors.New("SOAKD_DURATION passed")

// plan builds every point to run, in order: WORKERS × BATCH_SIZE
// (PIPELINE), batch varying slowest, or SOAKD_SWEEP_GRID's points, each
// loaded and validated as a run's configuration is (config.SweepPoints).
// Each runs closed loop for at most SOAKD_SWEEP_DURATION, unless RATE or
// DURATION is an axis.
func (r *Result) plan(cfg *config.Config, environ map[string]string, p *config.Plugins, kv bool) ([]planned, error) {
	sc := cfg.Sweep
	orig := sc.Swept(cfg)
	// Every point is bounded, whatever the source says of its data set: a
	// source can be Sized yet endless (seq's Total is 0 then), and a
	// finite set may take longer than the user gave a point.
	bound := func(wc *config.Workload, axes map[string]bool) {
		if !axes["RATE"] {
			wc.Rate = pace.Rate{Max: true}
		}
		if !axes["DURATION"] || wc.Duration <= 0 {
			// A DURATION axis sets the point's own length, but 0 (no
			// limit) would run an endless source forever: every run
			// lasts at most SOAKD_SWEEP_DURATION then.
			wc.Duration = sc.Duration
		}
		wc.ResetFirst = sc.Reset
	}
	var out []planned
	if len(sc.Grid) == 0 {
		for _, b := range sc.Batch {
			for _, w := range sc.Workers {
				wc := *orig
				wc.Workers = w
				if kv {
					wc.Pipeline = b
				} else {
					wc.BatchSize = b
				}
				bound(&wc, nil)
				out = append(out, planned{cfg: cfg, wc: &wc})
			}
		}
		return out, nil
	}
	pts, err := cfg.SweepPoints(environ, p)
	if err != nil {
		return nil, err
	}
	axes := map[string]bool{}
	for i, a := range sc.Grid {
		axes[a.Name] = true
		// By index: values shown alike stay two (config marks them #1, #2).
		ax := Axis{Name: a.Name, Numeric: true, Values: make([]string, len(a.Values))}
		for _, pt := range pts {
			ax.Values[pt.At[i]] = pt.Values[i]
		}
		for _, v := range ax.Values {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				ax.Numeric = false
			}
		}
		r.Axes = append(r.Axes, ax)
	}
	for _, pt := range pts {
		wc := *pt.Workload
		bound(&wc, axes)
		out = append(out, planned{values: pt.Values, at: pt.At, cfg: pt.Config, wc: &wc})
	}
	return out, nil
}

// order says in which order the points run.
func (r *Result) order() string {
	if !r.Grid() {
		return fmt.Sprintf("%s slowest, then WORKERS", r.BatchName)
	}
	names := make([]string, len(r.Axes))
	for i, a := range r.Axes {
		names[i] = fmt.Sprintf("%s (%d)", a.Name, len(a.Values))
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names, " × ") + ", the first varying slowest, the last fastest"
}

// labels names the points to run, in order: the first hundred, then how
// many more.
func (r *Result) labels(plan []planned) []string {
	var out []string
	for i, pl := range plan {
		if i == 100 {
			out = append(out, fmt.Sprintf("and %d more", len(plan)-i))
			break
		}
		p := Point{AxisValues: pl.values, Workers: pl.wc.Workers, Batch: pl.wc.BatchSize}
		if r.BatchName == "PIPELINE" {
			p.Batch = pl.wc.Pipeline
		}
		out = append(out, r.label(p))
	}
	return out
}

// label names a point in logs and errors: its axes' values, or its
// workers and batch size.
func (r *Result) label(p Point) string {
	if !r.Grid() {
		return fmt.Sprintf("workers %d, %s %d", p.Workers, r.BatchName, p.Batch)
	}
	s := make([]string, len(r.Axes))
	for i, a := range r.Axes {
		s[i] = a.Name + "=" + p.AxisValues[i]
	}
	return strings.Join(s, " ")
}

// Options are what a sweep reads besides its configuration.
type Options struct {
	// Target, when set, reads the target's own figures (the target
	// watch, which must also be among the Deps' observers to read
	// anything): each point then says the target's memory and the
	// cores it used.
	Target TargetFigures
}

// TargetFigures is what the sweep reads of a workload's target: its
// memory, the latest reading, and its CPU time (user + system, seconds,
// a counter); ok is false while there is no reading. The target watch
// (targetwatch.Watcher) is one.
type TargetFigures interface {
	Memory(workload string) (v float64, at time.Time, ok bool)
	CPU(workload string) (seconds float64, at time.Time, ok bool)
}

// pointWatch follows the target's readings over one point. The watch
// reads on its own schedule (WATCH_INTERVAL) and keeps only the latest
// reading, so the point polls it more often than that to see each one;
// readings from before the point (the last of the point before stays
// visible until the next run opens) are not the point's.
type pointWatch struct {
	tf       TargetFigures
	name     string
	since    time.Time
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	mem      float64
	memOK    bool
	cpu0     float64
	cpu0At   time.Time
	cpu1     float64
	cpu1At   time.Time
	cpuCount int
}

// pollEvery is how often a point looks for a new reading: well under
// the shortest WATCH_INTERVAL worth setting, and cheap (a map look-up).
const pollEvery = 200 * time.Millisecond

// watchPoint starts following the target's readings; nil without tf.
func watchPoint(tf TargetFigures, name string) *pointWatch {
	if tf == nil {
		return nil
	}
	pw := &pointWatch{tf: tf, name: name, since: time.Now(), done: make(chan struct{})}
	pw.wg.Add(1)
	go func() {
		defer pw.wg.Done()
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pw.poll()
			case <-pw.done:
				return
			}
		}
	}()
	return pw
}

// poll takes in the watch's latest readings if they are the point's.
func (pw *pointWatch) poll() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if v, at, ok := pw.tf.Memory(pw.name); ok && !at.Before(pw.since) && finite(v) && (!pw.memOK || v > pw.mem) {
		pw.mem, pw.memOK = v, true
	}
	v, at, ok := pw.tf.CPU(pw.name)
	if !ok || at.Before(pw.since) || !finite(v) {
		return
	}
	switch {
	case pw.cpuCount == 0:
		pw.cpu0, pw.cpu0At, pw.cpuCount = v, at, 1
	case at.After(pw.cpu1At) && at.After(pw.cpu0At):
		pw.cpu1, pw.cpu1At, pw.cpuCount = v, at, 2
	}
}

// stop ends the following and gives the point's figures, nil those not
// known: never 0 for a figure the watch did not read.
func (pw *pointWatch) stop() (memory, cores *float64) {
	if pw == nil {
		return nil, nil
	}
	close(pw.done)
	pw.wg.Wait()
	pw.poll() // the reading the last run ended with
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.memOK {
		m := pw.mem
		memory = &m
	}
	// Over less than a second (a point shorter than that: the watch's
	// reading at a run's end may follow its first by milliseconds), a
	// counter's few ticks are no rate.
	if pw.cpuCount == 2 && pw.cpu1 >= pw.cpu0 && pw.cpu1At.Sub(pw.cpu0At) >= time.Second {
		c := (pw.cpu1 - pw.cpu0) / pw.cpu1At.Sub(pw.cpu0At).Seconds()
		if finite(c) {
			cores = &c
		}
	}
	return memory, cores
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// mark flags the best point and those where more workers were slower:
// at the same batch size, or, in a grid sweep over WORKERS, at the same
// values of the other axes. Both compare the ranked figure (Rank); a
// point left out for its failures is neither, nor compared with.
func (r *Result) mark() {
	wi := r.axis("WORKERS")
	rank := r.Rank()
	best := -1
	for i := range r.Points {
		p := &r.Points[i]
		if p.LeftOut {
			continue
		}
		if best < 0 || rank(*p) > rank(r.Points[best]) {
			best = i
		}
		if r.Grid() && wi < 0 {
			continue
		}
		for j := range r.Points {
			q := &r.Points[j]
			same := q.Batch == p.Batch
			if r.Grid() {
				same = sameExcept(r.index(*p), r.index(*q), wi)
			}
			if same && !q.LeftOut && q.Workers < p.Workers && rank(*p) < rank(*q) {
				p.Falls = true
			}
		}
	}
	if best >= 0 {
		r.Points[best].Best = true
	}
	passing := -1
	for i, p := range r.Points {
		if !p.LeftOut && p.ThresholdsMet() && (passing < 0 || rank(p) > rank(r.Points[passing])) {
			passing = i
		}
	}
	if passing >= 0 && passing != best {
		r.Points[passing].BestPassing = true
	}
}

// Rank is the figure points are ranked and fitted by: values/s in a grid
// sweep of a series source, where an axis (COLUMNS, SOURCE) may change
// the values a row holds and rows/s would favour the narrowest rows;
// units/s otherwise (a WORKERS × BATCH sweep's rows all hold as many
// values: both rank alike).
func (r *Result) Rank() func(Point) float64 {
	if r.Values && r.Grid() {
		return func(p Point) float64 { return p.ValueMedian }
	}
	return func(p Point) float64 { return p.Median }
}

// RankUnit names Rank's figure: values, or the units.
func (r *Result) RankUnit() string {
	if r.Values && r.Grid() {
		return "values"
	}
	return r.Unit
}

// failedShare sets the share of the point's scheduled units that failed
// and whether the point is left out: for that share, or for runs a
// threshold marked ! cut short, whose rates are not a whole run's.
func (p *Point) failedShare() {
	var failed, scheduled int64
	for _, c := range p.Runs {
		failed += c.Failed
		scheduled += c.Scheduled
	}
	if scheduled > 0 {
		p.FailedShare = float64(failed) / float64(scheduled)
	}
	p.LeftOut = p.FailedShare > MaxFailedShare || p.CutShortRuns > 0
}

// judged counts a run of the point judged against its THRESHOLDS, of
// which failed failed.
func (p *Point) judged(failed []string) {
	if p.ThresholdsPassed == nil {
		p.ThresholdsPassed = new(int)
	}
	if len(failed) == 0 {
		*p.ThresholdsPassed++
	}
	for _, t := range failed {
		if !slices.Contains(p.FailedThresholds, t) {
			p.FailedThresholds = append(p.FailedThresholds, t)
		}
	}
}

// ThresholdsMet says whether the point passed every threshold in each of
// its runs; false too for a point without THRESHOLDS.
func (p *Point) ThresholdsMet() bool {
	return p.ThresholdsPassed != nil && *p.ThresholdsPassed == len(p.Rates)
}

// Judged says whether any point was judged against THRESHOLDS.
func (r *Result) Judged() bool {
	return slices.ContainsFunc(r.Points, func(p Point) bool { return p.ThresholdsPassed != nil })
}

// ThresholdsMet counts the points judged against THRESHOLDS and those
// that passed every one in each of their runs.
func (r *Result) ThresholdsMet() (met, judged int) {
	for i := range r.Points {
		if r.Points[i].ThresholdsPassed != nil {
			judged++
			if r.Points[i].ThresholdsMet() {
				met++
			}
		}
	}
	return met, judged
}

// index is the point's value index on each axis: as planned, or, for a
// point read without them, where its values are on the axes.
func (r *Result) index(p Point) []int {
	if p.at != nil {
		return p.at
	}
	at := make([]int, len(p.AxisValues))
	for i, v := range p.AxisValues {
		if i < len(r.Axes) {
			at[i] = slices.Index(r.Axes[i].Values, v)
		}
	}
	return at
}

// planTime is the shortest and the longest planned time of a point (its
// runs' durations) and that of the whole plan.
func planTime(plan []planned, repeats int) (lo, hi, all time.Duration) {
	for i, pl := range plan {
		d := runTime(pl) * time.Duration(repeats)
		if i == 0 || d < lo {
			lo = d
		}
		hi = max(hi, d)
		all += d
	}
	return lo, hi, all
}

// runTime is the longest a run of the point lasts: its own DURATION
// (SOAKD_SWEEP_DURATION unless DURATION is an axis), or the end of its
// rate profile when a RATE axis gives one that ends sooner.
func runTime(pl planned) time.Duration {
	d := pl.wc.Duration
	if prof := pl.wc.Rate.Profile; !pl.wc.Rate.Max && prof != nil {
		if end := prof.End(); end > 0 && (d <= 0 || end < d) {
			d = end
		}
	}
	return d
}

// timeLeft is the planned time left at the pace the runs so far kept:
// elapsed over the planned time of the runs made.
func timeLeft(elapsed, done, left time.Duration) time.Duration {
	if done <= 0 {
		return left
	}
	return time.Duration(float64(left) * float64(elapsed) / float64(done))
}

// axis is the index of the grid's axis name, or -1.
func (r *Result) axis(name string) int {
	return slices.IndexFunc(r.Axes, func(a Axis) bool { return a.Name == name })
}

// sameExcept says whether a and b hold the same indexes but at skip.
func sameExcept(a, b []int, skip int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if i != skip && a[i] != b[i] {
			return false
		}
	}
	return true
}

// fitUSL fits the USL along WORKERS: at the best batch size, or, in a
// grid sweep, at the best point's values of the other axes, when WORKERS
// is an axis of at least three values (none otherwise).
func (r *Result) fitUSL() *USL {
	if !r.Grid() {
		return fitUSL(r.Points, r.Rank())
	}
	wi := r.axis("WORKERS")
	if wi < 0 || len(r.Axes[wi].Values) < 3 {
		return nil
	}
	b := slices.IndexFunc(r.Points, func(p Point) bool { return p.Best })
	if b < 0 {
		return nil
	}
	best := r.Points[b]
	var line []Point
	for _, p := range r.Points {
		if sameExcept(r.index(p), r.index(best), wi) {
			line = append(line, p)
		}
	}
	u := fitUSL(line, r.Rank())
	for i, a := range r.Axes {
		if i != wi {
			u.Where = append(u.Where, a.Name+"="+best.AxisValues[i])
		}
	}
	return u
}

// reshaper is a sink that can drop its own tables when they were made
// for another shape (the PostgreSQL sink's ReshapeTables).
type reshaper interface {
	ReshapeTables(ctx context.Context) error
}

// reshape drops the point's target's tables made for another shape,
// where its sink can, so that the run's Prepare makes them for this one.
func reshape(ctx context.Context, p *config.Plugins, wc *config.Workload) error {
	op, err := opener.Open(ctx, p, wc, 1, 1, nil)
	if err != nil {
		return err
	}
	defer func() { _ = op.Sink.Close(context.WithoutCancel(ctx)) }()
	if r, ok := op.Sink.(reshaper); ok {
		if err := r.ReshapeTables(ctx); err != nil {
			return fmt.Errorf("cannot make the target's tables for this point: %s", wc.Scrubber()(err.Error()))
		}
	}
	return nil
}

// notReset names the plan's targets, URLs redacted, whose sink cannot
// empty what soakd wrote (no sinks.Resetter): an InfluxDB's, a file's.
// The built-in target is made anew for each run and needs no reset.
func notReset(ctx context.Context, plan []planned, p *config.Plugins) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, pl := range plan {
		if pl.wc.Builtin || seen[pl.wc.Target] {
			continue
		}
		seen[pl.wc.Target] = true
		op, err := opener.Open(ctx, p, pl.wc, 1, 1, nil)
		if err != nil {
			return nil, err
		}
		_, ok := op.Sink.(sinks.Resetter)
		_ = op.Sink.Close(context.WithoutCancel(ctx))
		if !ok {
			out = append(out, sinks.Redact(pl.wc.Target))
		}
	}
	return out, nil
}

// kvDataSet are the settings of a KV source that make its data set:
// records of another DATA_TYPE, FIELDS or FIELD_LENGTH left by a point
// would be read by the next, whose load phase (LOAD=auto) sees its
// records present and loads none.
var kvDataSet = []string{"DATA_TYPE", "KEY_PREFIX", "RECORDS", "FIELDS", "FIELD_LENGTH"}

// shape describes the tables a workload's source writes: their names,
// tags and fields with their kinds; for a KV source, its data set.
func shape(wc *config.Workload) string {
	src, err := wc.NewSource()
	if err != nil {
		return ""
	}
	var b strings.Builder
	if _, ok := src.(sources.Shaped); ok && wc.SourceSettings != nil {
		for _, set := range settings.Of(wc.SourceSettings.Fields(), "") {
			if slices.Contains(kvDataSet, set.Key) {
				fmt.Fprintf(&b, "%s=%v ", set.Key, reflect.ValueOf(wc.SourceSettings.Fields()).Elem().FieldByName(set.Field).Interface())
			}
		}
	}
	for _, sc := range src.Schemas() {
		fmt.Fprintf(&b, "%s(%s;", sc.Measurement, strings.Join(sc.TagKeys, ","))
		for _, f := range sc.Fields {
			fmt.Fprintf(&b, "%s:%d,", f.Name, f.Kind)
		}
		b.WriteString(") ")
	}
	return b.String()
}

// checkShapes refuses, before anything runs, a grid whose points write
// tables of different shapes (COLUMNS, COLUMN_TYPE, SOURCE) into one
// target whose sink keeps tables of one shape (PostgreSQL), unless
// SOAKD_SWEEP_RESET drops them between points: a point would otherwise
// write into a table made for another (refused when a column is
// missing, silently wider rows when one is left over). Likewise KV
// points of different data sets (DATA_TYPE, FIELD_LENGTH, ...) into one
// target that can be reset (Redis): a point would read the records of
// the one before.
func checkShapes(ctx context.Context, r *Result, plan []planned, p *config.Plugins, reset bool) error {
	if !r.Grid() || reset {
		return nil
	}
	first := map[string]int{} // target → first point
	for i, pl := range plan {
		if pl.wc.Builtin {
			continue // in-process, made anew for each run
		}
		t := pl.wc.Target
		j, seen := first[t]
		if !seen {
			first[t] = i
			continue
		}
		if shape(plan[j].wc) == shape(pl.wc) {
			continue
		}
		op, err := opener.Open(ctx, p, pl.wc, 1, 1, nil)
		if err != nil {
			return err
		}
		_, tables := op.Sink.(reshaper)
		_, resets := op.Sink.(sinks.Resetter)
		_ = op.Sink.Close(context.WithoutCancel(ctx))
		a, b := r.label(Point{AxisValues: plan[j].values}), r.label(Point{AxisValues: pl.values})
		switch {
		case tables:
			return settings.Errorf(config.EnvPrefix+"SWEEP_RESET", "the points %s and %s write tables of different shapes into the same target, which keeps a table's shape: set %sSWEEP_RESET=true, which drops soakd's tables made for another shape before each point (and empties the others)",
				a, b, config.EnvPrefix)
		case resets && r.BatchName == "PIPELINE":
			return settings.Errorf(config.EnvPrefix+"SWEEP_RESET", "the points %s and %s read different data sets (%s) from the same target, where a point would read the records the one before loaded: set %sSWEEP_RESET=true, which deletes soakd's keys before each run, so that each point loads its own",
				a, b, strings.Join(kvDataSet, ", "), config.EnvPrefix)
		}
		first[t] = i
	}
	return nil
}

func minMedMax(v []float64) (lo, med, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], med, s[len(s)-1]
}

// fitUSL fits the USL to the medians (figure's) against workers at the
// batch size of the best point, leaving out the points that failed too
// much. N/X(N) = (1 + σ(N−1) + κN(N−1))/λ is linear in 1,
// N−1 and N(N−1), so ordinary least squares gives 1/λ, σ/λ and κ/λ.
func fitUSL(points []Point, figure func(Point) float64) *USL {
	var batch int
	for _, p := range points {
		if p.Best {
			batch = p.Batch
		}
	}
	u := &USL{Batch: batch}
	for _, p := range points {
		if p.Batch == batch && figure(p) > 0 && !p.LeftOut {
			u.Workers = append(u.Workers, p.Workers)
			u.Measured = append(u.Measured, figure(p))
		}
	}
	if len(u.Workers) < 3 {
		u.Poor, u.Note = true, "fewer than 3 worker counts at this batch size: no fit"
		return u
	}
	// Normal equations of y = a + b(N−1) + c·N(N−1), y = N/X.
	var m [3][4]float64
	for i, n := range u.Workers {
		N := float64(n)
		row := [3]float64{1, N - 1, N * (N - 1)}
		y := N / u.Measured[i]
		for r := 0; r < 3; r++ {
			for c := 0; c < 3; c++ {
				m[r][c] += row[r] * row[c]
			}
			m[r][3] += row[r] * y
		}
	}
	coef, ok := solve3(m)
	if !ok || !(coef[0] > 0) {
		u.Poor, u.Note = true, "the measurements do not determine a fit"
		return u
	}
	u.Lambda, u.Sigma, u.Kappa = 1/coef[0], coef[1]/coef[0], coef[2]/coef[0]
	if u.Sigma < 0 || u.Kappa < 0 {
		u.Poor = true
		u.Note = fmt.Sprintf("a negative coefficient (σ %.3g, κ %.3g): throughput grew faster than linearly, the fit does not describe it", u.Sigma, u.Kappa)
	}
	var ssRes, ssTot, mean float64
	for _, x := range u.Measured {
		mean += x / float64(len(u.Measured))
	}
	for i, n := range u.Workers {
		d := u.Measured[i] - u.At(float64(n))
		ssRes += d * d
		ssTot += (u.Measured[i] - mean) * (u.Measured[i] - mean)
	}
	if ssTot > 0 {
		u.R2 = 1 - ssRes/ssTot
	}
	u.PeakN = math.Inf(1)
	if u.Kappa > 0 && u.Sigma < 1 {
		u.PeakN = math.Sqrt((1 - u.Sigma) / u.Kappa)
		u.PeakX = u.At(u.PeakN)
	}
	lo, hi := float64(u.Workers[0]), float64(u.Workers[len(u.Workers)-1])
	switch {
	case u.Poor:
	case len(u.Workers) == 3:
		u.Poor, u.Note = true, "three worker counts determine the three coefficients exactly, whatever they are: measure more to test the fit"
	case u.R2 < 0.9:
		u.Poor, u.Note = true, fmt.Sprintf("R² %.2f: the law describes these measurements poorly", u.R2)
	case math.IsInf(u.PeakN, 1):
		u.Poor, u.Note = true, "no coherency cost measured: the fit predicts no peak, measure more workers to find one"
	case u.PeakN < lo || u.PeakN > hi:
		u.Poor = true
		u.Note = fmt.Sprintf("the predicted peak (%.1f workers) is outside the measured range %g..%g: measure further to confirm it", u.PeakN, lo, hi)
	default:
		u.Note = fmt.Sprintf("throughput peaks at about %.1f workers (%.0f units/s)", u.PeakN, u.PeakX)
	}
	return u
}

// solve3 solves a 3×3 linear system given as an augmented matrix.
func solve3(m [3][4]float64) ([3]float64, bool) {
	for c := 0; c < 3; c++ {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if math.Abs(m[p][c]) < 1e-300 {
			return [3]float64{}, false
		}
		m[c], m[p] = m[p], m[c]
		for r := 0; r < 3; r++ {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for k := c; k < 4; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	return [3]float64{m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]}, true
}

// notReadyOnly is a run's logger in a sweep: its log is silent (each
// run would repeat the sweep's own warnings), except that its target is
// not ready yet, which log says with the point and run waiting. Without
// it a sweep whose target is down (START_TIMEOUT 0: wait until it comes
// up) waited without a word until stopped.
func notReadyOnly(log *zap.Logger, point string, run int) *zap.Logger {
	l := log.With(zap.String("point", point), zap.Int("run", run))
	return zap.New(notReadyCore{l.Core()})
}

// notReadyCore passes on only opener.NotReadyMessage.
type notReadyCore struct{ zapcore.Core }

func (c notReadyCore) With(f []zapcore.Field) zapcore.Core { return notReadyCore{c.Core.With(f)} }

func (c notReadyCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message != opener.NotReadyMessage {
		return ce
	}
	return c.Core.Check(e, ce)
}
