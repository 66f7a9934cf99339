package web_test

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

// A run whose threshold failed (exit 1) says so in the report, with each
// threshold's verdict and what was measured, escaped; the report showed
// none and looked like a passing run.
func TestReportThresholds(t *testing.T) {
	t.Parallel()
	p99, errs := 0.00854, 0.0
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "iot", Phase: "run", Kind: "series", UnitName: "rows", Prepared: true,
		Thresholds: []report.ThresholdResult{
			{Threshold: "p99<1ms", Value: &p99, Unit: "seconds"},
			{Threshold: "errors<0.1%", OK: true, Value: &errs, Unit: "ratio"},
		},
	}}}
	b, err := web.Report(web.ReportData{Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`<strong>THRESHOLDS FAILED: 1 of 2</strong>`,
		`<tr data-workload="iot" data-ok="false"><td>iot</td><td>p99&lt;1ms</td><td data-field="verdict"><strong>✗ FAILED</strong></td><td>8.54ms</td></tr>`,
		`<tr data-workload="iot" data-ok="true"><td>iot</td><td>errors&lt;0.1%</td><td data-field="verdict">✓ passed</td>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the report lacks %s", want)
		}
	}

	// Without thresholds there is no section for them.
	sum.Workloads[0].Thresholds = nil
	if b, err = web.Report(web.ReportData{Summary: sum}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Thresholds") || strings.Contains(string(b), "THRESHOLDS") {
		t.Errorf("a run without thresholds shows a thresholds section")
	}
}
