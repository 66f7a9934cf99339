package report

import (
	"slices"
	"testing"
)

// A table shows the target's memory and CPU only when some row has the
// figure, and an unknown figure as a dash (an empty CSV cell), never 0.
func TestTargetColumns(t *testing.T) {
	mem, cores := 3221225472.0, 0.25
	var none TargetColumns
	none.Add(nil, nil)
	if none.Any() || len(none.Header()) != 0 || len(none.CSVCells(&mem, &cores)) != 0 {
		t.Errorf("no row has a figure: %+v shows columns", none)
	}
	var memOnly TargetColumns
	memOnly.Add(nil, nil)
	memOnly.Add(&mem, nil)
	if got := memOnly.Cells(&mem, &cores); !slices.Equal(got, []string{"3.0 GiB"}) {
		t.Errorf("memory only: cells %q", got)
	}
	var both TargetColumns
	both.Add(&mem, nil)
	both.Add(nil, &cores)
	head, align := both.MarkdownHeader()
	if head != " target memory | target CPU |" || align != "---:|---:|" {
		t.Errorf("markdown header %q %q", head, align)
	}
	if got := both.MarkdownCells(nil, &cores); got != " – | 0.25 cores |" {
		t.Errorf("markdown cells %q", got)
	}
	if got := both.CSVCells(&mem, nil); !slices.Equal(got, []string{"3221225472", ""}) {
		t.Errorf("CSV cells %q: bytes in full, an unknown figure empty", got)
	}
	if got := both.CSVHeader(); !slices.Equal(got, []string{"target_memory_bytes", "target_cpu_cores"}) {
		t.Errorf("CSV header %q", got)
	}
}
