// Package writectx is the context the engine's workers pass to
// Sink.Write: re-armed with each write's deadline without allocating.
package writectx

import (
	"context"
	"sync"
	"time"
)

// Ctx is the context a worker passes to Sink.Write. It carries the
// per-write deadline (SOAKD_<W>_TIMEOUT) and is re-armed for every write
// without allocating, which context.WithTimeout cannot do: at hundreds of
// thousands of writes per second that allocation would dominate. It is done
// when the deadline passes or its parent (the drain context) is done.
//
// A Ctx is used by one worker; Done/Err/Deadline may be called from
// the sink's goroutines during a write.
type Ctx struct {
	parent  context.Context
	timeout time.Duration

	mu       sync.Mutex
	done     chan struct{}
	closed   bool
	err      error
	deadline time.Time
	timer    *time.Timer
	stop     func() bool // unregisters the parent watch
	afters   []afterFn   // AfterFunc callbacks of the current write
	nextID   uint64
}

type afterFn struct {
	f  func()
	id uint64
}

var _ context.Context = (*Ctx)(nil)

// New returns the context of a worker's writes, each bounded by timeout
// (none when 0) once armed, all ended when parent is done.
func New(parent context.Context, timeout time.Duration) *Ctx {
	c := &Ctx{parent: parent, timeout: timeout, done: make(chan struct{})}
	if timeout > 0 {
		c.timer = time.AfterFunc(time.Hour, c.expire)
		c.timer.Stop()
	}
	c.stop = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	return c
}

// Arm starts the deadline for one write and returns the context to pass
// to it: c, or a fresh one when c's previous write timed out. A context
// once done stays done: a sink may have left goroutines holding it past
// the write that timed out (pgx's pool finishes a connect in the
// background and then waits for the context or a caller), and had c been
// reopened they would wait on the next write's context instead, for ever
// while writes succeed: a goroutine, and a pooled connection, leaked per
// timed-out connect.
func (c *Ctx) Arm() *Ctx {
	if c.timeout <= 0 {
		return c
	}
	c.mu.Lock()
	if c.closed && c.parent.Err() == nil {
		c.mu.Unlock()
		c.Close()
		return New(c.parent, c.timeout).Arm()
	}
	c.deadline = time.Now().Add(c.timeout)
	c.afters = c.afters[:0] // callbacks belong to one write
	c.mu.Unlock()
	c.timer.Reset(c.timeout)
	return c
}

// Disarm ends the deadline after a write returned.
func (c *Ctx) Disarm() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// expire runs on the timer goroutine. A timer armed for an earlier write
// may fire after that write returned; the deadline check ignores it.
// The check and the cancel happen under one lock so a stale timer cannot
// cancel a write armed in between.
func (c *Ctx) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		c.cancelLocked(context.DeadlineExceeded)
	}
}

func (c *Ctx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelLocked(err)
}

func (c *Ctx) cancelLocked(err error) {
	if !c.closed {
		c.closed, c.err = true, err
		close(c.done)
		for _, a := range c.afters {
			go a.f()
		}
		c.afters = c.afters[:0]
	}
}

// AfterFunc arranges for f to run in its own goroutine when the context
// is done, like context.AfterFunc. Having the method lets
// context.AfterFunc and context.WithCancel (pgx watches every round trip
// with them) register here instead of starting a goroutine per call.
func (c *Ctx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		go f()
		return func() bool { return false }
	}
	c.nextID++
	id := c.nextID
	c.afters = append(c.afters, afterFn{f: f, id: id})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, a := range c.afters {
			if a.id == id {
				c.afters = append(c.afters[:i], c.afters[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Close releases the timer and the parent watch.
func (c *Ctx) Close() {
	c.Disarm()
	c.stop()
}

func (c *Ctx) Deadline() (time.Time, bool) {
	if c.timeout <= 0 {
		return c.parent.Deadline()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

func (c *Ctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *Ctx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Ctx) Value(key any) any { return c.parent.Value(key) }
