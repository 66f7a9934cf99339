package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"time"

	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
)

// ReportData is what an HTML report shows.
type ReportData struct {
	Summary     *report.Summary
	History     *history.History // nil: no charts
	Environment sysinfo.Info
	Settings    []SettingRow
	// StoppedBy, when set, says how the run ended (e.g. "stopped by a
	// signal").
	StoppedBy string
	// Panels are extra sections (see Panel): capacity or sweep results.
	Panels []Panel
}

// SettingRow is one setting as the report lists it; Value is already
// safe to show (settings.Setting.Shown).
type SettingRow struct {
	Key, Value, Default, Help string
	Set                       bool // given in the environment or a flag
}

// SettingRows lists settings with their values in environ, secrets shown
// as "(set)" and passwords in URLs redacted (settings.Setting.Shown); a
// setting not given shows its default.
func SettingRows(list []settings.Setting, environ map[string]string) []SettingRow {
	out := make([]SettingRow, 0, len(list))
	for _, s := range list {
		raw, set := environ[s.Key]
		v := s.Default
		if set {
			v = s.Shown(raw)
		}
		out = append(out, SettingRow{Key: s.Key, Value: v, Default: s.Default, Help: s.Help, Set: set})
	}
	return out
}

// WriteReport writes a self-contained HTML report to path: no script
// runs and nothing is fetched when it is opened (styles are inline, the
// charts inline SVG); the summary and history are also embedded as JSON
// (script elements of type application/json, ids soakd-summary and
// soakd-history) for tools.
func WriteReport(path string, d ReportData) error {
	b, err := Report(d)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	return nil
}

// Report renders the report (see WriteReport).
func Report(d ReportData) ([]byte, error) {
	if d.Summary == nil {
		return nil, fmt.Errorf("cannot write a report without a summary")
	}
	var doc history.Doc
	if d.History != nil {
		doc = d.History.Snapshot()
	}
	css, err := assets.ReadFile("assets/app.css")
	if err != nil {
		return nil, err
	}
	sumJSON, err := json.Marshal(d.Summary)
	if err != nil {
		return nil, err
	}
	histJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// A failed threshold fails the run (exit 1) without failing a
	// workload: the report counts the failed ones under the summary
	// table, as the text summary does.
	var judged, failed int
	for _, w := range d.Summary.Workloads {
		for _, t := range w.Thresholds {
			judged++
			if !t.OK {
				failed++
			}
		}
	}
	data := struct {
		ReportData
		ThresholdsJudged, ThresholdsFailed int
		Started                            time.Time
		Environment                        [][2]string
		CSS                                template.CSS
		View                               view
		SummaryJSON                        template.JS // json.Marshal escapes <, > and &: safe in a script element
		HistoryJSON                        template.JS
	}{d, judged, failed, d.Summary.Started, d.Environment.Rows(), template.CSS(css), buildView(&doc, RangeWhole, d.Panels),
		template.JS(sumJSON), template.JS(histJSON)}
	var b bytes.Buffer
	if err := templates().ExecuteTemplate(&b, "report", data); err != nil {
		return nil, fmt.Errorf("cannot render the report: %w", err)
	}
	return b.Bytes(), nil
}
