package daemon

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/sources"
)

// rateSamples keeps one sample per second of a workload's acknowledged
// units, to report the achieved rate over the last 10 s.
const rateSamples = 11

// reporter, every second, samples each workload's counts for the achieved
// rate and redraws the progress bar; every progress interval it closes
// the latency windows and logs one line per workload (unless a bar shows
// progress instead).
type reporter struct {
	cfg     *config.Config
	wls     []*workload
	log     *zap.Logger
	window  time.Duration
	started time.Duration // mono() when the run started
	console *Console      // nil: no bar
	hist    *History      // nil: no history kept

	mu    sync.Mutex
	state []*liveState
}

// liveState is what /status and the progress line show of a workload
// beyond its counts, refreshed by the reporter.
type liveState struct {
	samples  [rateSamples]rateSample
	phase    *phaseStats // the phase the samples and window belong to
	n        int
	achieved float64
	// target is the mean target rate over the same window as achieved
	// (the rate profile's integral over it ÷ its length): on a ramp the
	// instantaneous target runs half a window ahead of any trailing
	// average, so comparing with it shows a shortfall that is not there.
	// < 0: none (closed loop, or before two samples).
	target   float64
	window   histQuantiles // the last whole window of phase; Count 0 before the first
	lastErrs int64
}

func newReporter(cfg *config.Config, wls []*workload, log *zap.Logger, console *Console) *reporter {
	r := &reporter{cfg: cfg, wls: wls, log: log, window: cfg.Progress, started: mono()}
	if r.window <= 0 {
		r.window = 10 * time.Second
	}
	for range wls {
		r.state = append(r.state, &liveState{target: -1})
	}
	if console != nil && r.bounded() {
		r.console = console
	}
	return r
}

func (r *reporter) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var resized chan os.Signal // nil without a bar on a terminal: never ready
	if r.console != nil && r.console.terminal() {
		resized = make(chan os.Signal, 1)
		notifyResize(resized)
		defer signal.Stop(resized)
	}
	last := mono()
	for {
		select {
		case <-ctx.Done():
			return
		case <-resized:
			// Redraw at once at the new width: a bar wider than the
			// terminal wraps, and the next frame could not erase it.
			r.console.showBar(r.barLine(mono(), false))
		case <-t.C:
			now := mono()
			r.tick(now)
			if now-last >= r.window-r.window/10 {
				last = now
				r.progress()
			}
		}
	}
}

// tick samples the acknowledged counts (and the history) and redraws
// the bar.
func (r *reporter) tick(now time.Duration) {
	if r.hist != nil {
		r.hist.sample(now)
	}
	r.mu.Lock()
	for i, w := range r.wls {
		st := r.state[i]
		ps := w.cur.Load()
		if ps == nil {
			continue
		}
		if st.phase != ps {
			*st = liveState{phase: ps, target: -1}
		}
		sch := w.sched.Load()
		// The plan is read at the sample's own time (now, as elapsed on
		// the schedule's clock), not at the moment this line runs: the
		// history's sampling before it takes a varying while, which would
		// make the mean target over a window jitter by a few percent.
		e := now - time.Duration(w.origin.Load())
		st.add(rateSample{at: now, acked: ps.snapshot().acked, planned: sch.planned(e), open: sch.profile != nil})
	}
	r.mu.Unlock()
	if r.console != nil {
		r.console.showBar(r.barLine(now, false))
	}
}

// rateSample is one second's sample of a workload's counts.
type rateSample struct {
	at      time.Duration
	acked   int64
	planned float64 // units the rate profile had due by then (schedule.planned)
	open    bool    // open loop: planned is meaningful
}

// add records a sample and recomputes the achieved rate and the mean
// target over the window from the oldest sample kept to this one.
func (st *liveState) add(s rateSample) {
	st.samples[st.n%rateSamples] = s
	st.n++
	oldest := st.samples[st.n%rateSamples]
	if st.n < rateSamples {
		oldest = st.samples[0]
	}
	st.target = -1
	if dt := (s.at - oldest.at).Seconds(); dt > 0 {
		st.achieved = float64(s.acked-oldest.acked) / dt
		if s.open && oldest.open {
			st.target = (s.planned - oldest.planned) / dt
		}
	}
}

