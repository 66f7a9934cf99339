package testserver

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Reserved is a loopback port held, until the test ends, by a socket
// bound to it that does not listen: connections to it are refused, as to
// a port nobody uses, and no server can take it meanwhile. A port found
// free and closed again (FreePort) can be taken: any server starting on
// the machine (another test's, another package's) binds a free port of
// the kernel's choosing, so a test that wants a refusal there, or that
// listens there later, fails when that server got it.
//
// The socket sets SO_REUSEPORT, which lets Listen bind the port beside
// it, and nothing else: servers do not set it (Go's listeners set
// SO_REUSEADDR only), and without it on both sockets the port is taken.
type Reserved struct {
	Port int
	Addr string // 127.0.0.1:Port

	mu sync.Mutex
	fd int // -1 once closed
}

// ReservePort reserves a free loopback port for the test.
func ReservePort(t testing.TB) *Reserved {
	t.Helper()
	// ForkLock: the socket must not leak into a server started meanwhile
	// before it is marked close-on-exec.
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("cannot reserve a port: socket: %v", err)
	}
	fail := func(what string, err error) {
		_ = unix.Close(fd)
		t.Fatalf("cannot reserve a port: %s: %v", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		fail("SO_REUSEPORT", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		fail("bind", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		fail("getsockname", err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	r := &Reserved{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), fd: fd}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fd >= 0 {
			_ = unix.Close(r.fd)
			r.fd = -1
		}
	})
	return r
}

// ClosedPort returns a loopback port that refuses connections for as long
// as the test runs.
func ClosedPort(t testing.TB) int {
	t.Helper()
	return ReservePort(t).Port
}

// Listen listens on the reserved port. The reservation outlives the
// listener: once it is closed, connections are refused again and the
// port is still the test's, for another Listen.
func (r *Reserved) Listen() (net.Listener, error) {
	r.mu.Lock()
	closed := r.fd < 0
	r.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("port %d: no longer reserved", r.Port)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", r.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on reserved port %d: %w", r.Port, err)
	}
	return ln, nil
}
