package writectx

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestWriteCtxDeadlinePerWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c := New(parent, 100*time.Millisecond)
		defer c.Close()

		// A write that takes longer than the timeout is cancelled.
		c.Arm()
		select {
		case <-c.Done():
		case <-time.After(time.Second):
			t.Fatal("deadline did not fire")
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", c.Err())
		}
		c.Disarm()

		// The next write starts afresh and is not cancelled early, on a
		// context of its own: the one that timed out stays done for
		// whatever still holds it.
		old := c
		done := old.Done()
		c = c.Arm()
		defer c.Close()
		if c == old || old.Done() != done || !errors.Is(old.Err(), context.DeadlineExceeded) {
			t.Fatal("the context of a write that timed out was reopened")
		}
		if c.Err() != nil {
			t.Fatalf("re-armed context already done: %v", c.Err())
		}
		time.Sleep(50 * time.Millisecond)
		c.Disarm()
		if c.Err() != nil {
			t.Fatal("a write that finished in time was cancelled")
		}
		time.Sleep(time.Second) // a stale timer must not fire later
		if c.Err() != nil {
			t.Fatal("stale timer cancelled an idle context")
		}

		// context.AfterFunc registers through the method (no goroutine
		// per call) and fires on the deadline; stopped callbacks do not.
		c = c.Arm()
		fired, stopped := make(chan struct{}), make(chan struct{})
		context.AfterFunc(c, func() { close(fired) })
		stop := context.AfterFunc(c, func() { close(stopped) })
		if !stop() {
			t.Fatal("stop of a pending callback should report true")
		}
		<-fired
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("a stopped callback ran")
		default:
		}
		c.Disarm()

		// Cancelling the parent (end of the grace period) ends every write.
		c = c.Arm()
		defer c.Close()
		cancel()
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("after parent cancel Err = %v", c.Err())
		}
	})
}

func BenchmarkWriteCtxArm(b *testing.B) {
	c := New(context.Background(), time.Minute)
	defer c.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c = c.Arm()
		c.Disarm()
	}
}

// BenchmarkStdlibWithTimeout is what a write's context costs with the
// standard library (a private parent per worker, so children do not
// contend on a shared parent's lock), for comparison with Ctx.
func BenchmarkStdlibWithTimeout(b *testing.B) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(parent, time.Minute)
		_ = ctx.Err()
		cancel()
	}
}
