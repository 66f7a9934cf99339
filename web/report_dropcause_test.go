package web_test

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

// A phase that dropped work says in the report what limited it, as the
// text summary does: the report showed the dropped count alone.
func TestReportDropCause(t *testing.T) {
	t.Parallel()
	sum := &report.Summary{Workloads: []report.WorkloadSummary{{
		Name: "iot", Phase: "run", Kind: "series", UnitName: "rows", Prepared: true, Dropped: 120,
		DropCause: &report.DropCause{Bottleneck: report.LimitWorkers, WorkersBusy: 0.99,
			Diagnosis: "the 4 workers were busy 99% of the time: raise SOAKD_IOT_WORKERS <now 4>"},
	}}}
	b, err := web.Report(web.ReportData{Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	want := `<span data-field="drop_cause">dropped work: bottleneck workers: the 4 workers were busy 99% of the time: raise SOAKD_IOT_WORKERS &lt;now 4&gt;</span>`
	if !strings.Contains(string(b), want) {
		t.Errorf("the report lacks %s", want)
	}
}
