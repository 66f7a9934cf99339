// Package backoff is the wait between attempts at something that failed
// (a write the sink says is safe to resend, a setup step against a target
// that is not up yet): capped exponential backoff with jitter, and a sleep
// that ends with its context.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry attempt+1: base·2^attempt capped at
// 5 s, with ±20 % jitter so workers do not retry in lockstep; a server's
// Retry-After wins when longer.
func Delay(base time.Duration, attempt int, after time.Duration) time.Duration {
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
