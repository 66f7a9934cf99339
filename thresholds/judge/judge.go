package judge

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/summary"
	"github.com/soakd/soakd/thresholds"
)

// A judge evaluates a workload's thresholds on its run phase, from the
// counts and latency samples the summary reads: live (every second, and at
// every window step) for /metrics, /status and "!", and once more when the
// run is over, for the summary.
//
//   - A check without "@" is judged on the whole run phase: its counts
//     (phaseStats.snapshot) and its latency histograms (the summary's; for
//     every op at once, the ops' histograms merged).
//   - A check with "@W" is judged on every window of length W, sliding by
//     a step of W/10 (W/k with k = min(10, W in whole seconds)): windows
//     start at multiples of the step from the phase's start, and the last
//     one ends at the phase's end (it may be up to a step shorter). Sliding
//     rather than tumbling, so a burst shorter than W−step always lies
//     whole in one judged window instead of being split in two halves that
//     each pass. The check passes when every window does; a run phase
//     shorter than W is judged as one window.
//   - A drift check compares the window [DRIFT_WARMUP, DRIFT_WARMUP+W)
//     (early) with the latest window of length W (late), once they no
//     longer overlap, so it needs a run phase of at least DRIFT_WARMUP+2W;
//     the verdict is that of the last late window, which ends with the
//     run phase. A drift window's value is a low percentile (high for
//     achieved>) of the metric over its k slices (sub-windows of one
//     step), so that a burst of noise in a few seconds of a window is not
//     taken for drift: the change has to hold in most of the window
//     (measureDriftWindow). The change is
//     relative ((late−early)/early) for a percentage, a difference for a
//     duration. achieved compares the fraction of the target rate
//     achieved (the achieved rate in units/s with RATE=max).
//
// A target. check judges the target's own figures, as the workload's watch
// reads them (TargetFigures): the judge takes the latest reading at each of
// its evaluations (every second and at every window step; WATCH_INTERVAL
// is at least 1 s) and keeps, per figure, the peak and the last reading of
// the run phase and of each slice. A whole-run or windowed memory or
// storage check judges the peak reading (target.memory<8GiB fails once a
// reading exceeds 8 GiB), storage_per_value the last one; a drift check
// takes each slice's peak as the slice's value, and goes on as for
// latency. A figure never read in the run phase is not available: the
// check has no value, and fails in the final verdict, with a note.
//
// Memory stays bounded whatever the run's length: windows of one length
// (and start) share a windowRecorder that keeps one histogram per latency
// distribution the checks need, plus the last k slices of a window as
// sparse distributions; the early window of a drift check is kept as its
// one value; the judge merges a window's slices into one sparse
// distribution to read its quantiles.
type judge struct {
	name   string
	checks []thresholds.Check
	warmup time.Duration
	closed bool // RATE=max: no target rate
	log    *zap.Logger
	begun  chan struct{} // closed when the run phase begins
	// target reads the target's figures; nil when no watch serves the
	// judge (its target. checks are then never judged).
	target TargetFigures

	mu      sync.Mutex
	ps      *daemon.Phase // the run phase, once it began
	groups  []*windowGroup
	state   []checkState // per check
	results []report.ThresholdResult
	lastRun time.Duration // of the last whole-run evaluation, since the phase began
	// Of the target's figures (by targetIndex): which the checks need,
	// when the phase began, the time of the last reading taken (a
	// reading is taken once), and the run phase's readings.
	targetNeed [numTarget]bool
	begunAt    time.Time
	targetAt   [numTarget]time.Time
	targetRun  [numTarget]targetAcc
	final      bool
	aborted    bool
	done       chan struct{} // closed when run returns; nil until it starts
}

// checkState is what the judge knows of one check.
type checkState struct {
	group *windowGroup // nil for a whole-run check

	has   bool    // value holds a measurement (whole run; drift: the latest change)
	value float64 //
	// windows judged, and how many failed; the worst and the latest.
	windows, failed int
	worst, latest   *report.WindowValue
	early           *report.WindowValue // drift: the early window, once complete
	earlyNote       string              // drift: why the early window has no value
	warned          bool                // the first failure was logged
}

