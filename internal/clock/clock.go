// Package clock is the engine's clock: monotonic time from one origin
// for the process, sleeps that end on time to within microseconds (on
// Linux) for the scheduler's due times, and an alarm that wakes a waiting
// goroutine near a due time without keeping a thread busy (Linux). The
// waits between retries are package internal/backoff's.
package clock

import "time"

// Base is the process's monotonic time origin.
var Base = time.Now()

// Mono is the monotonic time since Base, never 0.
func Mono() time.Duration { return time.Since(Base) + 1 }
