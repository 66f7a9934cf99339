//go:build linux

package clock

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The Go runtime wakes timers through its network poller, whose waits are
// in whole milliseconds: a sleep of a few hundred microseconds ends up to
// a millisecond late, and that lateness would show in every response
// latency soakd reports. The scheduler instead sleeps the last stretch
// before each due time with clock_nanosleep on an absolute deadline, on a
// thread of its own whose timer slack (the kernel's licence to delay a
// wake-up to batch it with others, 50 µs by default) is 1 ns.

// monoOrigin is CLOCK_MONOTONIC at Mono() = 0, so that Mono() times can be
// given to clock_nanosleep (Go's monotonic clock is CLOCK_MONOTONIC on
// Linux).
var monoOrigin = func() time.Duration {
	var a, b unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
	m := Mono()
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
	return time.Duration((a.Nano()+b.Nano())/2) - m
}()

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
	cpu = func() time.Duration {
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
			return 0
		}
		return time.Duration(ts.Nano())
	}
	return unlock, cpu
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
