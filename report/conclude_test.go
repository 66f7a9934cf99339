package report

import "testing"

// The last error a workload's summary gives says whether it is the
// wait for the target's (the only error of a run whose target came up
// late) or a write's, which wins when there is one.
func TestConcludeSaysWhoseLastErrorItIs(t *testing.T) {
	setupErr := ErrorSummary{Text: "connection refused", Class: "connection"}
	writeErr := ErrorSummary{Text: "timeout", Class: "timeout"}
	for _, tc := range []struct {
		name  string
		s     Setup
		text  string
		setup bool
	}{
		{"setup only", Setup{Prepared: true, SetupError: setupErr}, "connection refused", true},
		{"a write too", Setup{Prepared: true, SetupError: setupErr, WriteError: writeErr}, "timeout", false},
	} {
		entries := []WorkloadSummary{{Phase: "run", Units: 10}}
		Conclude(entries, tc.s)
		e := entries[0].LastError
		if e == nil || e.Text != tc.text || e.Setup != tc.setup {
			t.Errorf("%s: last error %+v, want %q with setup %v", tc.name, e, tc.text, tc.setup)
		}
	}
}
