//go:build !linux

package daemon

import "math"

// osProc is unknown off Linux: the console shows the Go heap only.
func osProc() (cpu, rss float64) { return math.NaN(), math.NaN() }
