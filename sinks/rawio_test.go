package sinks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// dialPair returns a connection through Conns.Wrap and the server's end.
func dialPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	var c Conns
	var d net.Dialer
	cli, err := c.Wrap(d.DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return cli, srv
}

// A wrapped socket carries what net.Conn carries, both ways, also when a
// write or read must wait for the other end (8 MB is more than the
// kernel's socket buffers hold, so the writer waits for the reader).
func TestConnReadWriteWhole(t *testing.T) {
	cli, srv := dialPair(t)
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	for _, dir := range []struct {
		name string
		w, r net.Conn
	}{{"client writes", cli, srv}, {"client reads", srv, cli}} {
		errc := make(chan error, 1)
		go func() {
			n, err := dir.w.Write(want)
			if err == nil && n != len(want) {
				err = io.ErrShortWrite
			}
			errc <- err
		}()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(dir.r, got); err != nil {
			t.Fatalf("%s: read: %v", dir.name, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: write: %v", dir.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the bytes read differ from those written", dir.name)
		}
	}
}

// The wrapped socket's errors are net.Conn's: io.EOF at the end, a
// deadline's timeout, a closed connection's net.ErrClosed and a reset
// peer's system error, each a *net.OpError naming read or write.
func TestConnErrorsAsNetConn(t *testing.T) {
	cli, srv := dialPair(t)
	if _, ok := cli.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); !ok {
		t.Fatal("the wrapped TCP connection is not a syscall.Conn")
	}
	op := func(err error, want string) {
		t.Helper()
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != want {
			t.Errorf("error %v (%T) is not a *net.OpError of %s", err, err, want)
		}
	}
	buf := make([]byte, 16)

	_ = cli.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := cli.Read(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	op(err, "read")
	_ = cli.SetReadDeadline(time.Time{})

	if _, err := srv.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if n, err := cli.Read(buf); n != 1 || err != nil {
		t.Fatalf("read %d bytes, %v; want the 1 written", n, err)
	}
	if n, err := cli.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want io.EOF", n, err)
	}

	// The peer is gone: a write fails, at the latest once the peer's
	// reset has arrived.
	var werr error
	for range 100 {
		if _, werr = cli.Write(bytes.Repeat([]byte("y"), 1<<16)); werr != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var se *os.SyscallError
	if !errors.As(werr, &se) || se.Syscall != "write" {
		t.Errorf("write to a closed peer: %v, want a write system error", werr)
	}
	op(werr, "write")

	cli.Close()
	_, err = cli.Read(buf)
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v, want net.ErrClosed", err)
	}
	op(err, "read")
	_, err = cli.Write(buf)
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
	op(err, "write")
}

// A read and a write of a wrapped socket allocate nothing: at thousands
// of operations a second, an allocation per call is garbage the sidecar
// collects on the target's cores.
func TestConnReadWriteAllocs(t *testing.T) {
	cli, srv := dialPair(t)
	msg := []byte("ping\r\n")
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := cli.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(srv, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cli, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a write and a read allocate %v times, want 0", allocs)
	}
}
