package config

import (
	"slices"
	"strings"
	"time"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/thresholds"
)

// validateThresholds parses w's THRESHOLDS into w.Checks and checks them
// against the workload: its kind's ops, a target rate for achieved
// percentages, a run phase long enough for drift windows when its
// end is known (DURATION, a finite rate profile, or hard, SOAKD_DURATION),
// and for target. checks a watch of the target (WATCH_INTERVAL) that
// reads at least once a window.
func (w *Workload) validateThresholds(kind sources.Kind, known bool, hard time.Duration) []error {
	key := Prefix(w.Name) + "THRESHOLDS"
	checks, err := thresholds.Parse(w.Thresholds)
	var errs []error
	for _, e := range settings.Problems(err) {
		errs = append(errs, &settings.Error{Key: key, Err: e})
	}
	if w.DriftWarmup < 0 {
		errs = append(errs, cfgErr(Prefix(w.Name)+"DRIFT_WARMUP", "must not be negative"))
	}
	runLen := w.Duration
	if !w.Rate.Max && w.Rate.Profile != nil {
		if end := w.Rate.Profile.End(); end > 0 && (runLen == 0 || end < runLen) {
			runLen = end
		}
	}
	if hard > 0 && (runLen == 0 || hard < runLen) {
		runLen = hard
	}
	for _, t := range checks {
		switch {
		case known && t.Op != "" && !slices.Contains(OpNamesOf(kind), t.Op):
			errs = append(errs, cfgErr(key, "%s: a %s workload has no op %q (its ops: %s)", t, kind, t.Op, strings.Join(OpNamesOf(kind), ", ")))
		case t.Metric == thresholds.Achieved && t.Kind == thresholds.Percent && !t.Drift && w.Rate.Max:
			errs = append(errs, cfgErr(key, "%s: RATE=max has no target rate to compare with; give a rate (e.g. achieved>5000/s)", t))
		case t.Metric.Target() && w.WatchInterval == 0:
			errs = append(errs, cfgErr(key, "%s: %sWATCH_INTERVAL=0 turns the watch of the target off, so its figures would never be read; set %sWATCH_INTERVAL (e.g. 10s) or drop the check",
				t, Prefix(w.Name), Prefix(w.Name)))
		case t.Metric.Target() && windowOf(t) > 0 && windowOf(t) < w.WatchInterval:
			errs = append(errs, cfgErr(key, "%s: a window of %v is shorter than %sWATCH_INTERVAL (%v): some windows would hold no reading of the target; lengthen the window or shorten the interval",
				t, windowOf(t), Prefix(w.Name), w.WatchInterval))
		case t.Drift && runLen > 0 && runLen < w.DriftWarmup+2*t.DriftWindow():
			errs = append(errs, cfgErr(key, "%s: the run phase (at most %v) is shorter than %sDRIFT_WARMUP (%v) + 2 windows of %v, so nothing would be compared; shorten the window (@10s) or the warm-up",
				t, runLen, Prefix(w.Name), w.DriftWarmup, t.DriftWindow()))
		}
	}
	if len(errs) == 0 {
		w.Checks = checks
	}
	return errs
}

// windowOf is the length of the windows t judges, 0 for the whole run.
func windowOf(t thresholds.Check) time.Duration {
	if t.Drift {
		return t.DriftWindow()
	}
	return t.Window
}

// OpNamesOf lists the op names a workload of kind k may report: write for
// series, every KV op, every query type for queries (the source's own
// list being unknown here). They are among thresholds.OpNames, the
// engine's ops; the engine's tests hold its per-kind ops to this list.
func OpNamesOf(k sources.Kind) []string {
	var out []string
	switch k {
	case sources.Series:
		out = append(out, "write")
	case sources.Queries:
		for t := range sources.NumQueryTypes {
			out = append(out, t.String())
		}
	default:
		for op := range sources.NumOps {
			out = append(out, op.String())
		}
	}
	return out
}
