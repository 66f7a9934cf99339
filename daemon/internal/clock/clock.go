// Package clock is the engine's clock: monotonic time from one origin
// for the process, sleeps that end on time to within microseconds (on
// Linux) for the scheduler's due times, an alarm that wakes a waiting
// goroutine near a due time without keeping a thread busy (Linux), and
// the waits between retries.
package clock

import (
	"context"
	"math/rand/v2"
	"time"
)

// Base is the process's monotonic time origin.
var Base = time.Now()

// Mono is the monotonic time since Base, never 0.
func Mono() time.Duration { return time.Since(Base) + 1 }

// Backoff is the wait before retry attempt+1: base·2^attempt capped at
// 5 s, with ±20 % jitter so workers do not retry in lockstep; a server's
// Retry-After wins when longer.
func Backoff(base time.Duration, attempt int, after time.Duration) time.Duration {
	d := base << min(attempt, 16)
	if d > 5*time.Second || d <= 0 {
		d = 5 * time.Second
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(d, after)
}

// Sleep waits d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
