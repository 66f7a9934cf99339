package sinks

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// A socket's reads and writes go to the kernel as raw system calls, which
// the Go runtime does not announce as system calls (its net package's
// do): each announced call wakes the runtime's monitor thread when it
// sleeps, which then polls every 20 µs for the next millisecond, so at a
// few thousand operations a second it never sleeps, and that polling cost
// a sidecar more CPU than its requests. The socket is non-blocking (the
// network poller's), so no call blocks: one that would waits for the
// poller, as net.Conn's do, and deadlines hold the same way. Errors are
// net.Conn's: a *net.OpError naming read or write.

func (s sysConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Read(b)
	}
	var n int
	var errno syscall.Errno
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(r)
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			errno = e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case errno != 0:
		return 0, s.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (s sysConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Write(b)
	}
	var n int
	var errno syscall.Errno
	err := s.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
				continue
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			errno = e
			return true
		}
		return true
	})
	switch {
	case err != nil:
		return n, s.opError("write", err)
	case errno != 0:
		return n, s.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is err as net.Conn's Read or Write would return it.
func (s sysConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		// RawConn's own errors (closed, deadline) say raw-read or
		// raw-write.
		e := *oe
		e.Op = op
		return &e
	}
	return &net.OpError{Op: op, Net: s.LocalAddr().Network(), Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
}
