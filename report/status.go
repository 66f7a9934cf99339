package report

import (
	"encoding/json"

	"github.com/soakd/soakd/sinks"
)

// This file holds the schema of the /status document (package serve
// serves it): the engine's counts as the HTTP API shows them.

// StatusWorkload is one workload in /status. Its counts are the current
// phase's, read in one snapshot: scheduled = acked + failed + dropped +
// in_flight. Phases lists every phase started so far.
type StatusWorkload struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"`
	Target     string  `json:"target"`
	Phase      string  `json:"phase"`
	State      string  `json:"state"` // starting, running, paused, stopping, done
	Rate       string  `json:"rate"`
	TargetRate float64 `json:"target_rate"`
	Achieved   float64 `json:"achieved_rate"` // over the last 10 s
	Unit       string  `json:"unit"`
	StatusCounts
	// Latency is the current phase's response and service latency per op
	// over the last window (PROGRESS_INTERVAL, or 10 s; the window so far
	// in a phase younger than that): op is write for series, read,
	// update, insert, scan, rmw for KV.
	Latency map[string]OpLatency `json:"latency"`
	// Dispatch is the delay from each batch's intended start to its first
	// send over the same window: waiting for a free worker plus soakd's
	// own lateness (service fields unused).
	Dispatch   OpLatency `json:"dispatch"`
	LagSeconds float64   `json:"lag_seconds"`
	Workers    int       `json:"workers"`
	Ready      bool      `json:"ready"`
	// Waiting is what the workload waits for while its target is not up
	// (state starting): absent once it is, as /readyz says.
	Waiting   *StatusWaiting `json:"waiting,omitempty"`
	LastError *ErrorSummary  `json:"last_error,omitempty"`
	// DropCause is the current phase's, when it has dropped work.
	DropCause *DropCause    `json:"drop_cause,omitempty"`
	Phases    []StatusPhase `json:"phases"`
	// Thresholds are the workload's THRESHOLDS judged on its run phase so
	// far, as soakd_threshold_ok and soakd_threshold_value show them.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Extra holds the fields observers add (daemon.StatusAdder), by name:
	// soakd capacity's "capacity". They follow the fields above.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the workload's fields, then Extra's.
func (s StatusWorkload) MarshalJSON() ([]byte, error) {
	type plain StatusWorkload
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	return withExtra(b, s.Extra, statusKeys(), "status")
}

// statusKeys are the JSON names of StatusWorkload's own fields, which an
// Extra field may not take.
var statusKeys = jsonNames[StatusWorkload]()

// StatusCounts are a phase's unit counts and failed attempts by class.
type StatusCounts struct {
	Scheduled int64            `json:"scheduled"`
	Acked     int64            `json:"acked"`
	Failed    int64            `json:"failed"`
	Dropped   int64            `json:"dropped"`
	InFlight  int64            `json:"in_flight"`
	Errors    map[string]int64 `json:"errors"`
	// Verify is the phase's read-back checks, when VERIFY is on.
	Verify *VerifyCounts `json:"verify,omitempty"`
}

// VerifyCounts are a phase's read-back checks (VERIFY) of acknowledged
// units: as soakd_verify_checked_total, soakd_verify_failures_total by
// kind and soakd_verify_skipped_total count them.
type VerifyCounts struct {
	Checked   int64 `json:"checked"`
	Missing   int64 `json:"missing"`
	Mismatch  int64 `json:"mismatch"`
	Duplicate int64 `json:"duplicate"`
	Skipped   int64 `json:"skipped"`
}

// Add adds o's counts to v's (a workload's over its phases).
func (v *VerifyCounts) Add(o *VerifyCounts) {
	v.Checked += o.Checked
	v.Missing += o.Missing
	v.Mismatch += o.Mismatch
	v.Duplicate += o.Duplicate
	v.Skipped += o.Skipped
}

// Failures is how many checks failed, of every kind.
func (v *VerifyCounts) Failures() int64 { return v.Missing + v.Mismatch + v.Duplicate }

// StatusPhase is one phase of a workload in /status.
type StatusPhase struct {
	Name      string  `json:"name"`
	Rate      string  `json:"rate"`
	Seconds   float64 `json:"seconds"`
	StoppedBy string  `json:"stopped_by,omitempty"` // empty while it runs
	StatusCounts
}

// OpLatency is an op's latency quantiles in /status.
type OpLatency struct {
	Count      int64   `json:"count"`
	P50        float64 `json:"p50_seconds"`
	P99        float64 `json:"p99_seconds"`
	ServiceP50 float64 `json:"service_p50_seconds"`
	ServiceP99 float64 `json:"service_p99_seconds"`
}

// Status is the /status document.
type Status struct {
	Version   string           `json:"version"`
	Uptime    float64          `json:"uptime_seconds"`
	Workloads []StatusWorkload `json:"workloads"`
}

// StatusWaiting is what a workload that has not started waits for, in
// /status: the setup step tried or waited for and, once an attempt has
// failed, how many did, when the next one runs and the last error.
type StatusWaiting struct {
	Target string `json:"target"` // redacted
	Step   string `json:"step"`   // connect, prepare, check for loaded records
	// Seconds since the first setup attempt.
	Seconds  float64 `json:"seconds"`
	Attempts int     `json:"attempts"` // failed attempts
	// NextRetrySeconds is the time to the next attempt: 0 while one runs.
	NextRetrySeconds float64 `json:"next_retry_seconds"`
	LastError        string  `json:"last_error,omitempty"` // scrubbed of secrets
	Class            string  `json:"class,omitempty"`      // the last error's
}

// IdleCounts are the counts /status shows of a workload before its first
// phase: zeros, with every error class.
func IdleCounts() StatusCounts { return StatusCounts{Errors: ErrorsByClass(nil)} }

// ErrorsByClass names byClass's failed attempts (in the order of
// sinks.Classes) by class, every class present; nil byClass is zeros.
func ErrorsByClass(byClass []int64) map[string]int64 {
	m := make(map[string]int64, len(sinks.Classes))
	for i, cl := range sinks.Classes {
		var n int64
		if i < len(byClass) {
			n = byClass[i]
		}
		m[string(cl)] = n
	}
	return m
}
