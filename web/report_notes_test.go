package web_test

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

// A workload's notes (a dialect=timescaledb target that got plain
// tables) show in the report's summary table, escaped, beside its figures.
func TestReportNotes(t *testing.T) {
	t.Parallel()
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "iot", Phase: "run", Kind: "series", UnitName: "rows",
		Notes: []string{`dialect=timescaledb, but table "cpu" is a plain table, not a hypertable: it held rows before (see the log)`},
	}}}
	b, err := web.Report(web.ReportData{Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	want := `<span data-field="note">note: dialect=timescaledb, but table &#34;cpu&#34; is a plain table, not a hypertable: it held rows before (see the log)</span>`
	if !strings.Contains(string(b), want) {
		t.Errorf("the report lacks the note %s", want)
	}
}
