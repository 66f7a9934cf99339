//go:build !linux

package procstat

import "math"

// Self is unknown off Linux: the console shows the Go heap only.
func Self() (cpu, rss float64) { return math.NaN(), math.NaN() }

// CPU is unknown off Linux.
func CPU() float64 { return math.NaN() }
