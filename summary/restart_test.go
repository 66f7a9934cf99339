package summary

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/targetwatch"
)

// A target that restarted during the run is a warning in the summary's
// target block, with how often, when last, and what to change; one that
// did not is none.
func TestTargetRestartIsWarned(t *testing.T) {
	at := time.Date(2026, 12, 5, 6, 30, 32, 0, time.UTC)
	var out bytes.Buffer
	writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3, Restarts: 2, LastRestart: &at})
	for _, w := range []string{"WARNING: the target restarted during the run (2 seen, the last by 2026-12-05T06:30:32Z;",
		"appendonly yes", "soakd verify"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the text does not say %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3})
	if strings.Contains(out.String(), "restarted") {
		t.Errorf("a target that never restarted is said to have:\n%s", out.String())
	}
}

// A target emptied by FLUSHALL or FLUSHDB during the run is a warning in
// the summary's target block, with how many calls and what to change;
// calls before the run (a count that stayed) are none.
func TestTargetFlushIsWarned(t *testing.T) {
	var out bytes.Buffer
	writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3, Flushes: &targetwatch.Figure{First: 3, Last: 4, Peak: 4}})
	for _, w := range []string{"WARNING: FLUSHALL or FLUSHDB emptied the target during the run (1 calls", "find who flushes it"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the text does not say %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3, Flushes: &targetwatch.Figure{First: 3, Last: 3, Peak: 3}})
	if strings.Contains(out.String(), "WARNING") {
		t.Errorf("flushes before the run are warned of:\n%s", out.String())
	}
}

// A counter's warning says what it rose by across the target's restarts
// (Rise), not last - first, which a restart makes negative.
func TestTargetEvictionsWarnedAcrossARestart(t *testing.T) {
	rise := 17000.0
	var out bytes.Buffer
	writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3,
		Evictions: &targetwatch.Figure{First: 161978, Last: 17000, Peak: 161978, Rise: &rise}})
	if w := "WARNING: the target evicted 17000 keys during the run"; !strings.Contains(out.String(), w) {
		t.Errorf("the text does not say %q:\n%s", w, out.String())
	}
}
