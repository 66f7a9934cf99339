package logthrottle

import (
	"strconv"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Each kind passes once; past max kinds none does, and that is said once.
func TestOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := zap.New(core)
	o := NewOnce(3)
	var passed []string
	for _, k := range []string{"a", "b", "a", "c", "b", "d", "e", "a"} {
		if o.First(l, k) {
			passed = append(passed, k)
		}
	}
	if got := strconv.Quote(join(passed)); got != `"abc"` {
		t.Errorf("passed %s, want abc", got)
	}
	if n := logs.FilterMessageSnippet("no more are logged").Len(); n != 1 {
		t.Errorf("said %d times that no more are logged, want once", n)
	}
}

func join(s []string) (out string) {
	for _, v := range s {
		out += v
	}
	return out
}
