package summary

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/report"
)

// FormatThresholdValue prints a value in unit; signed prints a change.
func FormatThresholdValue(unit string, v float64, signed bool) string {
	sign := ""
	if signed && v >= 0 {
		sign = "+"
	}
	switch unit {
	case "seconds":
		if v < 0 {
			return "-" + pace.FormatSeconds(-v)
		}
		if v == 0 {
			return sign + "0s"
		}
		return sign + pace.FormatSeconds(v)
	case "ratio":
		// 2 decimals from 1 % up (99.98 % must not read 100 %), 3
		// significant digits below.
		p := 100 * v
		s := fmt.Sprintf("%.3g", p)
		if math.Abs(p) >= 1 {
			s = strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", p), "0"), ".")
		}
		return sign + s + "%"
	case "units_per_second":
		return fmt.Sprintf("%s%.0f/s", sign, v)
	case "bytes":
		// Binary units, 3 significant digits: 1.5GiB, 512B.
		if v < 0 {
			sign, v = "-", -v
		}
		units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
		i := 0
		for v >= 1024 && i < len(units)-1 {
			v /= 1024
			i++
		}
		prec := 2
		if v >= 100 {
			prec = 0
		} else if v >= 10 {
			prec = 1
		}
		n := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', prec, 64), "0"), ".")
		if !strings.Contains(strconv.FormatFloat(v, 'f', prec, 64), ".") {
			n = strconv.FormatFloat(v, 'f', prec, 64)
		}
		return sign + n + units[i]
	}
	return fmt.Sprintf("%s%.0f", sign, v)
}

// FormatWindow prints a window's span in the run phase: 10s–20s.
func FormatWindow(w *report.WindowValue) string {
	d := func(s float64) string {
		return time.Duration(math.Round(s*10) * float64(100*time.Millisecond)).String()
	}
	return d(w.From) + "–" + d(w.To)
}
