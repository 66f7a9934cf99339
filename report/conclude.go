package report

import (
	"errors"
	"fmt"
	"time"
)

// Setup is how a workload's setup (connect, prepare, probe) and its
// writes ended, for Conclude.
type Setup struct {
	// Prepared is true when the target became ready.
	Prepared bool
	// Attempts are the setup attempts that failed; SetupError the last of
	// them, WriteError the last failed write (Text "" when none failed).
	Attempts               int
	SetupError, WriteError ErrorSummary
	// Fatal is true when the workload stopped for good, FatalReason why
	// (secrets scrubbed).
	Fatal       bool
	FatalReason string
	// StoppedBySignal is true when the run was stopped (SIGINT/SIGTERM)
	// while the workload waited for its target.
	StoppedBySignal bool
}

// errNoProgress is the reason of a workload that sent nothing but errors.
var errNoProgress = errors.New("no write succeeded")

// Conclude says, on a workload's last entry of entries (its phases), its
// last error and why it failed, when it did: the run then exits 1.
func Conclude(entries []WorkloadSummary, s Setup) {
	var acked, failed, attempts int64
	for _, e := range entries {
		acked += e.Units
		failed += e.Failed
		for _, n := range e.Errors {
			attempts += n
		}
	}
	last := &entries[len(entries)-1]
	switch {
	case s.WriteError.Text != "":
		last.LastError = errorSummary(s.WriteError)
	case s.SetupError.Text != "":
		last.LastError = errorSummary(s.SetupError)
		last.LastError.Setup = true
	}
	switch {
	case s.Fatal:
		last.Failure = &Failure{Reason: s.FatalReason}
		if s.WriteError.Text == "" && s.SetupError.Text != "" {
			last.Failure.fill(s.SetupError, int64(s.Attempts))
		}
	case !s.Prepared && s.StoppedBySignal:
		// Stopped (SIGINT/SIGTERM) while waiting for a target that
		// had not come up yet: a sidecar whose pod goes away before
		// its database did not fail. The entry says it never became
		// ready, with the last error.
	case !s.Prepared:
		f := &Failure{Reason: "the target never became ready"}
		if s.Attempts == 0 {
			f.Reason += ": its first setup attempt (connect, prepare, probe) did not return before the run ended"
		} else {
			f.Reason += fmt.Sprintf(": %d attempts to reach or prepare it failed", s.Attempts)
			f.fill(s.SetupError, int64(s.Attempts))
		}
		last.Failure = f
	case acked == 0 && (failed > 0 || attempts > 0):
		f := &Failure{Reason: fmt.Sprintf("%s (%d failed attempts)", errNoProgress, attempts)}
		f.fill(s.WriteError, attempts)
		last.Failure = f
	case noWriteStored(entries) != nil:
		// Reads and scans may have been answered, but nothing this
		// phase wrote was stored: the target refuses writes.
		e := noWriteStored(entries)
		f := &Failure{Reason: fmt.Sprintf("every write of the %s phase failed (%d writes)", e.Phase, e.WritesFailed)}
		f.fill(s.WriteError, attempts)
		last.Failure = f
	default:
		last.Failure = verifyFailure(entries)
	}
}

func (f *Failure) fill(e ErrorSummary, attempts int64) {
	f.LastError, f.Class, f.Attempts = e.Text, e.Class, attempts
	if !e.First.IsZero() {
		f.Seconds = e.Last.Sub(e.First).Seconds()
	}
}

func errorSummary(e ErrorSummary) *ErrorSummary { return &e }

// NoteHardStop spells out, for a run phase cut by SOAKD_DURATION (d;
// hardStop is its stopped_by) after a load phase, that the hard stop also
// covered the load phase.
func (s *Summary) NoteHardStop(hardStop string, d time.Duration) {
	for i := range s.Workloads {
		ws := &s.Workloads[i]
		if ws.Phase != "run" || ws.StoppedBy != hardStop {
			continue
		}
		if load := s.Workload(ws.Name, "load"); load != nil {
			ws.StoppedBy = fmt.Sprintf("%s (%v, which also covered the %.1fs load phase)", hardStop, d, load.Seconds)
		}
	}
}

// noWriteStored returns the first phase that wrote and of whose writes
// none was acknowledged, or nil.
func noWriteStored(entries []WorkloadSummary) *WorkloadSummary {
	for i := range entries {
		if e := &entries[i]; e.WritesFailed > 0 && e.WritesOK == 0 {
			return e
		}
	}
	return nil
}

// verifyFailure is the failure of a workload whose read-back found
// acknowledged units missing, changed or repeated, or nil.
func verifyFailure(entries []WorkloadSummary) *Failure {
	var checked, missing, mismatch, dup int64
	for _, e := range entries {
		if v := e.Verify; v != nil {
			checked += v.Checked
			missing += v.Missing
			mismatch += v.Mismatch
			dup += v.Duplicate
		}
	}
	if missing+mismatch+dup == 0 {
		return nil
	}
	reason := fmt.Sprintf("read-back of acknowledged units failed: %d missing, %d mismatched, %d duplicated of %d checked (VERIFY)",
		missing, mismatch, dup, checked)
	if dup > 0 {
		reason += duplicatesHint
	}
	return &Failure{Reason: reason}
}

// duplicatesHint follows a read-back that found rows stored twice. The
// commonest cause is no fault of the target: a row of this run at a
// device and time where the table held one already, as a run with
// START=now writes after an earlier one whose simulated clock ran ahead
// of the wall clock.
const duplicatesHint = "; a duplicated row is stored more than once at its device and time, and rows the tables held before count too: " +
	"an earlier run's (with START=now a run's simulated clock runs ahead of the wall clock, and the next run starts among its rows) " +
	"or another workload's writing the same tables; write into empty tables (a fresh schema= or table_prefix= of a postgres:// target, " +
	"another database or bucket), a START past the earlier run's newest row, or the target's dedup=true"
