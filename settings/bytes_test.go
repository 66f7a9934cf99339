package settings

import "testing"

func TestFormatBytes(t *testing.T) {
	for v, want := range map[float64]string{0: "0 B", 512: "512 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		3 << 30: "3.0 GiB", -2048: "-2.0 KiB", 1 << 60: "1.0 EiB", 1 << 62: "4.0 EiB"} {
		if got := FormatBytes(v); got != want {
			t.Errorf("FormatBytes(%v) = %q, want %q", v, got, want)
		}
	}
}
