package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

// The verify panel lists every phase that reads back, with the summary's
// counts, says when a check failed, and is absent when nothing reads back.
func TestVerifyPanel(t *testing.T) {
	t.Parallel()
	doc := history.Doc{Workloads: []history.Workload{
		{Name: "iot", Phases: []history.Phase{{Name: "run"}}},
		{Name: "kv", Phases: []history.Phase{
			{Name: "load", StatusCounts: report.StatusCounts{Verify: &report.VerifyCounts{Checked: 100}}},
			{Name: "run", StatusCounts: report.StatusCounts{Verify: &report.VerifyCounts{Checked: 50, Missing: 2, Duplicate: 1, Skipped: 3}}},
		}},
	}}
	p, ok := web.VerifyPanel(&doc)
	if !ok || p.ID != "verify" || p.Table == nil {
		t.Fatalf("panel %+v, %v", p, ok)
	}
	want := [][]string{
		{"kv", "load", "100", "0", "0", "0", "0", "ok"},
		{"kv", "run", "50", "2", "0", "1", "3", "FAILED"},
	}
	if !slices.EqualFunc(p.Table.Rows, want, slices.Equal) {
		t.Errorf("rows %q, want %q", p.Table.Rows, want)
	}
	if !strings.HasPrefix(p.Note, "3 acknowledged units") {
		t.Errorf("note %q", p.Note)
	}
	if _, ok := web.VerifyPanel(&history.Doc{Workloads: doc.Workloads[:1]}); ok {
		t.Error("a panel without any phase that reads back")
	}
}
