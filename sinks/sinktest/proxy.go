package sinktest

import (
	"net"
	"sync"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

// proxy is a TCP proxy in front of a server that can freeze: frozen, it
// still accepts connections and keeps the open ones, but passes no byte
// either way, as when the server is stopped with SIGSTOP or the network
// drops everything. It is a fault injector for real servers, not a
// stand-in for one.
type proxy struct {
	ln     net.Listener
	server string
	wg     sync.WaitGroup
	done   chan struct{} // closed by Close

	mu    sync.Mutex
	open  chan struct{} // closed while traffic flows
	conns []net.Conn
}

// newProxy starts a proxy to server (host:port) on a free loopback port,
// closed when the test ends.
func newProxy(t *testing.T, server string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot listen for the proxy: %v", err)
	}
	p := &proxy{ln: ln, server: server, done: make(chan struct{}), open: make(chan struct{})}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address (host:port).
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops all traffic until Thaw.
func (p *proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already frozen
	}
}

// Thaw lets traffic flow again.
func (p *proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Close stops the proxy and closes every connection through it.
func (p *proxy) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// pass waits until traffic may flow; false when the proxy is closing.
func (p *proxy) pass() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.done:
		return false
	}
}

// track records c for Close; false (and c closed) when the proxy is
// closing.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
		p.conns = append(p.conns, c)
		return true
	}
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve connects c to the server once traffic may flow, and copies both
// ways.
func (p *proxy) serve(c net.Conn) {
	if !p.pass() {
		return
	}
	s, err := net.Dial("tcp", p.server)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(s) {
		c.Close()
		return
	}
	p.wg.Go(func() { p.copy(s, c) })
	p.copy(c, s)
}

// copy copies src to dst, holding what it read while the proxy is frozen.
// When either side fails it closes both.
func (p *proxy) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// closedAddr returns a loopback address that refuses connections for as
// long as the test runs: a reserved port, which no server started
// meanwhile can take, as it could one that was free a moment ago.
func closedAddr(t *testing.T) string {
	t.Helper()
	return testserver.ReservePort(t).Addr
}
