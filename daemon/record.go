package daemon

import (
	"github.com/soakd/soakd/report"
)

// writeOutcome is how a batch's write ended.
type writeOutcome struct {
	ok     bool // every unit acknowledged
	stored int  // units stored anyway when the write failed (a partial write)
}

// keySpacer is a KV source that says how many records it has.
type keySpacer interface {
	KeySpace() (loaded, next uint64)
}

// verifySummary reports ps's verification from its counts c.
func (w *workload) verifySummary(ps *phaseStats, c *counts) *report.VerifySummary {
	v := &report.VerifySummary{Fraction: w.cfg.Verify, Checked: c.verify.checked, Skipped: c.verify.skipped,
		Missing: c.verify.failures[0], Mismatch: c.verify.failures[1], Duplicate: c.verify.failures[2],
		Settings: report.SettingsRecord(w.cfg, w.src)}
	if pr := ps.rec; pr != nil {
		v.Streams = pr.Streams()
		v.InDoubtRecords, v.InDoubtOverflow = pr.InDoubt()
	}
	if ks, ok := w.src.(keySpacer); ok {
		v.Records, v.KeySpace = ks.KeySpace()
	}
	return v
}
