package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/soakd/soakd/targetwatch"
)

// A target's count of what it answered as written but did not store is
// printed with the other figures, and a rise over the run is a warning
// that says how many, by the target's reasons, and what to check for
// those reasons (nothing to check without them); a count that stayed is
// no warning.
func TestTargetDiscardedIsWarned(t *testing.T) {
	for _, tc := range []struct {
		last float64
		by   map[string]float64
		want []string
		not  string
	}{
		{800, map[string]float64{"small_timestamp": 280, "too_many_labels": 20}, []string{"  discarded (answered as written, not stored): 500 → 800, peak 800\n",
			"  WARNING: the target discarded 300 values it answered as written during the run (other writers' included) (by reason: small_timestamp 280, too_many_labels 20)",
			"check START and CLOCK against its retention, and its limits on labels"}, ""},
		{800, map[string]float64{"invalid_promremotewrite": 300}, []string{"(by reason: invalid_promremotewrite 300)", "check the target URL's path"}, "START"},
		{800, nil, []string{"WARNING: the target discarded 300 values"}, "check"},
		{500, nil, []string{"  discarded (answered as written, not stored): 500 → 500, peak 500\n"}, "WARNING"},
	} {
		var out bytes.Buffer
		writeTarget(&out, &targetwatch.Summary{IntervalSeconds: 10, Readings: 3,
			Discarded: &targetwatch.Figure{First: 500, Last: tc.last, Peak: tc.last}, DiscardedBy: tc.by})
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
