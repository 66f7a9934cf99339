package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/soakd/soakd/report"
)

// "errors: none" is printed only for a phase of a workload that did not
// fail: beside a failure or a failed threshold that has no failed
// operation behind it, the summary says the workload failed.
func TestErrorsNoneNeverBesideFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    report.WorkloadSummary
		none bool
	}{
		{"clean", report.WorkloadSummary{Phase: "run"}, true},
		{"failure", report.WorkloadSummary{Phase: "run", Failure: &report.Failure{Reason: "acknowledged rows missing"}}, false},
		{"threshold", report.WorkloadSummary{Phase: "run", Thresholds: []report.ThresholdResult{{Threshold: "p99<1ms", OK: false}}}, false},
	} {
		var out bytes.Buffer
		WriteText(&out, &report.Summary{Workloads: []report.WorkloadSummary{tc.w}})
		if got := strings.Contains(out.String(), "errors: none"); got != tc.none {
			t.Errorf("%s: errors: none printed %v, want %v\n%s", tc.name, got, tc.none, out.String())
		}
		if !tc.none && !strings.Contains(out.String(), "errors (failed attempts): 0, but the workload failed (below)") {
			t.Errorf("%s:\n%s", tc.name, out.String())
		}
	}
}

// A last error of the wait for the target, beside "errors: none" after a
// target that came up late, says it is the setup's; a write's is a last
// error. Bug caught: "errors: none" followed by "last error (connection
// ...)", which read as a contradiction.
func TestLastSetupErrorSaysSo(t *testing.T) {
	for _, setup := range []bool{true, false} {
		w := report.WorkloadSummary{Phase: "run", LastError: &report.ErrorSummary{Text: "connection refused", Class: "connection", Setup: setup}}
		if !setup {
			w.Errors = map[string]int64{"connection": 1}
		}
		var out bytes.Buffer
		WriteText(&out, &report.Summary{Workloads: []report.WorkloadSummary{w}})
		if got := strings.Contains(out.String(), "last setup error (waiting for the target) (connection, "); got != setup {
			t.Errorf("setup %v: says it is the setup's: %v\n%s", setup, got, out.String())
		}
	}
}
