package sinktest

import (
	"context"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
)

// ResetCase describes a target for Reset.
type ResetCase struct {
	// Write stores data through the sink (and fails t unless it is
	// stored).
	Write func(t *testing.T)
	// Count returns how many units the sink's own part of the target holds
	// (its tables, the keys under its prefix).
	Count func(t *testing.T) int
	// Foreign fails t unless what is not the sink's (other tables, other
	// keys) is as it was before the test; when says at which step.
	Foreign func(t *testing.T, when string)
}

// Reset checks a sinks.Resetter (soakd sweep's reset between points):
// after c.Write, Reset succeeds, leaves the sink's own part of the target
// empty and touches nothing else. The sink stays open for the caller's
// further checks.
func Reset(t *testing.T, s sinks.Sink, c ResetCase) {
	t.Helper()
	r, ok := s.(sinks.Resetter)
	if !ok {
		t.Fatalf("%T is not a sinks.Resetter", s)
	}
	c.Write(t)
	if n := c.Count(t); n == 0 {
		t.Fatal("the target holds nothing after the writes")
	}
	c.Foreign(t, "after the writes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Reset(ctx); err != nil {
		checkClass(t, "Reset", err)
		t.Fatal(err)
	}
	c.Foreign(t, "after Reset")
	if n := c.Count(t); n != 0 {
		t.Errorf("after Reset the sink's part of the target holds %d units, want 0", n)
	}
}
