//go:build !linux

package sinks

// Elsewhere a socket is read and written as net.Conn does (rawio_linux.go
// says why Linux differs).

func (s sysConn) Read(b []byte) (int, error) { return s.countedConn.Read(b) }

func (s sysConn) Write(b []byte) (int, error) { return s.countedConn.Write(b) }

// rawIO is Linux's (rawio_linux.go).
type rawIO struct{}

func newRawIO() *rawIO { return nil }
