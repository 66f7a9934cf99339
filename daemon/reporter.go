package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sources"
)

// rateSamples keeps one sample per second of a workload's acknowledged
// units, to report the achieved rate over the last 10 s.
const rateSamples = 11

// reporter updates the gauges every second and, every progress interval,
// logs one line per workload (or redraws the progress bar on a terminal).
type reporter struct {
	cfg    *Config
	wls    []*workload
	log    *zap.Logger
	window time.Duration

	mu     sync.Mutex
	state  []*liveState
	bar    *progressbar.ProgressBar
	total  int64 // bar total in units, or seconds when byTime
	byTime bool
}

// liveState is what /status shows of a workload, refreshed by the reporter.
type liveState struct {
	samples [rateSamples]struct {
		at    time.Time
		acked int64
	}
	phase    *phaseStats // the samples' phase; a new phase starts them over
	n        int
	achieved float64
	window   [sources.NumOps + 1]struct{ response, service Quantiles }
	lastErrs int64
	lastWin  time.Time
}

func newReporter(cfg *Config, wls []*workload, log *zap.Logger, barOut io.Writer) *reporter {
	r := &reporter{cfg: cfg, wls: wls, log: log, window: cfg.Progress}
	if r.window <= 0 {
		r.window = 10 * time.Second
	}
	for range wls {
		r.state = append(r.state, &liveState{lastWin: time.Now()})
	}
	if barOut != nil {
		r.bar = r.newBar(barOut)
	}
	return r
}

// newBar returns a bar for finite runs: by units when every workload has a
// finite data set, else by time when a duration is set; nil otherwise.
func (r *reporter) newBar(out io.Writer) *progressbar.ProgressBar {
	var units int64
	finite := true
	for _, w := range r.wls {
		s, ok := w.src.(sources.Sized)
		if !ok {
			finite = false
			break
		}
		units += s.Total()
	}
	desc := "running"
	switch {
	case finite && units > 0:
		r.total = units
	case r.cfg.Duration > 0:
		r.total, r.byTime = int64(r.cfg.Duration.Seconds()), true
	default:
		minD := time.Duration(0)
		for _, w := range r.wls {
			if w.cfg.Duration <= 0 {
				return nil
			}
			minD = max(minD, w.cfg.Duration)
		}
		r.total, r.byTime = int64(minD.Seconds()), true
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(true),
	}
	// The description carries the achieved rate; the bar's own would be
	// wrong, since the bar is set to totals, not incremented.
	return progressbar.NewOptions64(r.total, opts...)
}

func (r *reporter) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.tick(now)
			if now.Sub(last) >= r.window-r.window/10 {
				last = now
				r.progress(now)
			}
		}
	}
}

// tick updates gauges and rate samples.
func (r *reporter) tick(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var done int64
	for i, w := range r.wls {
		st := r.state[i]
		ps := w.cur.Load()
		if ps == nil {
			continue
		}
		w.m.targetRate.Set(w.sched.Load().rateAt(w.since()))
		w.m.lag.Set(w.lagNow().Seconds())
		if st.phase != ps {
			st.phase, st.n, st.achieved, st.lastErrs = ps, 0, 0, 0
		}
		acked := ps.acked.Load()
		done += acked + ps.failedU.Load() + ps.dropped.Load()
		st.samples[st.n%rateSamples].at, st.samples[st.n%rateSamples].acked = now, acked
		st.n++
		oldest := st.samples[st.n%rateSamples]
		if st.n < rateSamples {
			oldest = st.samples[0]
		}
		if dt := now.Sub(oldest.at).Seconds(); dt > 0 {
			st.achieved = float64(acked-oldest.acked) / dt
		}
	}
	if r.bar != nil {
		if r.byTime {
			_ = r.bar.Set64(int64(r.wls[0].elapsed().Seconds()))
		} else {
			_ = r.bar.Set64(done)
		}
		r.bar.Describe(r.describe())
	}
}

func (r *reporter) describe() string {
	var b strings.Builder
	for i, w := range r.wls {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "%s %.0f %s/s", w.name, r.state[i].achieved, unitName(w.kind))
	}
	return b.String()
}

// progress swaps the latency windows and logs a line per workload.
func (r *reporter) progress(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.wls {
		st := r.state[i]
		ps := w.cur.Load()
		if ps == nil {
			continue
		}
		for op := range ps.rec {
			st.window[op].response = ps.rec[op].response.swapWindow()
			st.window[op].service = ps.rec[op].service.swapWindow()
		}
		st.lastWin = now
		if r.cfg.Progress <= 0 || r.bar != nil || w.finished.Load() {
			continue
		}
		errs := ps.errors()
		target := w.sched.Load().rateAt(w.since())
		tgt := "max"
		if w.sched.Load().profile != nil {
			tgt = fmt.Sprintf("%.0f", target)
		}
		var lat strings.Builder
		fields := []zap.Field{zap.String("phase", ps.name),
			zap.Float64("rate", st.achieved), zap.Float64("target_rate", target),
			zap.Int64("errors", errs), zap.Int64("dropped", ps.dropped.Load()),
			zap.Float64("lag_seconds", w.lagNow().Seconds())}
		for op := range st.window {
			q := st.window[op].response
			if q.Count == 0 {
				continue
			}
			name := opName(op)
			fmt.Fprintf(&lat, ", %s p50 %s p99 %s", name, fmtDur(q.P50), fmtDur(q.P99))
			fields = append(fields, zap.Float64(name+"_p50_seconds", q.P50), zap.Float64(name+"_p99_seconds", q.P99))
		}
		phase := ""
		if ps.name != "run" {
			phase = " [" + ps.name + " phase]"
		}
		w.log.Info(fmt.Sprintf("%s%s: %.0f %s/s (target %s)%s, errors %d (+%d), dropped %d",
			w.name, phase, st.achieved, unitName(w.kind), tgt, lat.String(), errs, errs-st.lastErrs, ps.dropped.Load()), fields...)
		st.lastErrs = errs
	}
}

// snapshot copies a workload's live state for /status.
func (r *reporter) snapshot(i int) liveState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.state[i]
}

func (r *reporter) finish() {
	if r.bar != nil {
		_ = r.bar.Finish()
	}
}

func unitName(k sources.Kind) string {
	if k == sources.KV {
		return "ops"
	}
	return "rows"
}

// fmtDur prints seconds compactly: 850µs, 12.3ms, 1.20s.
func fmtDur(s float64) string {
	switch {
	case s == 0:
		return "-"
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2fms", s*1e3)
	}
	return fmt.Sprintf("%.2fs", s)
}
