package daemon

import (
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// summarize reports every workload's phases, and why a workload failed
// when it did (report.Conclude).
func summarize(version string, started time.Time, cfg *config.Config, wls []*workload, observers []Observer) *report.Summary {
	s := &report.Summary{Version: version, Started: started, Seconds: time.Since(started).Seconds()}
	for _, w := range wls {
		setup, waitStopped := w.ready.Outcome()
		setup.StoppedBySignal = waitStopped == stopSignal
		var entries []report.WorkloadSummary
		for _, ps := range w.allPhases() {
			ws := w.phaseSummary(ps)
			ws.Prepared = setup.Prepared
			for _, o := range observers {
				if s, ok := o.(PhaseSummarizer); ok {
					s.SummarizePhase(w.handle, &Phase{ps}, &ws)
				}
			}
			entries = append(entries, ws)
		}
		if len(entries) == 0 { // never started: report the workload with zeros
			entries = append(entries, report.WorkloadSummary{
				Name: w.name, Phase: "run", Source: w.cfg.Source, Target: w.cfg.Sink.Redacted, Kind: w.kind.String(),
				Rate: w.cfg.Rate.String(), Workers: w.cfg.Workers, Batch: w.batchSize, UnitName: report.UnitName(w.kind),
				Errors: report.ErrorsByClass(nil), Prepared: setup.Prepared, StoppedBy: waitStopped,
			})
		}
		if n, ok := w.sink.(sinks.Noter); ok {
			if notes := n.Notes(); len(notes) > 0 {
				for i := range entries {
					entries[i].Notes = notes
				}
			}
		}
		last := &entries[len(entries)-1]
		last.Extra = summaryFields(observers, w.name)
		if verdicts := verdictsOf(observers, w.name, true); verdicts != nil {
			judged := last
			for i := range entries {
				if entries[i].Phase == "run" {
					judged = &entries[i]
				}
			}
			judged.Thresholds = verdicts
		}
		setup.WriteError = errorSummary(w.lastError())
		report.Conclude(entries, setup)
		s.Workloads = append(s.Workloads, entries...)
	}
	if cfg != nil && cfg.Duration > 0 {
		s.NoteHardStop(stopHard, cfg.Duration)
	}
	return s
}

// summaryFields are the fields the run's SummaryAdders add to the
// workload named name, by name; nil when none adds one.
func summaryFields(observers []Observer, name string) map[string]any {
	return addedFields(observers, func(a SummaryAdder) (string, any, bool) { return a.SummaryField(name) })
}

// addedFields are the fields the observers that are an A add, by name
// (field asks one); nil when none adds one.
func addedFields[A any](observers []Observer, field func(A) (string, any, bool)) map[string]any {
	var out map[string]any
	for _, o := range observers {
		if a, ok := o.(A); ok {
			if k, v, ok := field(a); ok {
				if out == nil {
					out = map[string]any{}
				}
				out[k] = v
			}
		}
	}
	return out
}

func errorSummary(e errorNote) report.ErrorSummary {
	return report.ErrorSummary{Text: e.Text, Class: string(e.Class), First: e.First, Last: e.Last}
}

// phaseSummary reports one phase from one snapshot of its counts.
func (w *workload) phaseSummary(ps *phaseStats) report.WorkloadSummary {
	var hq histQuantiles
	c := ps.snapshotThen(func(h *phaseHist) { hq = h.quantiles() })
	lat := hq.ops
	secs := ps.elapsed().Seconds()
	ws := report.WorkloadSummary{
		Name: w.name, Phase: ps.name, Source: w.cfg.Source, Target: w.cfg.Sink.Redacted, Kind: w.kind.String(),
		Rate: ps.rateText(), Workers: w.cfg.Workers, Batch: w.batchSize, Seconds: secs,
		Started: monoBase.Add(ps.begin), StoppedBy: ps.stopReason(),
		Units: c.acked, UnitName: report.UnitName(w.kind), Values: c.values, Bytes: c.bytes,
		Scheduled: c.scheduled, Failed: c.failed, Dropped: c.dropped, DroppedAtShutdown: c.cut,
		InFlight: c.inflight(), Errors: errorsByClass(&c), Dispatch: hq.dispatch,
		SchedulerCPU: time.Duration(ps.schedCPU.Load()).Seconds(),
		Verify: &report.VerifySummary{Fraction: w.cfg.Verify, Checked: c.verify.checked, Skipped: c.verify.skipped,
			Missing: c.verify.failures[0], Mismatch: c.verify.failures[1], Duplicate: c.verify.failures[2]},
	}
	for _, op := range []int{writeOp, int(sources.OpInsert), int(sources.OpUpdate), int(sources.OpRMW)} {
		ws.WritesOK += c.ops[op].ok
		ws.WritesFailed += c.ops[op].failed
	}
	if secs > 0 {
		ws.UnitRate = float64(ws.Units) / secs
		ws.ValueRate = float64(ws.Values) / secs
	}
	for op := range lat {
		q := lat[op]
		if q.response.Count == 0 {
			continue
		}
		o := report.OpSummary{Op: opName(op), Count: q.response.Count, Response: q.response, Service: q.service, Rows: c.ops[op].rows}
		if secs > 0 {
			o.PerSec = float64(q.response.Count) / secs
		}
		ws.Ops = append(ws.Ops, o)
	}
	ws.DropCause = ws.DiagnoseDrops(ps.busy(w.since()).Seconds(), c.waited)
	return ws
}
