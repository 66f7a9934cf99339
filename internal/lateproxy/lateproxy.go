// Package lateproxy is a TCP proxy for tests of a target that is not up
// yet: it holds a loopback port on which connections are refused (nothing
// listens) until the test calls Up, then forwards every connection to a
// real server. It stands in front of a server started by
// internal/testserver, as a database that starts after its sidecar does;
// it is a fault injector, not a stand-in for the server.
//
//	p := lateproxy.New(t, srv.Addr) // refuses connections
//	... start soakd against p.Addr(), check it waits ...
//	p.Up(t)                          // connections reach srv from now on
//	p.Down()                         // as the server stopping; Up again later
package lateproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
)

// Proxy refuses connections until Up, then forwards them to its upstream.
type Proxy struct {
	port     *testserver.Reserved
	upstream string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// New reserves a free loopback port for a proxy to upstream (host:port)
// and leaves it closed: a client gets "connection refused" until Up. The
// port stays reserved for the test (testserver.ReservePort), listening or
// not: a port closed again once found free could be taken meanwhile by
// any server starting on the machine, which the kernel gives a free port
// of its choosing. Everything is closed when the test ends.
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p := &Proxy{port: testserver.ReservePort(t), upstream: upstream, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.close)
	return p
}

// Addr is where clients connect (host:port).
func (p *Proxy) Addr() string { return p.port.Addr }

// Up starts listening on the reserved port: connections reach upstream
// from now on.
func (p *Proxy) Up(t testing.TB) {
	t.Helper()
	ln, err := p.port.Listen()
	if err != nil {
		t.Fatalf("lateproxy: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() { p.accept(ln) })
}

// Down stops listening and ends every connection, as a server that
// stops: connections are refused again until the next Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) serve(c net.Conn) {
	u, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	defer p.untrack(c, u)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close so the other side sees the end; a full close
		// follows when both directions are done.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}

// track registers c and u so close can end them; false when the proxy is
// closed already (both are then closed).
func (p *Proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close()
		u.Close()
		return false
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) untrack(c, u net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
	c.Close()
	u.Close()
}

// close stops listening and ends every connection.
func (p *Proxy) close() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// Refused reports whether a connection to the proxy's address is refused
// now (a check for the test itself: nothing listens before Up).
func (p *Proxy) Refused() bool {
	c, err := net.DialTimeout("tcp", p.port.Addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}
