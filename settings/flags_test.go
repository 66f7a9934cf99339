package settings

import (
	"strings"
	"testing"
)

// A command's switch takes =true and =false as Go's flag package does:
// --check=true was an unknown flag, refused after the settings table had
// been printed as if --check were not given.
func TestSwitchWithValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg    string
		on, ok bool
	}{{"--check", true, true}, {"--check=true", true, true}, {"-check=1", true, true}, {"--check=false", false, true}, {"--check=maybe", false, false}} {
		c, err := ParseFlags([]string{tc.arg}, nil, "SOAKD_", nil, "check")
		if (err == nil) != tc.ok || c.Cmd["check"] != tc.on || len(c.Keys) != 0 {
			t.Errorf("%s: check %v, keys %v, error %v; want check %v, no setting, error %v", tc.arg, c.Cmd["check"], c.Keys, err, tc.on, !tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--check=maybe: want true or false") {
			t.Errorf("%s: error %q, want it to name the flag and what it takes", tc.arg, err)
		}
	}
}