// progress closes each workload's latency window and logs a line per
// workload.
func (r *reporter) progress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.wls {
		st := r.state[i]
		ps := w.cur.Load()
		if ps == nil || st.phase != ps {
			continue
		}
		c := ps.snapshot()
		st.window = ps.hist.swapWindows()
		if r.cfg.Progress <= 0 || r.console != nil || w.finished.Load() {
			continue
		}
		errs := c.errors()
		// The target over the achieved rate's window, so the two compare.
		target := st.target
		if target < 0 {
			target = w.sched.Load().rateAt(w.since())
		}
		tgt := "max"
		if w.sched.Load().profile != nil {
			tgt = fmt.Sprintf("%.0f", target)
		}
		var lat strings.Builder
		fields := []zap.Field{zap.String("phase", ps.name),
			zap.Float64("rate", st.achieved), zap.Float64("target_rate", target),
			zap.Int64("scheduled", c.scheduled), zap.Int64("acked", c.acked), zap.Int64("failed", c.failed),
			zap.Int64("dropped", c.dropped), zap.Int64("in_flight", c.inflight()),
			zap.Int64("errors", errs), zap.Float64("lag_seconds", w.lagNow().Seconds())}
		for op := range st.window.ops {
			q := st.window.ops[op].response
			if q.Count == 0 {
				continue
			}
			name := opName(op)
			fmt.Fprintf(&lat, ", %s p50 %s p99 %s", name, fmtDur(q.P50), fmtDur(q.P99))
			fields = append(fields, zap.Float64(name+"_p50_seconds", q.P50), zap.Float64(name+"_p99_seconds", q.P99))
		}
		if q := st.window.dispatch; q.Count > 0 {
			fmt.Fprintf(&lat, ", dispatch p50 %s p99 %s", fmtDur(q.P50), fmtDur(q.P99))
			fields = append(fields, zap.Float64("dispatch_p50_seconds", q.P50), zap.Float64("dispatch_p99_seconds", q.P99))
		}
		phase := ""
		if ps.name != "run" {
			phase = " [" + ps.name + " phase]"
		}
		w.log.Info(fmt.Sprintf("%s%s: %.0f %s/s (target %s)%s, errors %d (+%d), dropped %d",
			w.name, phase, st.achieved, unitName(w.kind), tgt, lat.String(), errs, errs-st.lastErrs, c.dropped), fields...)
		st.lastErrs = errs
	}
}

// live returns a workload's achieved rate and its current phase's
// latency window for /status: the last whole window, or the one in
// progress while the phase is younger than one window.
func (r *reporter) live(i int) (achieved float64, window histQuantiles) {
	w := r.wls[i]
	ps := w.cur.Load()
	r.mu.Lock()
	st := r.state[i]
	if st.phase == ps {
		achieved = st.achieved
		window = st.window
	}
	r.mu.Unlock()
	if ps == nil {
		return achieved, window
	}
	if window.dispatch.Count > 0 {
		return achieved, window
	}
	ps.snapshot() // merge the workers' latest samples
	return achieved, ps.hist.windows()
}

// finish draws the bar's last frame: 100 % when the run ran its course,
// else how far it got before it was stopped (signal, configuration
// error, failed threshold).
func (r *reporter) finish(ranItsCourse bool) {
	if r.console == nil {
		return
	}
	r.console.endBar(r.barLine(mono(), ranItsCourse))
}

// bounded reports whether the run has a known end: SOAKD_DURATION, or
// every workload a finite data set, a DURATION or a finite rate profile.
func (r *reporter) bounded() bool {
	if r.cfg.Duration > 0 {
		return true
	}
	for _, w := range r.wls {
		if _, _, ok := r.workloadProgress(w, mono()); !ok {
			return false
		}
	}
	return true
}

// workloadProgress is how far a workload's run phase is (0..1) and how
// long it has left; ok is false when it has no known end.
func (r *reporter) workloadProgress(w *workload, now time.Duration) (frac float64, left time.Duration, ok bool) {
	if w.finished.Load() {
		switch ps := w.cur.Load(); {
		case ps == nil || ps.name != "run":
			return 0, 0, true // stopped before its run phase began
		case ps.stopReason() == stopEndOfData || ps.stopReason() == stopEndOfProfile || ps.stopReason() == stopDuration:
			return 1, 0, true
		}
		// stopped early: how far its run phase got, below
	}
	runLen := w.cfg.Duration
	if !w.cfg.Rate.Max {
		if end := w.cfg.Rate.Profile.End(); end > 0 && (runLen == 0 || end < runLen) {
			runLen = end
		}
	}
	var total int64
	if s, ok := w.src.(sources.Sized); ok {
		total = s.Total()
	}
	if runLen == 0 && total == 0 {
		return 0, 0, false
	}
	ps := w.cur.Load()
	if ps == nil || ps.name != "run" {
		return 0, runLen, true // preparing or loading: the run has not begun
	}
	if runLen > 0 {
		el := min(ps.elapsed(), runLen)
		frac, left = float64(el)/float64(runLen), runLen-el
	}
	if total > 0 {
		c := ps.snapshot()
		done := c.acked + c.failed + c.dropped
		f := math.Min(float64(done)/float64(total), 1)
		var l time.Duration
		if rate := float64(done) / ps.elapsed().Seconds(); rate > 0 {
			l = time.Duration(float64(total-done) / rate * float64(time.Second))
		}
		if runLen == 0 || f > frac {
			frac, left = f, l
		}
	}
	return frac, left, true
}