// windowGroup is the windows of one length and start that some checks
// judge, cut from one recorder.
type windowGroup struct {
	length, step time.Duration
	k            int           // slices per window
	start        time.Duration // where slicing starts in the phase (drift: DRIFT_WARMUP)
	keys         []daemon.LatencyKey
	rec          *daemon.Window
	next         time.Duration // of the next cut, since the phase began
	warming      bool          // the next cut ends the warm-up; its slice is not kept
	slices       []slice       // the last k slices at most
	cuts         int           // slices kept since the start
	// pending are the target's readings taken since the last cut: the
	// next slice's.
	pending [numTarget]targetAcc
}

// slice is one step of a window group: the engine's counts and latency,
// and the target's readings taken in it.
type slice struct {
	daemon.WindowStats
	target [numTarget]targetAcc
}

// The target's figures, as indexes of per-figure arrays.
const numTarget = 3

func targetIndex(m thresholds.Metric) int { return int(m - thresholds.TargetMemory) }

// targetAcc is readings of one of the target's figures: their peak, the
// last one, and how many.
type targetAcc struct {
	peak, last float64
	n          int
}

func (a *targetAcc) add(v float64) {
	if a.n == 0 || v > a.peak {
		a.peak = v
	}
	a.last = v
	a.n++
}

// merge adds b, read after a's readings.
func (a *targetAcc) merge(b targetAcc) {
	if b.n == 0 {
		return
	}
	if a.n == 0 || b.peak > a.peak {
		a.peak = b.peak
	}
	a.last = b.last
	a.n += b.n
}

// value is the figure m judges: the peak, the last reading for
// storage_per_value (a ratio whose peak is the run's first values, when
// the target's fixed overhead is spread over few).
func (a targetAcc) value(m thresholds.Metric) (float64, bool) {
	if a.n == 0 {
		return 0, false
	}
	if m == thresholds.TargetStoragePerValue {
		return a.last, true
	}
	return a.peak, true
}

func newJudge(w config.Workload, log *zap.Logger) *judge {
	j := &judge{name: w.Name, checks: w.Checks, warmup: w.DriftWarmup, closed: w.Rate.Max, log: log,
		begun: make(chan struct{}), state: make([]checkState, len(w.Checks))}
	for i, t := range j.checks {
		if t.Metric.Target() {
			j.targetNeed[targetIndex(t.Metric)] = true
		}
		length, start := t.Window, time.Duration(0)
		switch {
		case t.Drift:
			length, start = t.DriftWindow(), j.warmup
		case length == 0:
			continue
		}
		var g *windowGroup
		for _, o := range j.groups {
			if o.length == length && o.start == start {
				g = o
			}
		}
		if g == nil {
			k := int(min(10, length/time.Second))
			g = &windowGroup{length: length, k: k, step: length / time.Duration(k), start: start}
			j.groups = append(j.groups, g)
		}
		j.state[i].group = g
		if t.Metric.Latency() {
			key := daemon.LatencyKey{Op: t.Op, Service: t.Service}
			if g.keyIndex(key) < 0 {
				g.keys = append(g.keys, key)
			}
		}
	}
	j.results = j.resultsLocked()
	return j
}

func (g *windowGroup) keyIndex(k daemon.LatencyKey) int {
	for i, o := range g.keys {
		if o == k {
			return i
		}
	}
	return -1
}

// empty reports a window of no length in which nothing happened (cut
// after its phase ended).
func empty(ws *daemon.WindowStats) bool {
	c := &ws.Counts
	return ws.To <= ws.From && c.Scheduled == 0 && c.Acked == 0 && c.Failed == 0 && c.Dropped == 0 && len(c.Ops) == 0
}

// push keeps a slice, with the target's readings since the last cut;
// false for an empty one (cut after the phase ended).
func (g *windowGroup) push(ws daemon.WindowStats) bool {
	target := g.pending
	g.pending = [numTarget]targetAcc{}
	if empty(&ws) {
		return false
	}
	g.slices = append(g.slices, slice{WindowStats: ws, target: target})
	if len(g.slices) > g.k {
		g.slices = g.slices[1:]
	}
	g.cuts++
	return true
}

