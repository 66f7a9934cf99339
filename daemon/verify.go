package daemon

import (
	"github.com/soakd/soakd/sources"
)

// VERIFY, continuous read-back, is a feature (package readback): a
// Verifier among Run's observers follows each workload's batches and
// counts its checks into each phase's ReadBack. The engine keeps the
// setting and the counts (with the phase's other counts, so /status, the
// metrics, the history and the summary show them as they show the
// rest); report.Conclude makes a read-back that found acknowledged units
// missing, changed or repeated the run's failure.

// Failure kinds, as soakd_verify_failures_total's kind label says them.
var verifyKinds = [...]sources.Verdict{sources.Missing, sources.Mismatch, sources.Duplicate}

// verifyCounts are VERIFY's checks of a phase's acknowledged units.
type verifyCounts struct {
	checked  int64 // units read back and compared
	failures [len(verifyKinds)]int64
	skipped  int64 // picked but not checked: the checker was behind, a read failed, or the run ended first
}

func (v *verifyCounts) add(o *verifyCounts) {
	v.checked += o.checked
	for i := range v.failures {
		v.failures[i] += o.failures[i]
	}
	v.skipped += o.skipped
}