// barLine renders the bar, fitted to the console's width: overall
// progress, time elapsed and left, and each workload's achieved rate
// against its target over the same window. done forces 100 %.
func (r *reporter) barLine(now time.Duration, done bool) string {
	elapsed := now - r.started
	frac, left := 1.0, time.Duration(0)
	for _, w := range r.wls {
		f, l, ok := r.workloadProgress(w, now)
		if !ok {
			l = math.MaxInt64 // no end of its own: SOAKD_DURATION ends it
		}
		frac, left = math.Min(frac, f), max(left, l)
	}
	if d := r.cfg.Duration; d > 0 {
		hf := math.Min(float64(elapsed)/float64(d), 1)
		frac, left = math.Max(frac, hf), min(left, max(d-elapsed, 0))
	}
	if done {
		frac, left = 1, 0
	}
	b := barInfo{frac: frac, elapsed: elapsed, left: left}
	r.mu.Lock()
	for i, w := range r.wls {
		st := r.state[i]
		wb := barWorkload{name: w.name, unit: unitName(w.kind), achieved: st.achieved, target: st.target}
		if ps := w.cur.Load(); ps != nil && ps.name != "run" {
			wb.phase = ps.name
		}
		b.wls = append(b.wls, wb)
	}
	r.mu.Unlock()
	width := 80
	if r.console != nil {
		width = r.console.columns()
	}
	return b.fit(width - 1) // the last column would wrap on some terminals
}

// barInfo is what the progress line shows.
type barInfo struct {
	frac          float64
	elapsed, left time.Duration
	wls           []barWorkload
}

type barWorkload struct {
	name, unit, phase string
	achieved          float64
	target            float64 // mean target over the achieved rate's window; < 0: none (max, or not known yet)
}

// barLevel is how much of the progress line is left out.
type barLevel struct {
	graphic   int  // width of the [###---] graphic, 0 = none
	elapsed   bool // "1m02s elapsed"
	targets   bool // "(target 1000)"
	left      bool // "3m left"
	workloads int  // how many workloads' rates
}

// barLevels lists the progress line's forms from the fullest down: a
// narrow terminal gets the first that fits, so the least useful parts
// go first (the graphic repeats the percentage; elapsed time is on the
// logs) and no field is ever cut in the middle of a number.
func barLevels(n int) []barLevel {
	out := []barLevel{
		{24, true, true, true, n},
		{10, true, true, true, n},
		{0, true, true, true, n},
		{0, false, true, true, n},
		{0, false, false, true, n},
		{0, false, false, false, n},
	}
	for k := n - 1; k >= 0; k-- {
		out = append(out, barLevel{workloads: k})
	}
	return out
}

// fit returns the fullest form of the line at most width columns wide;
// if even the percentage alone does not fit, "".
func (b barInfo) fit(width int) string {
	for _, l := range barLevels(len(b.wls)) {
		if s := b.render(l); utf8.RuneCountInString(s) <= width {
			return s
		}
	}
	return ""
}

func (b barInfo) render(l barLevel) string {
	var s strings.Builder
	if l.graphic > 0 {
		n := int(b.frac * float64(l.graphic))
		fmt.Fprintf(&s, "[%s%s] ", strings.Repeat("#", n), strings.Repeat("-", l.graphic-n))
	}
	fmt.Fprintf(&s, "%3.0f%%", 100*b.frac)
	switch {
	case l.elapsed && l.left:
		fmt.Fprintf(&s, " %s elapsed, %s left", fmtClock(b.elapsed), fmtClock(b.left))
	case l.left:
		fmt.Fprintf(&s, " %s left", fmtClock(b.left))
	}
	for _, w := range b.wls[:l.workloads] {
		fmt.Fprintf(&s, " | %s %s %s/s", w.name, fmtRate(w.achieved), w.unit)
		if w.phase != "" {
			fmt.Fprintf(&s, " (%s)", w.phase)
		}
		if l.targets && w.target >= 0 {
			fmt.Fprintf(&s, " (target %s)", fmtRate(w.target))
		}
	}
	return s.String()
}

// fmtRate prints a rate in at most 6 characters, so the progress line
// stays short: 980, 18400, 123.4k, 10.50M.
func fmtRate(v float64) string {
	switch a := math.Abs(v); {
	case a < 99999.5:
		return fmt.Sprintf("%.0f", v)
	case a < 999.95e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a < 999.995e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	}
	return fmt.Sprintf("%.2fG", v/1e9)
}

// fmtClock prints a duration as 1h02m03s, 2m03s or 3s.
func fmtClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm%02ds", s/3600, s/60%60, s%60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

func unitName(k sources.Kind) string {
	switch k {
	case sources.KV:
		return "ops"
	case sources.Queries:
		return "queries"
	}
	return "rows"
}

// fmtDur prints seconds compactly: 850µs, 12.3ms, 1.20s.
func fmtDur(s float64) string { return pace.FormatSeconds(s) }

// UnitName is what a workload of kind k counts: rows, ops or queries.
func UnitName(k sources.Kind) string { return unitName(k) }