// begin attaches the judge to the run phase, before any unit of it is
// scheduled.
func (j *judge) begin(ps *daemon.Phase) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ps, j.lastRun = ps, 0
	j.begunAt = time.Now().Add(-ps.Elapsed()) // the phase's start
	j.targetAt, j.targetRun = [numTarget]time.Time{}, [numTarget]targetAcc{}
	for _, g := range j.groups {
		g.pending = [numTarget]targetAcc{}
		g.rec = ps.StartWindow(g.keys...)
		g.warming = g.start > 0
		g.next = g.start
		if !g.warming {
			g.next += g.step
		}
	}
	j.results = j.resultsLocked()
	close(j.begun)
}

// run evaluates the checks live until ctx is done or the run phase ends;
// stop stops the whole run when a "!" check fails.
func (j *judge) run(ctx context.Context, stop func(error)) {
	select {
	case <-j.begun:
	case <-ctx.Done():
		return
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		t.Reset(j.nextWake() - j.ps.Elapsed())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cause, more := j.tick()
		if cause != nil {
			stop(cause)
		}
		if !more {
			return
		}
	}
}

// nextWake is when the next cut or whole-run evaluation is due, since the
// phase began.
func (j *judge) nextWake() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	next := j.lastRun + time.Second
	for _, g := range j.groups {
		next = min(next, g.next)
	}
	return next
}

// tick cuts the windows due, judges them and the whole run so far. It
// returns the cause to stop the run with when a "!" check failed, and
// false once the phase has ended (the summary makes the last judgement).
func (j *judge) tick() (abort error, more bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.final || j.ps.Ended() {
		return nil, false
	}
	now := j.ps.Elapsed()
	var due []*windowGroup
	for _, g := range j.groups {
		if g.next <= now {
			due = append(due, g)
		}
	}
	j.evaluateLocked(due, false)
	for _, g := range due {
		for g.next <= now {
			g.next += g.step
		}
	}
	j.lastRun = now
	return j.abortLocked(), true
}

// finish makes the final judgement, once the run phase has ended (or the
// run is over without it), and returns it.
func (j *judge) finish() []report.ThresholdResult {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.final {
		if j.ps != nil {
			j.evaluateLocked(j.groups, true)
			for _, g := range j.groups {
				g.rec.Stop()
			}
		}
		j.final = true
		j.results = j.resultsLocked()
	}
	return append([]report.ThresholdResult(nil), j.results...)
}

// live returns the results so far.
func (j *judge) live() []report.ThresholdResult {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]report.ThresholdResult(nil), j.results...)
}

// evaluateLocked cuts the windows of groups and judges them, and the whole
// run phase so far, from one snapshot.
func (j *judge) evaluateLocked(groups []*windowGroup, final bool) {
	j.readTargetLocked()
	recs := make([]*daemon.Window, len(groups))
	for i, g := range groups {
		recs[i] = g.rec
	}
	wins := j.ps.CutWindows(func(tot *daemon.Totals) {
		for i := range j.checks {
			t := &j.checks[i]
			if t.Window > 0 || t.Drift {
				continue
			}
			st := &j.state[i]
			if t.Metric.Target() {
				st.value, st.has = j.targetRun[targetIndex(t.Metric)].value(t.Metric)
				continue
			}
			st.value, st.has = j.measure(t, &tot.Counts, tot.Seconds, tot.Latency)
		}
	}, recs...)
	for gi, g := range groups {
		ws := wins[gi]
		if g.warming {
			g.warming = false
			g.pending = [numTarget]targetAcc{}
			continue
		}
		if !g.push(ws) {
			continue
		}
		for i := range j.checks {
			st := &j.state[i]
			if st.group != g {
				continue
			}
			switch t := &j.checks[i]; {
			case t.Drift:
				j.judgeDrift(t, st, g)
			case len(g.slices) == g.k:
				j.judgeWindow(t, st, g, g.slices)
			}
		}
	}
	if !final {
		j.results = j.resultsLocked()
		return
	}
	// A run phase shorter than its window is judged as one window.
	for i := range j.checks {
		st := &j.state[i]
		if g := st.group; g != nil && !j.checks[i].Drift && st.windows == 0 && len(g.slices) > 0 {
			j.judgeWindow(&j.checks[i], st, g, g.slices)
		}
	}
}

