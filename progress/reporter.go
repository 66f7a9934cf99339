// Package progress shows a run as it goes on the terminal: a progress
// line per workload every PROGRESS_INTERVAL, or, on a terminal and for a
// run with a known end, a one-line progress bar redrawn every second. It
// follows the engine's clock (daemon.Ticker) and reads the workloads
// through the engine's read model (Phase.Snapshot) and what package live
// samples of them.
package progress

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/live"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// Reporter, every second, redraws the progress bar; every progress
// interval it logs one line per workload (unless a bar shows progress
// instead). It is an observer of the run (daemon.Deps.Observers).
type Reporter struct {
	cfg     *config.Config
	log     *zap.Logger
	console *Console // nil: no bar
	live    *live.Sampler
	own     bool // live is the reporter's own, which it drives

	wls      []*daemon.Handle
	logs     []*zap.Logger // each workload's
	lastErrs []int64       // errors at each workload's last progress line
	started  time.Time     // when the run started
	resized  chan struct{} // closed when the resize watcher has ended; nil: none
}

// New returns a reporter logging to log. console, when not nil, is the
// terminal the log writes through: a run with a known end shows a bar
// there instead of progress lines. lv is the run's sampler, among the
// run's observers before the reporter; when nil the reporter keeps one
// of its own.
func New(cfg *config.Config, log *zap.Logger, console *Console, lv *live.Sampler) *Reporter {
	r := &Reporter{cfg: cfg, log: log, console: console, started: time.Now(), live: lv}
	if lv == nil {
		r.live, r.own = live.New(), true
	}
	return r
}

// Opened tells the reporter's own sampler, when it keeps one: the
// reporter follows the workloads from Started.
func (r *Reporter) Opened(w *daemon.Handle) error {
	if r.own {
		return r.live.Opened(w)
	}
	return nil
}

// PhaseBegun tells the reporter's own sampler, when it keeps one: the
// progress line names the phase running.
func (r *Reporter) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	if r.own {
		r.live.PhaseBegun(w, p)
	}
}

// PhaseEnded does nothing (see PhaseBegun).
func (r *Reporter) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Started follows ws; a bar shows only for a run with a known end.
func (r *Reporter) Started(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	if r.own {
		r.live.Started(ctx, ws, stop)
	}
	r.wls = ws
	r.started = time.Now()
	r.lastErrs = make([]int64, len(ws))
	r.logs = make([]*zap.Logger, len(ws))
	for i, w := range ws {
		r.logs[i] = r.log.With(zap.String("workload", w.Name()))
	}
	if r.console != nil && !r.bounded() {
		r.console = nil
	}
	if r.console == nil || !r.console.terminal() {
		return
	}
	resized := make(chan os.Signal, 1)
	notifyResize(resized)
	r.resized = make(chan struct{})
	go func() {
		defer close(r.resized)
		defer signal.Stop(resized)
		for {
			select {
			case <-ctx.Done():
				return
			case <-resized:
				// Redraw at once at the new width: a bar wider than the
				// terminal wraps, and the next frame could not erase it.
				r.console.showBar(r.barLine(time.Now(), false))
			}
		}
	}()
}

// Tick redraws the bar and, when a progress interval has ended, logs a
// line per workload, once its own sampler (when it keeps one) has
// sampled this tick.
func (r *Reporter) Tick(at time.Time, intervalEnded bool) {
	if r.own {
		r.live.Tick(at, intervalEnded)
	}
	if r.console != nil {
		r.console.showBar(r.barLine(at, false))
	}
	if intervalEnded {
		r.progress()
	}
}

