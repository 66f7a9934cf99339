package testserver

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A reserved port refuses connections, no listener can bind it (not even
// among a thousand servers started on ports of the kernel's choosing),
// Listen listens on it, and once that listener is closed the port refuses
// connections and is reserved again, for another Listen. Bugs caught: the
// reservation released (or made with SO_REUSEADDR, which Go's listeners
// set too) so that another server can take the port; a Listen that
// cannot bind beside it, or that ends the reservation.
func TestReservedPort(t *testing.T) {
	r := ReservePort(t)
	taken := func(when string) {
		t.Helper()
		if _, err := net.Dial("tcp", r.Addr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%s: dial the reserved port: %v, want connection refused", when, err)
		}
		if ln, err := net.Listen("tcp", r.Addr); err == nil {
			ln.Close()
			t.Fatalf("%s: another listener bound the reserved port", when)
		}
	}
	taken("reserved")
	var others []net.Listener
	defer func() {
		for _, ln := range others {
			ln.Close()
		}
	}()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, ln)
		if ln.Addr().(*net.TCPAddr).Port == r.Port {
			t.Fatalf("a server on a free port got the reserved port %d", r.Port)
		}
	}
	for i := range 2 {
		ln, err := r.Listen()
		if err != nil {
			t.Fatalf("Listen %d: %v", i+1, err)
		}
		if got := ln.Addr().(*net.TCPAddr).Port; got != r.Port {
			t.Fatalf("listening on port %d, reserved %d", got, r.Port)
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", r.Addr)
		if err != nil {
			t.Fatalf("dial once listening: %v", err)
		}
		c.Close()
		ln.Close()
		taken("after the listener closed")
	}
}
