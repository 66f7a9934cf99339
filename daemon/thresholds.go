package daemon

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
// percentages, and a run phase long enough for drift windows when its
// end is known (DURATION, a finite rate profile, or hard, SOAKD_DURATION).
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
		case known && t.Op != "" && !slices.Contains(opNamesOf(kind), t.Op):
			errs = append(errs, cfgErr(key, "%s: a %s workload has no op %q (its ops: %s)", t, kind, t.Op, strings.Join(opNamesOf(kind), ", ")))
		case t.Metric == thresholds.Achieved && t.Kind == thresholds.Percent && !t.Drift && w.Rate.Max:
			errs = append(errs, cfgErr(key, "%s: RATE=max has no target rate to compare with; give a rate (e.g. achieved>5000/s)", t))
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

// opNamesOf lists the op names a workload of kind k may report (for
// queries: every query type, the source's own list being unknown here).
func opNamesOf(k sources.Kind) []string {
	var out []string
	for _, op := range opsFor(k, nil) {
		out = append(out, opName(op))
	}
	return out
}