// readTargetLocked takes the latest reading of each of the target's
// figures the checks need, when it is new and of the run phase (the watch
// reads from the workload's first phase until it finishes), into the
// run's and every group's next slice.
func (j *judge) readTargetLocked() {
	if j.target == nil || j.ps == nil {
		return
	}
	var end time.Time
	if j.ps.Ended() {
		end = j.begunAt.Add(j.ps.Elapsed())
	}
	for i, need := range j.targetNeed {
		if !need {
			continue
		}
		var v float64
		var at time.Time
		var ok bool
		switch thresholds.TargetMemory + thresholds.Metric(i) {
		case thresholds.TargetMemory:
			v, at, ok = j.target.Memory(j.name)
		case thresholds.TargetStorage:
			v, at, ok = j.target.Storage(j.name)
		default:
			v, at, ok = j.target.StoragePerValue(j.name)
		}
		if !ok || !at.After(j.targetAt[i]) || at.Before(j.begunAt) || !end.IsZero() && at.After(end) {
			continue
		}
		j.targetAt[i] = at
		j.targetRun[i].add(v)
		for _, g := range j.groups {
			g.pending[i].add(v)
		}
	}
}

// judgeWindow judges a windowed check on slices.
func (j *judge) judgeWindow(t *thresholds.Check, st *checkState, g *windowGroup, slices []slice) {
	v, ok := j.measureSlices(t, g, slices)
	if !ok {
		return
	}
	w := j.windowValue(slices, v)
	st.windows++
	st.latest = w
	// A failing value is always worse than a passing one.
	if st.worst == nil || t.Worse(v, st.worst.Value) {
		st.worst = w
	}
	if !t.Pass(v) {
		st.failed++
		j.warnLocked(t, st, fmt.Sprintf("window %s: %s", summary.FormatWindow(w), summary.FormatThresholdValue(j.unit(t), v, false)))
	}
}

// judgeDrift records the early window once the group has it, and compares
// the latest window with it once they no longer overlap.
func (j *judge) judgeDrift(t *thresholds.Check, st *checkState, g *windowGroup) {
	if g.cuts == g.k {
		if v, ok := j.measureDriftWindow(t, g); ok {
			st.early = j.windowValue(g.slices, v)
		} else {
			st.earlyNote = "no data in the early window"
		}
	}
	if g.cuts < 2*g.k || st.early == nil {
		return
	}
	late, ok := j.measureDriftWindow(t, g)
	if !ok {
		return
	}
	var change float64
	switch {
	case t.Kind == thresholds.Duration || t.Kind == thresholds.Bytes: // a difference
		change = late - st.early.Value
	case st.early.Value == 0 && late == 0:
		change = 0
	case st.early.Value == 0:
		st.has, st.latest = false, j.windowValue(g.slices, late)
		st.earlyNote = "the early window's value is 0: no relative change"
		return
	default:
		change = (late - st.early.Value) / st.early.Value
	}
	st.has, st.value = true, change
	st.latest = j.windowValue(g.slices, late)
	st.windows++
	if !t.Pass(change) {
		st.failed++
		j.warnLocked(t, st, fmt.Sprintf("%s from window %s to %s", summary.FormatThresholdValue(j.unit(t), change, true),
			summary.FormatWindow(st.early), summary.FormatWindow(st.latest)))
	}
}

// warnLocked logs a check's first failure.
func (j *judge) warnLocked(t *thresholds.Check, st *checkState, what string) {
	if st.warned || j.final {
		return
	}
	st.warned = true
	j.log.Warn("threshold failed", zap.String("threshold", t.Text), zap.String("measured", what), zap.Bool("abort", t.Abort))
}

// abortLocked returns the cause to stop the run with, once, when a "!"
// check has failed.
func (j *judge) abortLocked() error {
	if j.aborted {
		return nil
	}
	for i, t := range j.checks {
		st := &j.state[i]
		if !t.Abort {
			continue
		}
		failed := st.failed > 0
		if st.group == nil || t.Drift {
			failed = st.has && !t.Pass(st.value)
		}
		if failed {
			j.aborted = true
			j.log.Error("threshold failed: stopping the run (the threshold ends with !)", zap.String("threshold", t.Text))
			return daemon.Fail(report.ThresholdStop(t.Text, j.name))
		}
	}
	return nil
}

