//go:build !linux

package daemon

import "time"

// lockPrecise does nothing where soakd has no precise sleep: the runtime's
// timers serve (see precise_linux.go); the scheduler's CPU time is not
// measured.
func lockPrecise() (unlock func(), cpu func() time.Duration) {
	return func() {}, func() time.Duration { return 0 }
}

// sleepUntil sleeps until mono() reaches t.
func sleepUntil(t time.Duration) { time.Sleep(t - mono()) }
