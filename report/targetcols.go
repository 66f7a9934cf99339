package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/soakd/soakd/settings"
)

// TargetColumns are the columns a table of capacity steps or sweep points
// gives the target watch's figures: the target's memory and its CPU, each
// only when some row has it, so a run without the watch keeps the table it
// always had. An unknown figure is "–" in a table and an empty CSV cell,
// never 0: a reader must not take it for a target that used nothing.
type TargetColumns struct{ Memory, CPU bool }

// TargetColumnsOf are the columns of the figures some of rows have;
// figures reads a row's.
func TargetColumnsOf[Row any](rows []Row, figures func(*Row) (mem, cores *float64)) TargetColumns {
	var c TargetColumns
	for i := range rows {
		c.Add(figures(&rows[i]))
	}
	return c
}

// Add shows the column of each figure a row has.
func (c *TargetColumns) Add(mem, cores *float64) {
	c.Memory = c.Memory || mem != nil
	c.CPU = c.CPU || cores != nil
}

// Any reports whether a column shows.
func (c TargetColumns) Any() bool { return c.Memory || c.CPU }

// Header is the columns' names in a table.
func (c TargetColumns) Header() []string {
	return c.pick("target memory", "target CPU")
}

// Cells are a row's figures as a table shows them: 1.5 GiB, 0.25 cores.
func (c TargetColumns) Cells(mem, cores *float64) []string {
	return c.pick(optional(mem, settings.FormatBytes, "–"),
		optional(cores, func(v float64) string { return fmt.Sprintf("%.2f cores", v) }, "–"))
}

// MarkdownHeader is the columns' header cells and alignment cells, to
// append to a markdown table's.
func (c TargetColumns) MarkdownHeader() (header, align string) {
	h := c.Header()
	return markdownCells(h), strings.Repeat("---:|", len(h))
}

// MarkdownCells is a row's figures as cells to append to a markdown row.
func (c TargetColumns) MarkdownCells(mem, cores *float64) string {
	return markdownCells(c.Cells(mem, cores))
}

// CSVHeader is the columns' names in a CSV file.
func (c TargetColumns) CSVHeader() []string {
	return c.pick("target_memory_bytes", "target_cpu_cores")
}

// CSVCells are a row's figures in a CSV file: bytes in full, not
// 3.221225472e+09, so a spreadsheet sums them as is.
func (c TargetColumns) CSVCells(mem, cores *float64) []string {
	return c.pick(optional(mem, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }, ""),
		optional(cores, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }, ""))
}

// pick keeps the memory and the CPU cell of the columns that show.
func (c TargetColumns) pick(mem, cores string) []string {
	var out []string
	if c.Memory {
		out = append(out, mem)
	}
	if c.CPU {
		out = append(out, cores)
	}
	return out
}

// optional formats *v, or gives none when it is not known.
func optional(v *float64, format func(float64) string, none string) string {
	if v == nil {
		return none
	}
	return format(*v)
}

func markdownCells(cells []string) string {
	var b strings.Builder
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	return b.String()
}
