package sinks

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// DialFunc dials a network connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Conns counts the connections a sink has open: every one its dialer
// made that is not closed yet. Over a long run the count tells a leak
// (it grows) from a workload change (it follows WORKERS), which the
// process's open file count alone cannot. The zero value is ready.
type Conns struct{ open atomic.Int64 }

// Open is the number of connections open now.
func (c *Conns) Open() int64 { return c.open.Load() }

// Wrap returns dial, counting the connections it makes until they close.
func (c *Conns) Wrap(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nc, err
		}
		c.open.Add(1)
		cc := countedConn{Conn: nc, c: c, once: new(sync.Once)}
		if sc, ok := nc.(syscall.Conn); ok {
			// Clients probe idle connections through the socket
			// (go-redis's health check): keep that possible.
			if rc, err := sc.SyscallConn(); err == nil {
				return sysConn{cc, rc, newRawIO()}, nil
			}
		}
		return cc, nil
	}
}

type countedConn struct {
	net.Conn
	c    *Conns
	once *sync.Once
}

func (cc countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}

// sysConn is a connection to a socket, which it reads and writes itself
// (rawio_linux.go).
type sysConn struct {
	countedConn
	rc syscall.RawConn
	io *rawIO
}

func (s sysConn) SyscallConn() (syscall.RawConn, error) {
	return s.Conn.(syscall.Conn).SyscallConn()
}
