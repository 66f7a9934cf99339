package pace

import (
	"math"
	"testing"
)

func TestFormatRate(t *testing.T) {
	for v, want := range map[float64]string{
		1e7: "10,000,000", 1000: "1,000", 999: "999", 5062.5: "5,062.5", 0.25: "0.25", 0: "0",
		1234567.89: "1,234,570", 123456: "123,456", -20000: "-20,000", 1e9: "1,000,000,000", math.Inf(1): "+Inf",
	} {
		if got := FormatRate(v); got != want {
			t.Errorf("FormatRate(%g) = %q, want %q", v, got, want)
		}
	}
}
