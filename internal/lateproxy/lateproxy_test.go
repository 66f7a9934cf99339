package lateproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// Before Up a connection is refused; after it, bytes go through to the
// upstream and back.
func TestRefusesUntilUp(t *testing.T) {
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	p := New(t, ln.Addr().String())
	if !p.Refused() {
		t.Fatal("a connection to the proxy was accepted before Up")
	}
	p.Up(t)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after Up: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through the proxy: %q, %v", line, err)
	}
	if p.Refused() {
		t.Error("refused after Up")
	}
}

// Down ends the connections open through the proxy and refuses new ones,
// as a server that stops; Up lets them through again.
func TestDownThenUp(t *testing.T) {
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	p := New(t, ln.Addr().String())
	p.Up(t)
	echo := func() (net.Conn, error) {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte("ping\n")); err != nil {
			c.Close()
			return nil, err
		}
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "ping\n" {
			c.Close()
			return nil, fmt.Errorf("echo %q: %v", line, err)
		}
		return c, nil
	}
	c, err := echo()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Down()
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("the open connection ended with %v", err)
	}
	if !p.Refused() {
		t.Fatal("a connection was accepted after Down")
	}
	p.Up(t)
	c2, err := echo()
	if err != nil {
		t.Fatalf("after Up again: %v", err)
	}
	c2.Close()
}