// progress logs a line per workload, with the latency window the engine
// has just closed.
func (r *Reporter) progress() {
	if r.cfg.Progress <= 0 || r.console != nil {
		return
	}
	for i, w := range r.wls {
		l := r.live.Live(w)
		p := w.Phase()
		if !l.Current || p == nil || w.Finished() {
			continue
		}
		c := p.Snapshot()
		var errs int64
		for _, o := range c.Ops {
			for _, e := range o.Errors {
				errs += e
			}
		}
		// The target over the achieved rate's window, so the two compare.
		target := l.Target
		now, paced := w.TargetRate()
		if target < 0 {
			target = now
		}
		tgt := "max"
		if paced {
			tgt = fmt.Sprintf("%.0f", target)
		}
		var lat strings.Builder
		fields := []zap.Field{zap.String("phase", p.Name()),
			zap.Float64("rate", l.Achieved), zap.Float64("target_rate", target),
			zap.Int64("scheduled", c.Scheduled), zap.Int64("acked", c.Acked), zap.Int64("failed", c.Failed),
			zap.Int64("dropped", c.Dropped), zap.Int64("in_flight", c.InFlight()),
			zap.Int64("errors", errs), zap.Float64("lag_seconds", w.Lag().Seconds())}
		for _, o := range l.Window.Ops {
			q := o.Response
			fmt.Fprintf(&lat, ", %s p50 %s p99 %s", o.Op, fmtDur(q.P50), fmtDur(q.P99))
			fields = append(fields, zap.Float64(o.Op+"_p50_seconds", q.P50), zap.Float64(o.Op+"_p99_seconds", q.P99))
		}
		if q := l.Window.Dispatch; q.Count > 0 {
			fmt.Fprintf(&lat, ", dispatch p50 %s p99 %s", fmtDur(q.P50), fmtDur(q.P99))
			fields = append(fields, zap.Float64("dispatch_p50_seconds", q.P50), zap.Float64("dispatch_p99_seconds", q.P99))
		}
		phase := ""
		if p.Name() != "run" {
			phase = " [" + p.Name() + " phase]"
		}
		r.logs[i].Info(fmt.Sprintf("%s%s: %.0f %s/s (target %s)%s, errors %d (+%d), dropped %d",
			w.Name(), phase, l.Achieved, report.UnitName(w.Kind()), tgt, lat.String(), errs, errs-r.lastErrs[i], c.Dropped), fields...)
		r.lastErrs[i] = errs
	}
}

// Finished draws the bar's last frame: 100 % when the run ran its
// course, else how far it got before it was stopped (signal,
// configuration error, failed threshold).
func (r *Reporter) Finished(ranItsCourse bool) {
	if r.resized != nil {
		<-r.resized
	}
	if r.console == nil {
		return
	}
	r.console.endBar(r.barLine(time.Now(), ranItsCourse))
}

// bounded reports whether the run has a known end: SOAKD_DURATION, or
// every workload a finite data set, a DURATION or a finite rate profile.
func (r *Reporter) bounded() bool {
	if r.cfg.Duration > 0 {
		return true
	}
	for _, w := range r.wls {
		if _, _, ok := workloadProgress(w); !ok {
			return false
		}
	}
	return true
}

// workloadProgress is how far a workload's run phase is (0..1) and how
// long it has left; ok is false when it has no known end.
func workloadProgress(w *daemon.Handle) (frac float64, left time.Duration, ok bool) {
	if w.Finished() {
		switch p := w.Phase(); {
		case p == nil || p.Name() != "run":
			return 0, 0, true // stopped before its run phase began
		case p.Completed():
			return 1, 0, true
		}
		// stopped early: how far its run phase got, below
	}
	cfg := w.Config()
	runLen := cfg.Duration
	if !cfg.Rate.Max {
		if end := cfg.Rate.Profile.End(); end > 0 && (runLen == 0 || end < runLen) {
			runLen = end
		}
	}
	var total int64
	if s, ok := w.Source().(sources.Sized); ok {
		total = s.Total()
	}
	if runLen == 0 && total == 0 {
		return 0, 0, false
	}
	p := w.Phase()
	if p == nil || p.Name() != "run" {
		return 0, runLen, true // preparing or loading: the run has not begun
	}
	if runLen > 0 {
		el := min(p.Elapsed(), runLen)
		frac, left = float64(el)/float64(runLen), runLen-el
	}
	if total > 0 {
		c := p.Snapshot()
		done := c.Acked + c.Failed + c.Dropped
		f := math.Min(float64(done)/float64(total), 1)
		var l time.Duration
		if rate := float64(done) / p.Elapsed().Seconds(); rate > 0 {
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
func (r *Reporter) barLine(now time.Time, done bool) string {
	elapsed := now.Sub(r.started)
	frac, left := 1.0, time.Duration(0)
	for _, w := range r.wls {
		f, l, ok := workloadProgress(w)
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
	for _, w := range r.wls {
		l := r.live.Live(w)
		wb := barWorkload{name: w.Name(), unit: report.UnitName(w.Kind()), achieved: l.Achieved, target: l.Target}
		if p := w.Phase(); p != nil && p.Name() != "run" {
			wb.phase = p.Name()
		}
		b.wls = append(b.wls, wb)
	}
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

// fmtDur prints seconds compactly: 850µs, 12.3ms, 1.20s.
func fmtDur(s float64) string { return pace.FormatSeconds(s) }
