package web

import (
	"embed"
	"fmt"
	"html/template"
	"math"
	"strings"
	"sync"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/summary"
)

// Panel is an extra section of the console and the report, with a table
// and charts: the extension point for features that run only sometimes.
// The capacity search adds its own through ConsoleOptions.Panels and
// ReportData.Panels (the current step, passed and failed steps, the
// knee); read-back verification (VERIFY) has one built from the history
// (VerifyPanel): nothing is shown while a feature does not run.
type Panel struct {
	ID     string // unique in the page; prefixes the charts' IDs
	Title  string
	Note   string // a line under the title
	Table  *Table
	Charts []charts.Chart
}

// Table is a simple table of text.
type Table struct {
	Header []string
	Rows   [][]string
}

// view is what the "view" template draws: the console's live part and
// the report's charts.
type view struct {
	Range     string
	Seconds   float64
	Workloads []workloadView
	Process   []Figure
	Panels    []panelView
}

type workloadView struct {
	*history.Workload
	Current      *history.Phase // nil before the first phase
	TargetRate   float64        // the last sample's
	AchievedRate float64
	Errors       string
	Figures      []Figure
}

type panelView struct {
	Panel
	Figures []Figure
}

func buildView(doc *history.Doc, rng string, panels []Panel) view {
	v := view{Range: rng, Seconds: doc.Seconds, Process: render(processCharts(&doc.Process, rng))}
	for i := range doc.Workloads {
		w := &doc.Workloads[i]
		wv := workloadView{Workload: w, Figures: render(workloadCharts(w, rng)),
			TargetRate: last(&w.Series, "target_rate"), AchievedRate: last(&w.Series, "achieved_rate")}
		if n := len(w.Phases); n > 0 {
			wv.Current = &w.Phases[n-1]
			wv.Errors = errorText(wv.Current.Errors)
		}
		v.Workloads = append(v.Workloads, wv)
	}
	if p, ok := VerifyPanel(doc); ok {
		v.Panels = append(v.Panels, panelView{Panel: p})
	}
	for _, p := range panels {
		v.Panels = append(v.Panels, panelView{Panel: p, Figures: render(p.Charts)})
	}
	return v
}

// errorText lists the error classes with failed attempts, "none" if none.
func errorText(m map[string]int64) string {
	var parts []string
	for _, c := range sinks.Classes {
		if n := m[string(c)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

//go:embed templates/*.html
var templateFS embed.FS

var funcs = template.FuncMap{
	"rate": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.0f", v)
	},
	"secs":    func(v float64) string { return charts.FormatSeconds(v) },
	"elapsed": func(v float64) string { return charts.FormatElapsed(v) },
	"fixed":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"bytes": func(v uint64) string {
		if v == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30))
	},
	"errs": errorText,
	// describeThreshold says what a threshold measured, in the text
	// summary's words.
	"describeThreshold": func(t report.ThresholdResult) string { return summary.DescribeThreshold(&t) },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

// templates are parsed on the first page rendered, not at start-up: a
// run nobody opens the console or report of does not pay for them (a few
// milliseconds of CPU at every start).
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
})
