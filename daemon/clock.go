package daemon

import (
	"context"
	"time"
)

// runClock is the engine's one-second clock while a run schedules: every
// second it calls the observers that follow it (Ticker), telling them
// when a progress interval (PROGRESS_INTERVAL, else 10 s) has ended. It
// returns when ctx ends.
func runClock(ctx context.Context, interval time.Duration, observers []Observer) {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := mono()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			at, now := time.Now(), mono()
			ended := now-last >= interval-interval/10
			if ended {
				last = now
			}
			for _, o := range observers {
				if tk, ok := o.(Ticker); ok {
					tk.Tick(at, ended)
				}
			}
		}
	}
}
