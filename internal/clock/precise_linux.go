//go:build linux

package clock

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Go runtime wakes timers through its network poller, whose waits are
// in whole milliseconds: a sleep of a few hundred microseconds ends up to
// a millisecond late, and that lateness would show in every response
// latency soakd reports. The scheduler waits for an Alarm instead; where
// it has none (a fake clock) it sleeps the last stretch before each due
// time with clock_nanosleep on an absolute deadline, on a thread of its
// own whose timer slack (the kernel's licence to delay a wake-up to batch
// it with others, 50 µs by default) is 1 ns.

// monoOrigin is CLOCK_MONOTONIC at Mono() = 0, so that Mono() times can be
// given to clock_nanosleep and the alarm's timerfd (Go's monotonic clock
// is CLOCK_MONOTONIC on Linux).
var monoOrigin = originOf(func() (before, mono, after time.Duration) {
	var a, b unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
	m := Mono()
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
	return time.Duration(a.Nano()), m, time.Duration(b.Nano())
})

// originReadings is how many times originOf reads the two clocks.
const originReadings = 32

// originOf is the kernel's clock at Mono() = 0, from readings of the
// kernel's clock before and after Mono(): the true origin lies between
// before-mono and after-mono, and a thread descheduled between the reads
// (at start-up on a busy machine) widens that span by the time it waited.
// So the narrowest of several readings is taken, at its late end: a
// due time given to the kernel then never falls before the Mono() time it
// stands for, and an alarm or sleep ends late by at most that span (tens
// of nanoseconds) instead of early by half a descheduling.
func originOf(read func() (before, mono, after time.Duration)) time.Duration {
	var origin, span time.Duration
	for i := 0; i < originReadings; i++ {
		a, m, b := read()
		if i == 0 || b-a < span {
			origin, span = b-m, b-a
		}
	}
	return origin
}

// LockPrecise locks the calling goroutine to its thread and lowers the
// thread's timer slack; unlock undoes both. cpu reads the thread's CPU
// time, which is the goroutine's while it is locked.
func LockPrecise() (unlock func(), cpu func() time.Duration) {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err == nil {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	}
	unlock = func() {
		if err == nil {
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		}
		runtime.UnlockOSThread()
	}
	return unlock, threadCPU
}

// SleepUntil sleeps until Mono() reaches t.
func SleepUntil(t time.Duration) {
	if fakeClock() {
		time.Sleep(t - Mono())
		return
	}
	ts := unix.NsecToTimespec(int64(monoOrigin + t))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// fakeClock reports that Go's clock is not the kernel's: a fake clock
// (testing/synctest), which only Go's own sleeps and timers follow.
func fakeClock() bool {
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	skew := time.Duration(now.Nano()) - (monoOrigin + Mono())
	return skew > time.Second || skew < -time.Second
}

// A CPUMeter sums the CPU time a goroutine that is not locked to a
// thread uses between Start and Pause, read from the thread it is on:
// between two points where it does not block it stays on one thread
// (bar a preemption, whose span is left out). Reading a thread's CPU time
// is a system call (no vDSO for it), two per span, which at 10,000 spans
// a second cost a few per cent of soakd's CPU: only one span in
// meterEvery is read, and the total is scaled by the spans it stands for.
// Its methods do nothing on a nil CPUMeter.
type CPUMeter struct {
	running bool
	timing  bool  // this span is read
	spans   int64 // spans started
	timed   int64 // spans read and kept
	cpu0    time.Duration
	wall0   time.Duration
	total   time.Duration        // of the spans read
	cpu     func() time.Duration // the thread's CPU time; nil: threadCPU
}

// meterEvery is how many spans one read span stands for. It is prime, so
// spans of kinds that alternate in a short cycle (the scheduler's wake to
// a full queue, then the send to its next wait) are each read in turn
// rather than always the same kind.
const meterEvery = 17

// Start starts a span.
func (m *CPUMeter) Start() {
	if m == nil || m.running {
		return
	}
	m.running = true
	m.timing = m.spans%meterEvery == 0 // the first span is read
	m.spans++
	if m.timing {
		m.cpu0, m.wall0 = m.threadCPU(), Mono()
	}
}

// Pause ends a span and adds its CPU time; a span that cannot have been
// on one thread (more CPU than wall time, or less than none) adds none
// and stands for none.
func (m *CPUMeter) Pause() {
	if m == nil || !m.running {
		return
	}
	m.running = false
	if !m.timing {
		return
	}
	if d := m.threadCPU() - m.cpu0; d >= 0 && d <= Mono()-m.wall0 {
		m.total += d
		m.timed++
	}
}

// Total is the CPU time of the spans ended so far: that of the spans
// read, times the spans ended per span read.
func (m *CPUMeter) Total() time.Duration {
	if m == nil {
		return 0
	}
	m.Pause()
	if m.timed == 0 {
		return 0
	}
	return time.Duration(float64(m.total) * float64(m.spans) / float64(m.timed))
}

// threadCPU is the thread's CPU time (m.cpu in tests).
func (m *CPUMeter) threadCPU() time.Duration {
	if m.cpu != nil {
		return m.cpu()
	}
	return threadCPU()
}

// threadCPU is the calling thread's CPU time. The call is raw (not
// announced to the runtime, as the alarm's are not): it never blocks.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_THREAD_CPUTIME_ID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
