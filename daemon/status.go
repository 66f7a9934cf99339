package daemon

import "github.com/soakd/soakd/report"

func statusCounts(c *counts) report.StatusCounts {
	return report.StatusCounts{Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped,
		InFlight: c.inflight(), Errors: errorsByClass(c)}
}

// phaseCounts are statusCounts of ps's snapshot c, with its read-back
// checks when the phase has them.
func phaseCounts(ps *phaseStats, c *counts) report.StatusCounts {
	sc := statusCounts(c)
	if ps.verify != nil {
		v := &c.verify
		sc.Verify = &report.VerifyCounts{Checked: v.checked, Missing: v.failures[0], Mismatch: v.failures[1],
			Duplicate: v.failures[2], Skipped: v.skipped}
	}
	return sc
}

func errorsByClass(c *counts) map[string]int64 {
	by := c.byClass()
	return report.ErrorsByClass(by[:])
}
