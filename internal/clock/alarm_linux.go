//go:build linux

package clock

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An Alarm wakes a goroutine at a time to within the microseconds of a
// kernel wake-up, without a thread: a timerfd (whose expiry the kernel
// never defers to batch it with others) read through the runtime's network
// poller, which wakes at once on it, unlike the runtime's own timers,
// whose waits are in whole milliseconds. Between alarms nothing of soakd
// runs: a scheduler that waits 100 ms between tickets on an Alarm costs
// one wake-up per ticket, where a precise sleep (SleepUntil) keeps a
// thread in a system call for its last stretch and the runtime's
// monitor polling it every 20 µs.
//
// The goroutine that waits reads the timerfd itself: the poller hands it
// straight to the thread it wakes. A reading goroutine that passed each
// expiry on through a channel cost a second goroutine switch per wake,
// and readying the waiter from it woke a second, idle thread (to spin,
// find nothing and sleep again), which at 10,000 wakes a second was a
// tenth of soakd's CPU.
type Alarm struct {
	f      *os.File
	rc     syscall.RawConn
	fd     int
	buf    [8]byte
	read   func(fd uintptr) bool // bound once: neither a read nor a Kick allocates
	kick   func(fd uintptr)
	kicked atomic.Bool // a Kick the waiter has not seen yet
}

// NewAlarm starts an alarm, not set; Close ends it. On a fake clock
// (testing/synctest), which the kernel's timers do not follow, there is
// no alarm.
func NewAlarm() (*Alarm, error) {
	if fakeClock() {
		return nil, errors.New("no alarm on a fake clock")
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	a := &Alarm{f: os.NewFile(uintptr(fd), "alarm"), fd: fd}
	// A file the network poller cannot take (some sandboxes refuse a
	// timerfd) would fail the first wait and the alarm would never go
	// off; a deadline is refused on exactly such a file, so the caller
	// learns it now and waits on runtime timers.
	if err := pollable(a.f); err != nil {
		_ = a.f.Close()
		return nil, fmt.Errorf("the timerfd cannot be polled: %w", err)
	}
	if a.rc, err = a.f.SyscallConn(); err != nil {
		_ = a.f.Close()
		return nil, err
	}
	a.read = a.readFd
	a.kick = func(fd uintptr) { a.set(fd, 0) }
	return a, nil
}

// readFd reads the expiry count; false (wait for the poller) while there
// is none. The read is a raw system call, as the sockets' are (see
// sinks/rawio_linux.go): the runtime's monitor sleeps on.
func (a *Alarm) readFd(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&a.buf[0])), uintptr(len(a.buf)))
	return e != unix.EAGAIN && e != unix.EINTR
}

// pollable says whether f's waits go through the runtime's network
// poller: only such a file takes a deadline.
func pollable(f *os.File) error { return f.SetReadDeadline(time.Time{}) }

// Wait sets the alarm to go off when Mono() reaches t (at once if it has)
// and waits until it goes off or Kick is called, whichever is first;
// false once the alarm is closed. It may return early, for a Kick an
// earlier wait served already: the caller checks what it waits for. One
// goroutine waits at a time.
func (a *Alarm) Wait(t time.Duration) bool {
	a.set(uintptr(a.fd), t)
	// A Kick before the setting above would have been undone by it (a
	// setting clears an expiry not yet read): its flag says so. One after
	// it sets the alarm to now itself.
	if a.kicked.Swap(false) {
		return true
	}
	err := a.rc.Read(a.read)
	a.kicked.Store(false) // the wake served any Kick made so far
	return err == nil
}

// Kick makes a Wait in progress, or the next one, return at once. Any
// goroutine may call it, also after Close. The waiter learns why it woke
// from what the kicker changed before kicking.
func (a *Alarm) Kick() {
	a.kicked.Store(true)
	// Through Control, which holds the file open: a Kick racing Close
	// never sets a descriptor the process has since reused.
	_ = a.rc.Control(a.kick)
}

// set sets the timerfd to go off once when Mono() reaches t, replacing
// any earlier setting.
func (a *Alarm) set(fd uintptr, t time.Duration) {
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(monoOrigin+t, 1)))}
	// Raw, as the read is: the call never blocks.
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(&its)), 0, 0, 0)
}

// Close ends the alarm: a Wait in progress returns false.
func (a *Alarm) Close() { _ = a.f.Close() }

// A Bell wakes a goroutine waiting on it when another rings it: an
// eventfd read through the runtime's network poller, so the waiter is
// given to whichever thread polls next, as an Alarm's is, rather than
// readied by the ringer (see daemon's openWorker). An Alarm kicked does
// the same, but setting a timerfd to a time already past costs a timer
// interrupt on the spot, which on a VM was a tenth of soakd's CPU at
// 10,000 rings a second; writing an eventfd does not.
type Bell struct {
	f    *os.File
	rc   syscall.RawConn
	buf  [8]byte
	one  [8]byte               // the count a ring adds: 1, in the host's order
	read func(fd uintptr) bool // bound once: neither Wait nor Ring allocates
	ring func(fd uintptr)
}

// NewBell makes a bell; Close ends it. On a fake clock there is none, as
// there is no Alarm: the engine does without both.
func NewBell() (*Bell, error) {
	if fakeClock() {
		return nil, errors.New("no bell on a fake clock")
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	b := &Bell{f: os.NewFile(uintptr(fd), "bell")}
	if err := pollable(b.f); err != nil {
		_ = b.f.Close()
		return nil, fmt.Errorf("the eventfd cannot be polled: %w", err)
	}
	if b.rc, err = b.f.SyscallConn(); err != nil {
		_ = b.f.Close()
		return nil, err
	}
	*(*uint64)(unsafe.Pointer(&b.one[0])) = 1
	b.read = b.readFd
	b.ring = func(fd uintptr) { b.writeFd(fd) }
	return b, nil
}

func (b *Bell) readFd(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b.buf[0])), uintptr(len(b.buf)))
	return e != unix.EAGAIN && e != unix.EINTR
}

func (b *Bell) writeFd(fd uintptr) {
	_, _, _ = unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b.one[0])), uintptr(len(b.one)))
}

// Wait waits until the bell is rung, or returns at once if it was since
// the last Wait (rings in between count as one); false once the bell is
// closed. One goroutine waits at a time.
func (b *Bell) Wait() bool { return b.rc.Read(b.read) == nil }

// Ring wakes the waiter, or the next Wait. Any goroutine may call it,
// also after Close (it then does nothing).
func (b *Bell) Ring() { _ = b.rc.Control(b.ring) }

// Close ends the bell: a Wait in progress returns false.
func (b *Bell) Close() { _ = b.f.Close() }
