//go:build linux

package clock

import (
	"errors"
	"fmt"
	"os"
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
type Alarm struct {
	C  <-chan struct{} // receives when the alarm goes off
	f  *os.File
	fd int
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
	c := make(chan struct{}, 1)
	a := &Alarm{C: c, f: os.NewFile(uintptr(fd), "alarm"), fd: fd}
	// A file the network poller cannot take (some sandboxes refuse a
	// timerfd) would end the reading goroutine on its first wait and the
	// alarm would never go off; a deadline is refused on exactly such a
	// file, so the caller learns it now and waits on runtime timers.
	if err := pollable(a.f); err != nil {
		_ = a.f.Close()
		return nil, fmt.Errorf("the timerfd cannot be polled: %w", err)
	}
	rc, err := a.f.SyscallConn()
	if err != nil {
		_ = a.f.Close()
		return nil, err
	}
	go func() {
		var buf [8]byte
		// The read is a raw system call, as the sockets' are (see
		// sinks/rawio_linux.go): the runtime's monitor sleeps on.
		read := func(fd uintptr) bool {
			_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			return e != unix.EAGAIN && e != unix.EINTR
		}
		for {
			if rc.Read(read) != nil {
				return // closed
			}
			select {
			case c <- struct{}{}:
			default: // one pending wake is enough
			}
		}
	}()
	return a, nil
}

// pollable says whether f's waits go through the runtime's network
// poller: only such a file takes a deadline.
func pollable(f *os.File) error { return f.SetReadDeadline(time.Time{}) }

// Set makes the alarm go off once when Mono() reaches t (at once if it
// has), replacing any earlier setting. A wake of an earlier setting may
// still be in C: the receiver checks the time.
func (a *Alarm) Set(t time.Duration) {
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(monoOrigin+t, 1)))}
	// Raw, as the read is: the call never blocks.
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(&its)), 0, 0, 0)
}

// Close ends the alarm.
func (a *Alarm) Close() { _ = a.f.Close() }
