package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/soakd/soakd/targetwatch"
)

// A target's count of what it answered as written but did not store is
// printed with the other figures, and a rise over the run is a warning
// that says how many and what to check; a count that stayed is no
// warning.
func TestTargetDiscardedIsWarned(t *testing.T) {
	for _, tc := range []struct {
		last float64
		want []string
		not  string
	}{
		{800, []string{"  discarded (answered as written, not stored): 500 → 800, peak 800\n",
			"  WARNING: the target discarded 300 values it answered as written during the run", "START and CLOCK"}, ""},
		{500, []string{"  discarded (answered as written, not stored): 500 → 500, peak 500\n"}, "WARNING"},
	} {
		var out bytes.Buffer
		writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3,
			Discarded: &targetwatch.Figure{First: 500, Last: tc.last, Peak: tc.last}})
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("discarded 500 → %v: the text does not say %q:\n%s", tc.last, w, out.String())
			}
		}
		if tc.not != "" && strings.Contains(out.String(), tc.not) {
			t.Errorf("discarded 500 → %v: the text says %q:\n%s", tc.last, tc.not, out.String())
		}
	}
}
