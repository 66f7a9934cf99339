// Package logthrottle keeps a failure that repeats thousands of times a
// second from flooding the log: the first line of each kind is logged,
// then at most one per period, saying how many were suppressed since.
package logthrottle

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Throttle limits repeated log lines, per kind. It is safe for
// concurrent use.
type Throttle struct {
	period time.Duration
	mu     sync.Mutex
	last   map[string]time.Time
	count  map[string]int
}

// New returns a Throttle that lets one line of each kind through per
// period.
func New(period time.Duration) *Throttle {
	return &Throttle{period: period, last: map[string]time.Time{}, count: map[string]int{}}
}

// Warn logs msg at warn level with the kind (as class) and the error
// text, unless a line of that kind was logged less than a period ago.
func (t *Throttle) Warn(l *zap.Logger, kind, msg, errText string) {
	if suppressed, ok := t.Allow(kind); ok {
		l.Warn(msg, zap.String("class", kind), zap.String("error", errText), zap.Int("suppressed_since_last", suppressed))
	}
}

// Allow reports whether a line of kind may be logged now, and how many
// were suppressed since the last one.
func (t *Throttle) Allow(kind string) (suppressed int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	suppressed = t.count[kind]
	if last, seen := t.last[kind]; seen && now.Sub(last) < t.period {
		t.count[kind]++
		return 0, false
	}
	t.last[kind], t.count[kind] = now, 0
	return suppressed, true
}
