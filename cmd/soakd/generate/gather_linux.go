package generate

import (
	"io"
	"syscall"
	"unsafe"
)

const haveWritev = true

// writev writes every queued range, in as many system calls as partial
// writes and interruptions take.
func (g *gather) writev() error {
	iov := g.iov
	for len(iov) > 0 {
		g.vec = g.vec[:0]
		for _, b := range iov {
			g.vec = append(g.vec, syscall.Iovec{Base: &b[0], Len: uint64(len(b))})
		}
		var n uintptr
		var errno syscall.Errno
		if err := g.rc.Write(func(fd uintptr) bool {
			n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&g.vec[0])), uintptr(len(g.vec)))
			return errno != syscall.EAGAIN // a non-blocking pipe: wait until it takes more
		}); err != nil {
			return err
		}
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			// The file's own write meets the error again and reports it
			// as any write would, named, with its effects: on a closed
			// pipe as standard output, SIGPIPE ends the process quietly,
			// as it did when every write went that way.
			if _, err := g.f.Write(iov[0]); err != nil {
				return err
			}
			iov = iov[1:]
			continue
		case n == 0:
			return io.ErrShortWrite
		}
		for n > 0 { // drop what was written
			if l := uintptr(len(iov[0])); l <= n {
				n -= l
				iov = iov[1:]
			} else {
				iov[0] = iov[0][n:]
				n = 0
			}
		}
	}
	return nil
}
