package sinks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"time"
)

// Protocols a probe tells apart (Speaks): those of the servers a target
// URL's host and port are most often mistaken for, a service of the same
// deployment.
const (
	SpeaksRedis      = "Redis"
	SpeaksPostgreSQL = "PostgreSQL"
	SpeaksHTTP       = "HTTP"
	SpeaksHTTPS      = "HTTPS"
)

// sslRequest is PostgreSQL's SSLRequest message, which a PostgreSQL
// server answers with one byte, S or N, before anything else.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// Speaks names the protocol the server at addr answers in, of Redis,
// PostgreSQL, HTTP and HTTPS, for a target that never answered in its
// URL's: "" when it answers in none of them before ctx ends. It opens a
// connection per question: an inline PING (Redis answers + or -, a web
// server "HTTP/"), PostgreSQL's SSLRequest when nothing answered that (a
// PostgreSQL server closes at a PING, and a Redis waits for the rest of
// an SSLRequest), and an HTTP request inside a TLS handshake. ctx must
// have a deadline: a server that keeps a connection open without a word
// is asked until then.
func Speaks(ctx context.Context, addr string) string {
	b := PlainAnswer(ctx, addr, []byte("PING\r\n\r\n"), 5)
	switch {
	case bytes.HasPrefix(b, []byte("HTTP/")):
		return SpeaksHTTP
	case len(b) > 0 && (b[0] == '+' || b[0] == '-'):
		return SpeaksRedis
	case len(b) == 0 && AnswersPostgreSQL(ctx, addr):
		return SpeaksPostgreSQL
	}
	if _, https := TLSProbe(ctx, addr); https {
		return SpeaksHTTPS
	}
	return ""
}

// AnswersPostgreSQL says whether the server at addr answers PostgreSQL's
// SSLRequest as a PostgreSQL server does, with S or N.
func AnswersPostgreSQL(ctx context.Context, addr string) bool {
	a := PlainAnswer(ctx, addr, sslRequest, 1)
	return len(a) == 1 && (a[0] == 'S' || a[0] == 'N')
}

// PlainAnswer is the first n bytes (or fewer, up to ctx's end or the
// server's close) the server at addr answers hello with, in plain text;
// nil without an answer.
func PlainAnswer(ctx context.Context, addr string, hello []byte, n int) []byte {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	return answer(ctx, c, hello, n)
}

// TLSProbe says whether the server at addr completes a TLS handshake (its
// certificate not checked: only the protocol is asked), and whether it
// then answers an HTTP request inside it as a web server does (a Redis
// over TLS answers -ERR).
func TLSProbe(ctx context.Context, addr string) (tlsOn, https bool) {
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe of the protocol; nothing secret is sent
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// A server that wants a client certificate refuses the
		// handshake with an alert: TLS all the same.
		var ae tls.AlertError
		return errors.As(err, &ae), false
	}
	defer c.Close()
	return true, bytes.HasPrefix(answer(ctx, c, []byte("GET / HTTP/1.0\r\n\r\n"), 5), []byte("HTTP/"))
}

// answer writes hello on c and reads up to n bytes of its answer, until
// ctx's deadline.
func answer(ctx context.Context, c net.Conn, hello []byte, n int) []byte {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write(hello); err != nil {
		return nil
	}
	b := make([]byte, n)
	got, _ := io.ReadFull(c, b)
	return b[:got]
}

// ProbeTimeout bounds a probe of a server's protocol.
const ProbeTimeout = 2 * time.Second

// SpeaksOther wraps err, a failed ping of the server at addr, in the
// configuration error of a protocol mismatch when the server speaks one of
// Speaks' protocols other than want (the URL's: one of them is enough, as
// HTTP or HTTPS for an HTTP target): a wrong port, most often another
// service of the same deployment, which would be waited for until
// START_TIMEOUT as a server that does not answer (a Redis waits for the
// rest of what it takes for a command) or a connection lost (PostgreSQL
// and Redis close one at an HTTP request). Only for a connection made, a
// timeout or a connection lost: a failed dial says what it is.
func SpeaksOther(ctx context.Context, err error, addr string, want ...string) error {
	if c := ClassOf(err); err == nil || (c != Connection && c != Timeout) || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ProbeTimeout)
	defer cancel()
	p := Speaks(pctx, addr)
	if p == "" || slices.Contains(want, p) {
		return err
	}
	m := fmt.Errorf("the server at %s speaks %s, not %s: check the target URL's host and port", addr, p, want[0])
	return NewError(Rejected, false, &ProtocolMismatch{Err: fmt.Errorf("%w (%v)", m, err)})
}

// OtherProtocol is SpeaksOther for an HTTP target at rawURL.
func OtherProtocol(ctx context.Context, err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if err == nil || perr != nil || u.Host == "" {
		return err
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	return SpeaksOther(ctx, err, addr, SpeaksHTTP, SpeaksHTTPS)
}
