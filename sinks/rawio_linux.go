package sinks

import (
	"io"
	"net"
	"os"
	"sync"
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

// rawIO is a socket's read and write in progress, each a rawOp. The
// functions handed to RawConn are bound once per connection and find
// their buffer in their rawOp, so a read or write allocates nothing (a
// closure over its arguments would be allocated each time). The mutexes
// keep concurrent reads (or writes) of one connection apart, as
// net.Conn's own locks do.
type rawIO struct {
	r, w rawOp
}

// rawOp is one direction's call in progress: its buffer, the bytes done
// and the errno that ended it.
type rawOp struct {
	mu    sync.Mutex
	b     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool // readFd or writeFd, bound once
}

func newRawIO() *rawIO {
	st := &rawIO{}
	st.r.fn, st.w.fn = st.r.readFd, st.w.writeFd
	return st
}

// do runs op's function on b through call (RawConn's Read or Write) and
// returns the bytes done, with an error as net.Conn's name (read or
// write) would return it: call's own (closed, deadline) or the errno of a
// failed system call.
func (s sysConn) do(op *rawOp, name string, call func(func(fd uintptr) bool) error, b []byte) (int, error) {
	op.mu.Lock()
	op.b, op.n, op.errno = b, 0, 0
	err := call(op.fn)
	n, errno := op.n, op.errno
	op.b = nil
	op.mu.Unlock()
	switch {
	case err != nil:
		return n, s.opError(name, err)
	case errno != 0:
		return n, s.opError(name, os.NewSyscallError(name, errno))
	}
	return n, nil
}

// Read reads at most len(b) bytes; at the end of the stream io.EOF. A
// failed read has read nothing (readFd counts bytes only on success).
func (s sysConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Read(b)
	}
	n, err := s.do(&s.io.r, "read", s.rc.Read, b)
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

func (op *rawOp) readFd(fd uintptr) bool {
	b := op.b
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			op.n = int(r)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		op.errno = e
		return true
	}
}

// Write writes b whole, or returns how much of it it wrote with the
// error that stopped it.
func (s sysConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Write(b)
	}
	return s.do(&s.io.w, "write", s.rc.Write, b)
}

func (op *rawOp) writeFd(fd uintptr) bool {
	b := op.b
	for op.n < len(b) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[op.n])), uintptr(len(b)-op.n))
		switch e {
		case 0:
			op.n += int(r)
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		op.errno = e
		return true
	}
	return true
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
