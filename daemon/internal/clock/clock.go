// Package clock is the engine's clock: monotonic time from one origin
// for the process, and (on Linux) sleeps that end on time to within
// microseconds, for the scheduler's due times.
package clock

import "time"

// Base is the process's monotonic time origin.
var Base = time.Now()

// Mono is the monotonic time since Base, never 0.
func Mono() time.Duration { return time.Since(Base) + 1 }
