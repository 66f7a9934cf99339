package testserver

import (
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
)

// Reserved is a loopback port held, until the test ends, by a socket
// bound to it that does not listen: connections to it are refused, as to
// a port nobody uses, and no server can take it meanwhile. A port found
// free and closed again (FreePort) can be taken: any server starting on
// the machine (another test's, another package's) binds a free port of
// the kernel's choosing, so a test that wants a refusal there, or that
// listens there later, fails when that server got it.
type Reserved struct {
	Port int
	Addr string // 127.0.0.1:Port

	mu sync.Mutex
	fd int // -1 once handed to a listener or closed
}

// ReservePort reserves a free loopback port for the test.
func ReservePort(t testing.TB) *Reserved {
	t.Helper()
	// ForkLock: the socket must not leak into a server started meanwhile
	// before it is marked close-on-exec.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("cannot reserve a port: socket: %v", err)
	}
	// No SO_REUSEADDR: with it, a listener that sets it (as Go's do) could
	// bind the port while this socket does not listen.
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		t.Fatalf("cannot reserve a port: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		t.Fatalf("cannot reserve a port: getsockname: %v", err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	r := &Reserved{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), fd: fd}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fd >= 0 {
			_ = syscall.Close(r.fd)
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

// Listen starts listening on the reserved port, with the socket that held
// it, so no other server can have taken it; it may be called once.
func (r *Reserved) Listen() (net.Listener, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return nil, fmt.Errorf("port %d: no longer reserved", r.Port)
	}
	if err := syscall.Listen(r.fd, syscall.SOMAXCONN); err != nil {
		return nil, fmt.Errorf("listen on reserved port %d: %w", r.Port, err)
	}
	f := os.NewFile(uintptr(r.fd), r.Addr)
	r.fd = -1
	defer f.Close() // FileListener holds a copy
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen on reserved port %d: %w", r.Port, err)
	}
	return ln, nil
}
