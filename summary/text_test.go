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