// measureDriftWindow is t's metric over a drift window (the group's last
// k slices), from its value in each slice that has data: the 30th
// percentile of those values (the 3rd lowest of 10) for a check that
// fails high, the 70th for one that fails low (achieved>). A window's own
// p99 moves several-fold when a GC pause or a scheduler hiccup lands in
// it, so judging drift on it fails steady targets at random (and so did
// the median of the slices, about one run in 30 on a noisy machine);
// this value moves only when the change holds in at least 8 of the 10
// sub-windows, as a real shift does, and is the same estimator for the
// early and the late window. Without sub-windows (a window under 2 s) it
// is the window's value.
func (j *judge) measureDriftWindow(t *thresholds.Check, g *windowGroup) (float64, bool) {
	if len(g.slices) < 2 {
		return j.measureSlices(t, g, g.slices)
	}
	vs := make([]float64, 0, len(g.slices))
	for i := range g.slices {
		if v, ok := j.measureSlices(t, g, g.slices[i:i+1]); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	i := (len(vs) - 1) * 3 / 10
	if t.Cmp == thresholds.GT || t.Cmp == thresholds.GE {
		i = len(vs) - 1 - i
	}
	return vs[i], true
}

func (j *judge) windowValue(slices []slice, v float64) *report.WindowValue {
	return &report.WindowValue{From: slices[0].From.Seconds(), To: slices[len(slices)-1].To.Seconds(), Value: v}
}

// measureSlices is t's metric over the window made of slices.
func (j *judge) measureSlices(t *thresholds.Check, g *windowGroup, slices []slice) (float64, bool) {
	if t.Metric.Target() {
		var a targetAcc
		for i := range slices {
			a.merge(slices[i].target[targetIndex(t.Metric)])
		}
		return a.value(t.Metric)
	}
	var c daemon.Counts
	for i := range slices {
		addCounts(&c, slices[i].Counts)
	}
	secs := (slices[len(slices)-1].To - slices[0].From).Seconds()
	return j.measure(t, &c, secs, func(k daemon.LatencyKey) report.Dist {
		i := g.keyIndex(k)
		if i < 0 {
			return report.Dist{}
		}
		var d report.Dist
		for _, s := range slices {
			d = d.Merge(s.Dists[i])
		}
		return d
	})
}

// addCounts adds o to c, op by op.
func addCounts(c *daemon.Counts, o daemon.Counts) {
	c.Scheduled += o.Scheduled
	c.Acked += o.Acked
	c.Failed += o.Failed
	c.Dropped += o.Dropped
	if len(o.Ops) > 0 && c.Ops == nil {
		c.Ops = map[string]daemon.OpCount{}
	}
	for k, v := range o.Ops {
		s := c.Ops[k]
		s.OK += v.OK
		s.Errors += v.Errors
		c.Ops[k] = s
	}
}

// measure is t's metric over counts c and secs seconds, lat giving the
// latency distribution of a key (empty without samples); false without
// data.
func (j *judge) measure(t *thresholds.Check, c *daemon.Counts, secs float64, lat func(daemon.LatencyKey) report.Dist) (float64, bool) {
	ratio := func(n, of int64) float64 {
		if of <= 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	switch t.Metric {
	case thresholds.Quantile, thresholds.Max, thresholds.Mean:
		d := lat(daemon.LatencyKey{Op: t.Op, Service: t.Service})
		if d.Count() == 0 {
			return 0, false
		}
		switch t.Metric {
		case thresholds.Max:
			return d.Quantiles().Max, true
		case thresholds.Mean:
			return d.Quantiles().Mean, true
		}
		return float64(d.ValueAtPercentile(t.Q)) / 1e9, true
	case thresholds.Errors:
		var errs, ok int64
		for op, n := range c.Ops {
			if t.Op != "" && op != t.Op {
				continue
			}
			ok += n.OK
			errs += n.Errors
		}
		if t.Kind == thresholds.Count {
			return float64(errs), true
		}
		return ratio(errs, errs+ok), true
	case thresholds.Failed, thresholds.Dropped:
		n := c.Failed
		if t.Metric == thresholds.Dropped {
			n = c.Dropped
		}
		if t.Kind == thresholds.Count {
			return float64(n), true
		}
		return ratio(n, c.Scheduled), true
	}
	// achieved
	if t.Kind == thresholds.Rate || (t.Drift && j.closed) {
		return float64(c.Acked) / secs, secs > 0
	}
	return ratio(c.Acked, c.Scheduled), c.Scheduled > 0
}

// unit is the unit of t's value.
func (j *judge) unit(t *thresholds.Check) string {
	switch t.Kind {
	case thresholds.Duration:
		return "seconds"
	case thresholds.Percent:
		return "ratio"
	case thresholds.Rate:
		return "units_per_second"
	case thresholds.Bytes:
		return "bytes"
	}
	return "count"
}

// resultsLocked builds the results from the state.
func (j *judge) resultsLocked() []report.ThresholdResult {
	out := make([]report.ThresholdResult, len(j.checks))
	for i := range j.checks {
		t, st := &j.checks[i], &j.state[i]
		r := report.ThresholdResult{Threshold: t.Text, OK: true, Unit: j.unit(t), Abort: t.Abort,
			Windows: st.windows, FailedWindows: st.failed, LatestWindow: st.latest}
		val := func(v float64) *float64 { return &v }
		switch {
		case t.Drift:
			r.EarlyWindow, r.WindowUnit = st.early, "seconds"
			if t.Metric.Target() {
				r.WindowUnit = "bytes"
			}
			if t.Metric == thresholds.Achieved {
				r.WindowUnit = "ratio"
				if j.closed {
					r.WindowUnit = "units_per_second"
				}
			}
			if st.has {
				r.Value, r.Current = val(st.value), val(st.value)
				r.OK = t.Pass(st.value)
			}
		case st.group != nil:
			r.WorstWindow = st.worst
			r.OK = st.failed == 0
			if st.worst != nil {
				r.Value = val(st.worst.Value)
			}
			if st.latest != nil {
				r.Current = val(st.latest.Value)
			}
		case st.has:
			r.Value, r.Current = val(st.value), val(st.value)
			r.OK = t.Pass(st.value)
		}
		if r.Value == nil {
			r.Note = j.noteLocked(t, st)
			if j.final {
				r.OK = false
			}
		}
		out[i] = r
	}
	return out
}

// noteLocked says why a check has no value.
func (j *judge) noteLocked(t *thresholds.Check, st *checkState) string {
	switch {
	case j.ps == nil && j.final:
		return "not judged: the run phase never started"
	case j.ps == nil:
		return "waiting for the run phase"
	case t.Metric.Target() && j.target == nil:
		return "not available: the target's figures are not read in this run"
	case t.Metric.Target() && j.targetRun[targetIndex(t.Metric)].n == 0:
		return fmt.Sprintf("not available: no reading of the target's %s in the run phase so far (see /status: target.unavailable)", targetFigureName(t.Metric))
	case t.Drift && st.earlyNote != "":
		return st.earlyNote
	case t.Drift:
		need := j.warmup + 2*t.DriftWindow()
		if !j.final {
			return fmt.Sprintf("waiting for DRIFT_WARMUP (%v) + 2 windows of %v", j.warmup, t.DriftWindow())
		}
		return fmt.Sprintf("not judged: the run phase lasted %v; drift needs DRIFT_WARMUP (%v) + 2 windows of %v = %v",
			j.ps.Elapsed().Round(time.Millisecond), j.warmup, t.DriftWindow(), need)
	case !j.final && st.group != nil:
		return "waiting for the first window"
	}
	what := "no data"
	switch t.Metric {
	case thresholds.TargetMemory, thresholds.TargetStorage, thresholds.TargetStoragePerValue:
		what = "not available: no reading of the target's " + targetFigureName(t.Metric)
	case thresholds.Quantile, thresholds.Max, thresholds.Mean:
		op := "operation"
		if t.Op != "" {
			op = t.Op
		}
		what += ": no " + op + " completed"
	case thresholds.Achieved:
		what += ": nothing was scheduled"
	}
	if st.group != nil {
		what += " in any window"
	}
	return what
}

// targetFigureName names one of the target's figures in notes.
func targetFigureName(m thresholds.Metric) string {
	switch m {
	case thresholds.TargetMemory:
		return "memory"
	case thresholds.TargetStorage:
		return "storage"
	}
	return "storage per value"
}
