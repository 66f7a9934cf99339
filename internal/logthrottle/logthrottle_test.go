package logthrottle

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The first line of a kind passes, the rest of the period is counted and
// said by the next line that passes; kinds are throttled apart.
func TestThrottle(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	l := zap.New(core)
	th := New(time.Hour)
	for range 5 {
		th.Warn(l, "timeout", "write failed", "deadline")
	}
	th.Warn(l, "connection", "write failed", "EOF")
	if n := logs.Len(); n != 2 {
		t.Fatalf("%d lines logged, want one per kind", n)
	}
	th.period = 0 // the period is over
	th.Warn(l, "timeout", "write failed", "deadline")
	all := logs.All()
	if len(all) != 3 {
		t.Fatalf("%d lines, want 3", len(all))
	}
	if got := all[2].ContextMap()["suppressed_since_last"]; got != int64(4) {
		t.Errorf("suppressed_since_last = %v, want the 4 lines held back", got)
	}
	if got := all[1].ContextMap()["class"]; got != "connection" {
		t.Errorf("class = %v", got)
	}
}
