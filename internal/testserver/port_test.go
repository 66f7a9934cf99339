package testserver

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A reserved port refuses connections, no listener can bind it (not even
// among a thousand servers started on ports of the kernel's choosing),
// and Listen listens on it. Bugs caught: the reservation released (or
// bound with SO_REUSEADDR, which Go's listeners set too) so that another
// server can take the port; Listen on another socket than the one holding
// it.
func TestReservedPort(t *testing.T) {
	r := ReservePort(t)
	if _, err := net.Dial("tcp", r.Addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial the reserved port: %v, want connection refused", err)
	}
	if ln, err := net.Listen("tcp", r.Addr); err == nil {
		ln.Close()
		t.Fatal("another listener bound the reserved port")
	}
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
	ln, err := r.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
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
	if _, err := r.Listen(); err == nil {
		t.Error("a second Listen on a reservation already handed over")
	}
}
