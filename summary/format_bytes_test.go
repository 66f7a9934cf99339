package summary

import "testing"

// The target's figures print in binary units, changes signed.
func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      float64
		signed bool
		want   string
	}{
		{512, false, "512B"}, {3.5, false, "3.5B"}, {1536, false, "1.5KiB"}, {8 << 30, false, "8GiB"},
		{100 << 20, true, "+100MiB"}, {-(1 << 20), true, "-1MiB"}, {0, true, "+0B"}, {1000 << 10, false, "1000KiB"}, {1023.9, false, "1024B"}, {100, false, "100B"},
	} {
		if got := FormatThresholdValue("bytes", tc.v, tc.signed); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.v, got, tc.want)
		}
	}
}
