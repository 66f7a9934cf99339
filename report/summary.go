// Package report holds what a run reports of itself: the end-of-run
// summary (printed, and written as JSON with --summary-json), the /status
// document, the thresholds' verdicts, the record of what each phase wrote
// (which soakd verify reads), and the latency figures in them (Quantiles,
// and Buckets as /metrics exports them). The engine (package daemon)
// fills them; the features that show a run (serve, summary, history, the
// web report) read them. It holds schemas and the pure rules on them
// (why a workload failed, what dropped work), never a run's state.
package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

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
	// Notes say what the target made of the workload's settings that
	// its figures depend on (sinks.Noter): a dialect=timescaledb target
	// that got plain tables.
	Notes []string `json:"notes,omitempty"`
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
	// SchedulerCPU is the CPU time the scheduler used (open loop, Linux;
	// 0 otherwise), summed over its spans between waits.
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
	// Extra holds the fields observers add (daemon.SummaryAdder), by
	// name: targetwatch's "target". They follow the fields above in the
	// JSON, in the order of their names; a summary read back from JSON
	// leaves them out.
	Extra map[string]any `json:"-"`

	// WritesOK and WritesFailed count the phase's writes (series batches;
	// KV inserts, updates and read-modify-writes) acknowledged and failed
	// for good: a phase whose every write failed fails the workload
	// (Conclude). They are not in the JSON.
	WritesOK, WritesFailed int64 `json:"-"`
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
	// Setup says the error is of the wait for the target before the
	// first phase (connect, prepare, probe), not of a write.
	Setup bool `json:"setup,omitempty"`
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

// Quantiles is a latency summary in seconds.
type Quantiles struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
	// StdDev is the standard deviation (tsbs_run_queries reports it).
	StdDev float64 `json:"stddev"`
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
		if failed := w.FailedThresholds(); len(failed) > 0 {
			return fmt.Errorf("workload %s: %d of %d thresholds failed: %s", w.Name, len(failed), len(w.Thresholds), strings.Join(failed, ", "))
		}
	}
	return nil
}

// FailedThresholds are the thresholds of the entry that failed, as
// written without spaces, in the order of THRESHOLDS.
func (ws *WorkloadSummary) FailedThresholds() []string {
	var failed []string
	for _, t := range ws.Thresholds {
		if !t.OK {
			failed = append(failed, t.Threshold)
		}
	}
	return failed
}

// ThresholdStop is the stopped_by of a phase that a failed threshold
// marked ! (threshold, as written without spaces) of workload stopped.
func ThresholdStop(threshold, workload string) string {
	return fmt.Sprintf("threshold %s of workload %s failed", threshold, workload)
}

// StoppedByThreshold is the threshold marked ! whose failure stopped the
// phase before its end (its stopped_by is ThresholdStop's), or "": a
// phase that ran its course, or one another workload's threshold stopped.
func (ws *WorkloadSummary) StoppedByThreshold() string {
	for _, t := range ws.Thresholds {
		if t.Abort && !t.OK && ws.StoppedBy == ThresholdStop(t.Threshold, ws.Name) {
			return t.Threshold
		}
	}
	return ""
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

// UnitName is what a workload of kind k counts (a summary entry's
// unit_name, /status's unit): rows, ops or queries.
func UnitName(k sources.Kind) string {
	switch k {
	case sources.KV:
		return "ops"
	case sources.Queries:
		return "queries"
	}
	return "rows"
}
