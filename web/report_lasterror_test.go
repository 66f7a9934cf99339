package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

// A workload stopped while it still waited for its target says so in the
// report's summary table, with the last setup error (escaped), as the
// text summary does: not only "signal" and errors "none".
func TestReportNeverReady(t *testing.T) {
	t.Parallel()
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "kv", Phase: "run", Kind: "kv", UnitName: "ops", StoppedBy: "signal",
		Target: "redis://u:xxxxx@cache:6379/0",
		LastError: &report.ErrorSummary{Text: `connection: dial tcp <cache>: connect: connection refused`,
			Class: "connection", Last: time.Unix(0, 0), Setup: true},
	}}}
	b, err := web.Report(web.ReportData{Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<span data-field="never_ready">the target never became ready (stopped while waiting for it)</span>`,
		`<span data-field="last_error">last setup error (waiting for the target) (connection): connection: dial tcp &lt;cache&gt;: connect: connection refused</span>`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}

// A workload whose writes failed shows its last error beside the failure.
func TestReportLastError(t *testing.T) {
	t.Parallel()
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "iot", Phase: "run", Kind: "series", UnitName: "rows", Prepared: true,
		Failure:   &report.Failure{Reason: "no write succeeded (3 failed attempts)"},
		LastError: &report.ErrorSummary{Text: `server: 400 "bad" <row>`, Class: "server"},
	}}}
	b, err := web.Report(web.ReportData{Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if want := `<span data-field="last_error">last error (server): server: 400 &#34;bad&#34; &lt;row&gt;</span>`; !strings.Contains(s, want) {
		t.Errorf("the report lacks %s", want)
	}
	if strings.Contains(s, "never became ready") {
		t.Errorf("a workload whose target was ready is said never to have become ready")
	}
}
