package logthrottle

import (
	"sync"

	"go.uber.org/zap"
)

// Once lets the first line of each distinct kind through, for errors
// worth reading once each but not once per batch (a rejected schema, a
// full disk). It remembers at most max kinds, then says once that no
// more are logged: a server that puts a counter in every message cannot
// grow it without bound. It is safe for concurrent use.
type Once struct {
	max  int
	mu   sync.Mutex
	seen map[string]bool
	full bool
}

// NewOnce returns a Once that remembers at most max kinds.
func NewOnce(max int) *Once { return &Once{max: max, seen: map[string]bool{}} }

// First reports whether kind is seen for the first time and may be
// logged. Once max kinds are remembered it reports false, and logs on l
// (once) that no more distinct lines are logged.
func (o *Once) First(l *zap.Logger, kind string) bool {
	o.mu.Lock()
	if o.seen[kind] {
		o.mu.Unlock()
		return false
	}
	if len(o.seen) >= o.max {
		full := o.full
		o.full = true
		o.mu.Unlock()
		if !full {
			l.Warn("too many distinct write errors; no more are logged")
		}
		return false
	}
	o.seen[kind] = true
	o.mu.Unlock()
	return true
}
