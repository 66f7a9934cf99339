package sinks

import (
	"context"
	"net"
	"syscall"
	"testing"
)

func TestConnsCountsOpenConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	var c Conns
	var d net.Dialer
	dial := c.Wrap(d.DialContext)
	a, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("dialing a closed port succeeded")
	}
	if got := c.Open(); got != 2 {
		t.Errorf("open %d after two dials and a failed one, want 2", got)
	}
	if _, ok := a.(syscall.Conn); !ok {
		t.Error("a TCP connection lost its SyscallConn")
	}
	a.Close()
	a.Close() // twice: counted once
	if got := c.Open(); got != 1 {
		t.Errorf("open %d after closing one twice, want 1", got)
	}
	b.Close()
	if got := c.Open(); got != 0 {
		t.Errorf("open %d after closing both, want 0", got)
	}
}
