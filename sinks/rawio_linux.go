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

// rawIO is a socket's read and write in progress. The functions handed
// to RawConn are bound once per connection and find their buffer here, so
// a read or write allocates nothing (a closure over its arguments would
// be allocated each time). The mutexes keep concurrent reads (or writes)
// of one connection apart, as net.Conn's own locks do.
type rawIO struct {
	rmu    sync.Mutex
	rb     []byte
	rn     int
	rerrno syscall.Errno
	read   func(fd uintptr) bool

	wmu    sync.Mutex
	wb     []byte
	wn     int
	werrno syscall.Errno
	write  func(fd uintptr) bool
}

func newRawIO() *rawIO {
	st := &rawIO{}
	st.read, st.write = st.readFd, st.writeFd
	return st
}

func (s sysConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Read(b)
	}
	st := s.io
	st.rmu.Lock()
	st.rb, st.rn, st.rerrno = b, 0, 0
	err := s.rc.Read(st.read)
	n, errno := st.rn, st.rerrno
	st.rb = nil
	st.rmu.Unlock()
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

func (st *rawIO) readFd(fd uintptr) bool {
	b := st.rb
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			st.rn = int(r)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		st.rerrno = e
		return true
	}
}

func (s sysConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return s.countedConn.Write(b)
	}
	st := s.io
	st.wmu.Lock()
	st.wb, st.wn, st.werrno = b, 0, 0
	err := s.rc.Write(st.write)
	n, errno := st.wn, st.werrno
	st.wb = nil
	st.wmu.Unlock()
	switch {
	case err != nil:
		return n, s.opError("write", err)
	case errno != 0:
		return n, s.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

func (st *rawIO) writeFd(fd uintptr) bool {
	b := st.wb
	for st.wn < len(b) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[st.wn])), uintptr(len(b)-st.wn))
		switch e {
		case 0:
			st.wn += int(r)
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		st.werrno = e
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
