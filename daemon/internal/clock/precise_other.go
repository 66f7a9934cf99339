//go:build !linux

package clock

import "time"

// LockPrecise does nothing where soakd has no precise sleep: the runtime's
// timers serve (see precise_linux.go); the scheduler's CPU time is not
// measured.
func LockPrecise() (unlock func(), cpu func() time.Duration) {
	return func() {}, func() time.Duration { return 0 }
}

// SleepUntil sleeps until Mono() reaches t.
func SleepUntil(t time.Duration) { time.Sleep(t - Mono()) }
