package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Summary is the end-of-run report (printed like TSBS and YCSB do, and
// written as JSON with --summary-json).
type Summary struct {
	Version   string            `json:"version"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Workloads []WorkloadSummary `json:"workloads"`
}

// WorkloadSummary is one phase of one workload. Its unit counts satisfy
// scheduled = units + failed + dropped + in flight, and in flight is 0
// for a phase that ended.
type WorkloadSummary struct {
	Name string `json:"name"`
	// Phase is run, or load for a KV load phase (LOAD=auto), which gets
	// its own entry before the run's, as YCSB reports load and run apart.
	Phase   string `json:"phase"`
	Source  string `json:"source"`
	Target  string `json:"target"` // password redacted
	Kind    string `json:"kind"`   // series, kv or query
	Rate    string `json:"rate"`
	Workers int    `json:"workers"`
	Batch   int    `json:"batch"`
	// Started is when the phase started (the origin of its schedule).
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// StoppedBy says why the phase ended: end of data set, end of rate
	// profile, DURATION, LOAD_DURATION, SOAKD_DURATION or signal; empty
	// when it never started.
	StoppedBy string `json:"stopped_by"`
	// Units are rows (series), operations (kv) or queries acknowledged.
	Units     int64   `json:"units"`
	UnitName  string  `json:"unit_name"`
	UnitRate  float64 `json:"units_per_second"`
	Values    int64   `json:"values,omitempty"`
	ValueRate float64 `json:"values_per_second,omitempty"`
	Bytes     int64   `json:"bytes"`
	Scheduled int64   `json:"scheduled_units"`
	Failed    int64   `json:"failed_units"`
	Dropped   int64   `json:"dropped_units"`
	// DroppedAtShutdown is the part of Dropped that was still queued when
	// writes were cut at the end of SHUTDOWN_GRACE.
	DroppedAtShutdown int64 `json:"dropped_at_shutdown_units"`
	InFlight          int64 `json:"in_flight_units"`
	// DropCause says what could not keep up when work was dropped (other
	// than at shutdown): soakd's workers or soakd itself.
	DropCause *DropCause       `json:"drop_cause,omitempty"`
	Errors    map[string]int64 `json:"errors"` // failed attempts by class
	Ops       []OpSummary      `json:"ops"`
	// Dispatch is the delay from each batch's intended start to its first
	// send, per unit sent: response latency minus service latency, which
	// is time spent waiting for a free worker plus soakd's own lateness.
	Dispatch Quantiles `json:"dispatch_seconds"`
	// SchedulerCPU is the CPU time the scheduler's thread used (open loop,
	// Linux; 0 otherwise).
	SchedulerCPU float64 `json:"scheduler_cpu_seconds"`
	// Prepared is false when the target never became ready (schema not
	// created, server unreachable) before the run ended.
	Prepared bool `json:"prepared"`
	// LastError is the last write (or, before the target was ready,
	// Prepare) error, when there was one.
	LastError *ErrorSummary `json:"last_error,omitempty"`
	// Failure says why the workload failed, when it did (the run then
	// exits 1). It is set on the workload's last entry.
	Failure *Failure `json:"failure,omitempty"`
	// Thresholds are the workload's THRESHOLDS, judged on its run phase
	// (on the run entry); one that failed makes the run exit 1.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Verify is the phase's read-back checks (VERIFY) and the record of
	// what it wrote, which soakd verify reads.
	Verify *VerifySummary `json:"verify,omitempty"`
	// Extra holds the fields observers add (SummaryAdder), by name:
	// targetwatch's "target". They follow the fields above in the JSON,
	// in the order of their names; a summary read back from JSON leaves
	// them out.
	Extra map[string]any `json:"-"`

	// writesOK and writesFailed count the phase's writes (series batches;
	// KV inserts, updates and read-modify-writes) acknowledged and failed
	// for good: a phase whose every write failed fails the workload.
	writesOK, writesFailed int64
}

// MarshalJSON writes the entry's fields, then Extra's, as
// StatusWorkload does in /status.
func (ws WorkloadSummary) MarshalJSON() ([]byte, error) {
	type plain WorkloadSummary
	b, err := json.Marshal(plain(ws))
	if err != nil {
		return nil, err
	}
	return withExtra(b, ws.Extra, summaryKeys(), "summary")
}

// summaryKeys are the JSON names of WorkloadSummary's own fields, which
// an Extra field may not take.
var summaryKeys = jsonNames[WorkloadSummary]()

// ErrorSummary is an error with its class and when it was seen.
type ErrorSummary struct {
	Text  string    `json:"text"`
	Class string    `json:"class"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Failure explains a failed workload: why, the last error, how many
// attempts failed and over how long.
type Failure struct {
	Reason    string  `json:"reason"`
	LastError string  `json:"last_error,omitempty"`
	Class     string  `json:"class,omitempty"`
	Attempts  int64   `json:"attempts"`
	Seconds   float64 `json:"seconds"`
}

// OpSummary is the latency of one op (write, a KV op or a query type)
// over the phase.
type OpSummary struct {
	Op       string    `json:"op"`
	Count    int64     `json:"count"`
	PerSec   float64   `json:"per_second"`
	Response Quantiles `json:"response_seconds"`
	Service  Quantiles `json:"service_seconds"`
	// Rows is the number of rows the op's acknowledged queries returned
	// (query workloads).
	Rows int64 `json:"rows,omitempty"`
}

// Failed reports the first workload that failed, or else the first whose
// thresholds failed, which makes the run exit 1.
func (s *Summary) Failed() error {
	for _, w := range s.Workloads {
		if f := w.Failure; f != nil {
			return fmt.Errorf("workload %s: %s", w.Name, f.Reason)
		}
	}
	for _, w := range s.Workloads {
		var failed []string
		for _, t := range w.Thresholds {
			if !t.OK {
				failed = append(failed, t.Threshold)
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("workload %s: %d of %d thresholds failed: %s", w.Name, len(failed), len(w.Thresholds), strings.Join(failed, ", "))
		}
	}
	return nil
}

func summarize(version string, started time.Time, cfg *config.Config, wls []*workload, observers []Observer) *Summary {
	s := &Summary{Version: version, Started: started, Seconds: time.Since(started).Seconds()}
	for _, w := range wls {
		w.ready.mu.Lock()
		prepared, prepAttempts, prepErr, fatal, waitStopped := w.ready.prepared, w.ready.attempts, w.ready.lastErr, w.ready.fatal, w.ready.stoppedBy
		w.ready.mu.Unlock()
		phases := w.allPhases()
		var entries []WorkloadSummary
		var acked, failed, attempts int64
		for _, ps := range phases {
			ws := w.phaseSummary(ps)
			ws.Prepared = prepared
			acked += ws.Units
			failed += ws.Failed
			for _, n := range ws.Errors {
				attempts += n
			}
			entries = append(entries, ws)
		}
		if len(entries) == 0 { // never started: report the workload with zeros
			entries = append(entries, WorkloadSummary{
				Name: w.name, Phase: "run", Source: w.cfg.Source, Target: w.cfg.Sink.Redacted, Kind: w.kind.String(),
				Rate: w.cfg.Rate.String(), Workers: w.cfg.Workers, Batch: w.batchSize, UnitName: unitName(w.kind),
				Errors: errorsByClass(nil), Prepared: prepared, StoppedBy: waitStopped,
			})
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
		writeErr := w.lastError()
		switch {
		case writeErr.Text != "":
			last.LastError = errorSummary(writeErr)
		case prepErr.Text != "":
			last.LastError = errorSummary(prepErr)
		}
		switch {
		case fatal != nil:
			last.Failure = &Failure{Reason: w.scrub(fatal.Error())}
			if writeErr.Text == "" && prepErr.Text != "" {
				last.Failure.fill(prepErr, int64(prepAttempts))
			}
		case !prepared && waitStopped == stopSignal:
			// Stopped (SIGINT/SIGTERM) while waiting for a target that
			// had not come up yet: a sidecar whose pod goes away before
			// its database did not fail. The entry says it never became
			// ready, with the last error.
		case !prepared:
			f := &Failure{Reason: "the target never became ready"}
			if prepAttempts == 0 {
				f.Reason += ": its first setup attempt (connect, prepare, probe) did not return before the run ended"
			} else {
				f.Reason += fmt.Sprintf(": %d attempts to reach or prepare it failed", prepAttempts)
				f.fill(prepErr, int64(prepAttempts))
			}
			last.Failure = f
		case acked == 0 && (failed > 0 || attempts > 0):
			f := &Failure{Reason: fmt.Sprintf("%s (%d failed attempts)", errNoProgress, attempts)}
			f.fill(writeErr, attempts)
			last.Failure = f
		case noWriteStored(entries) != nil:
			// Reads and scans may have been answered, but nothing this
			// phase wrote was stored: the target refuses writes.
			e := noWriteStored(entries)
			f := &Failure{Reason: fmt.Sprintf("every write of the %s phase failed (%d writes)", e.Phase, e.writesFailed)}
			f.fill(writeErr, attempts)
			last.Failure = f
		default:
			last.Failure = verifyFailure(entries)
		}
		s.Workloads = append(s.Workloads, entries...)
	}
	if cfg != nil && cfg.Duration > 0 {
		noteHardStop(s, cfg.Duration)
	}
	return s
}

// summaryFields are the fields the run's SummaryAdders add to the
// workload named name, by name; nil when none adds one.
func summaryFields(observers []Observer, name string) map[string]any {
	var out map[string]any
	for _, o := range observers {
		if sa, ok := o.(SummaryAdder); ok {
			if k, v, ok := sa.SummaryField(name); ok {
				if out == nil {
					out = map[string]any{}
				}
				out[k] = v
			}
		}
	}
	return out
}

func (f *Failure) fill(e errorNote, attempts int64) {
	f.LastError, f.Class, f.Attempts = e.Text, string(e.Class), attempts
	if !e.First.IsZero() {
		f.Seconds = e.Last.Sub(e.First).Seconds()
	}
}

func errorSummary(e errorNote) *ErrorSummary {
	return &ErrorSummary{Text: e.Text, Class: string(e.Class), First: e.First, Last: e.Last}
}

// noteHardStop spells out, for a phase cut by SOAKD_DURATION after a load
// phase, that the hard stop also covered the load phase.
func noteHardStop(s *Summary, d time.Duration) {
	for i := range s.Workloads {
		ws := &s.Workloads[i]
		if ws.Phase != "run" || ws.StoppedBy != stopHard {
			continue
		}
		if load := s.Workload(ws.Name, "load"); load != nil {
			ws.StoppedBy = fmt.Sprintf("%s (%v, which also covered the %.1fs load phase)", stopHard, d, load.Seconds)
		}
	}
}

// noWriteStored returns the first phase that wrote and of whose writes
// none was acknowledged, or nil.
func noWriteStored(entries []WorkloadSummary) *WorkloadSummary {
	for i := range entries {
		if e := &entries[i]; e.writesFailed > 0 && e.writesOK == 0 {
			return e
		}
	}
	return nil
}

// errNoProgress is the reason of a workload that sent nothing but errors.
var errNoProgress = errors.New("no write succeeded")

func errorsByClass(c *counts) map[string]int64 {
	m := make(map[string]int64, numClasses)
	var by [numClasses]int64
	if c != nil {
		by = c.byClass()
	}
	for i, cl := range sinks.Classes {
		m[string(cl)] = by[i]
	}
	return m
}

// phaseSummary reports one phase from one snapshot of its counts.
func (w *workload) phaseSummary(ps *phaseStats) WorkloadSummary {
	var hq histQuantiles
	c := ps.snapshotThen(func(h *phaseHist) { hq = h.quantilesOf(totalOf) })
	lat := hq.ops
	secs := ps.elapsed().Seconds()
	ws := WorkloadSummary{
		Name: w.name, Phase: ps.name, Source: w.cfg.Source, Target: w.cfg.Sink.Redacted, Kind: w.kind.String(),
		Rate: ps.rateText(), Workers: w.cfg.Workers, Batch: w.batchSize, Seconds: secs,
		Started: monoBase.Add(ps.begin), StoppedBy: ps.stopReason(),
		Units: c.acked, UnitName: unitName(w.kind), Values: c.values, Bytes: c.bytes,
		Scheduled: c.scheduled, Failed: c.failed, Dropped: c.dropped, DroppedAtShutdown: c.cut,
		InFlight: c.inflight(), Errors: errorsByClass(&c), Dispatch: hq.dispatch,
		SchedulerCPU: time.Duration(ps.schedCPU.Load()).Seconds(),
		Verify:       w.verifySummary(ps, &c),
	}
	for _, op := range []int{writeOp, int(sources.OpInsert), int(sources.OpUpdate), int(sources.OpRMW)} {
		ws.writesOK += c.ops[op].ok
		ws.writesFailed += c.ops[op].failed
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
		o := OpSummary{Op: opName(op), Count: q.response.Count, Response: q.response, Service: q.service, Rows: c.ops[op].rows}
		if secs > 0 {
			o.PerSec = float64(q.response.Count) / secs
		}
		ws.Ops = append(ws.Ops, o)
	}
	ws.DropCause = w.dropCause(&ws)
	return ws
}

// Workload returns the summary of workload name's phase (run or load), or
// nil.
func (s *Summary) Workload(name, phase string) *WorkloadSummary {
	for i := range s.Workloads {
		if w := &s.Workloads[i]; w.Name == name && w.Phase == phase {
			return w
		}
	}
	return nil
}
