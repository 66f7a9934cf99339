package procstat

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// statm is /proc/self/statm, opened on the first Self and kept open: the
// history samples it every second, and re-reading an open file from
// offset 0 is one system call where opening, reading and closing it is
// four (and an allocation or two).
var statm struct {
	sync.Mutex
	f   *os.File
	buf [128]byte
}

// CPU returns the process's CPU seconds so far, user and system, of
// every thread (getrusage); NaN if unknown.
func CPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// Self returns the process's CPU seconds (getrusage) and resident set
// size (/proc/self/statm).
func Self() (cpu, rss float64) {
	cpu, rss = CPU(), math.NaN()
	statm.Lock()
	defer statm.Unlock()
	// A failed open or read (out of descriptors for a moment) is tried
	// again on the next call, not kept for the rest of the run.
	if statm.f == nil {
		f, err := os.Open("/proc/self/statm")
		if err != nil {
			return cpu, rss
		}
		statm.f = f
	}
	n, err := statm.f.ReadAt(statm.buf[:], 0)
	if n == 0 && err != nil {
		statm.f.Close()
		statm.f = nil
		return cpu, rss
	}
	// "size resident shared ...": the second field, in pages.
	f := statm.buf[:n]
	if i := bytes.IndexByte(f, ' '); i >= 0 {
		f = f[i+1:]
		if j := bytes.IndexByte(f, ' '); j >= 0 {
			f = f[:j]
		}
		// string(f) of a short field is built on the stack: no allocation.
		if pages, err := strconv.ParseUint(string(f), 10, 64); err == nil {
			rss = float64(pages) * float64(os.Getpagesize())
		}
	}
	return cpu, rss
}
