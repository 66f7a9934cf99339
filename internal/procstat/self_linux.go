package procstat

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"syscall"
)

// Self returns the process's CPU seconds (getrusage) and resident set
// size (/proc/self/statm).
func Self() (cpu, rss float64) {
	cpu, rss = math.NaN(), math.NaN()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseFloat(string(f[1]), 64); err == nil {
				rss = pages * float64(os.Getpagesize())
			}
		}
	}
	return cpu, rss
}
