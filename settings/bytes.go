package settings

import (
	"fmt"
	"math"
)

// FormatBytes prints a size in bytes with binary prefixes, as the
// reports and the summary show the target's memory and storage: 512 B,
// 1.5 MiB.
func FormatBytes(v float64) string {
	const unit = 1024
	if math.Abs(v) < unit {
		return fmt.Sprintf("%.0f B", v)
	}
	exp, div := 0, float64(unit)
	for math.Abs(v)/div >= unit && exp < 5 {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", v/div, "KMGTPE"[exp])
}
