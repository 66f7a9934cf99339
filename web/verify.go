package web

import (
	"fmt"
	"strconv"

	"github.com/soakd/soakd/history"
)

// VerifyPanel is the read-back checks (VERIFY) of every phase that has
// them, as a section of the console and the HTML report: the same counts
// as the summary's verify line and soakd_verify_*_total. ok is false when
// no phase reads back, and then nothing is shown.
func VerifyPanel(doc *history.Doc) (p Panel, ok bool) {
	t := &Table{Header: []string{"workload", "phase", "checked", "missing", "mismatch", "duplicate", "skipped", "verdict"}}
	var failed int64
	for _, w := range doc.Workloads {
		for _, ph := range w.Phases {
			v := ph.Verify
			if v == nil {
				continue
			}
			verdict := "ok"
			if n := v.Failures(); n > 0 {
				verdict = "FAILED"
				failed += n
			}
			t.Rows = append(t.Rows, []string{w.Name, ph.Name, count(v.Checked), count(v.Missing), count(v.Mismatch),
				count(v.Duplicate), count(v.Skipped), verdict})
		}
	}
	if len(t.Rows) == 0 {
		return Panel{}, false
	}
	note := "acknowledged units read back and compared with what the seed says they hold; none failed so far"
	if failed > 0 {
		note = fmt.Sprintf("%d acknowledged units read back missing, changed or repeated: the run fails", failed)
	}
	return Panel{ID: "verify", Title: "Read-back verification (VERIFY)", Note: note, Table: t}, true
}

func count(n int64) string { return strconv.FormatInt(n, 10) }
