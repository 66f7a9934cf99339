package sinks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxRetryAfter bounds a server's Retry-After, so that a broken header
// cannot park a workload for days.
const MaxRetryAfter = 10 * time.Minute

// RetryAfter parses an HTTP answer's Retry-After (seconds or an HTTP
// date), at most MaxRetryAfter; 0 without one.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, MaxRetryAfter))
}

// ClassifyHTTPTransport classifies an HTTP request that got no answer, for
// the sinks that write over HTTP: TLS refusals are rejected (naming the
// URL parameters ca, cert and key), a deadline is a timeout, a refused
// dial a connection error that is always safe to resend (nothing was
// sent), and any other broken connection a connection error, resent when
// the write is idempotent.
func ClassifyHTTPTransport(ctx context.Context, err error, idempotent bool) error {
	var (
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		cie x509.CertificateInvalidError
		rhe tls.RecordHeaderError
		ne  net.Error
		oe  *net.OpError
	)
	switch {
	case errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &hne) || errors.As(err, &cie):
		return NewError(Rejected, false, ExplainTLS(err, "ca", "", "cert and key"))
	case errors.As(err, &rhe):
		return NewError(Rejected, false, fmt.Errorf("TLS handshake failed; does the server speak TLS? %w", err))
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return NewError(Timeout, idempotent, err)
	case errors.As(err, &oe) && oe.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED):
		// Nothing was sent: always safe to resend.
		return NewError(Connection, true, err)
	}
	class := ClassOf(err) // EOF too: the server closed the connection mid-request
	if class == Other {
		// No HTTP answer and no cause named above: the connection broke
		// in a way net/http reports with errors of its own, unexported
		// (a keep-alive connection the server closed as the request went
		// out, seen when the server is killed).
		class = Connection
	}
	return NewError(class, idempotent, err)
}

// NewHTTPTransport returns the Transport of a sink that writes over HTTP
// with workers concurrent writers: one kept-alive connection per worker
// (plus two, for the readiness ping and the sink's other requests),
// dialled through conns, large write buffers for megabyte bodies, and no
// transparent response decompression. With useTLS it speaks TLS with tc,
// or, for a sink built without reading its TLS files (tc nil), TLS 1.2 or
// later that checks the server unless insecure.
func NewHTTPTransport(workers int, conns *Conns, useTLS bool, tc *tls.Config, insecure bool) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           conns.Wrap(d.DialContext),
		MaxIdleConns:          workers + 2,
		MaxIdleConnsPerHost:   workers + 2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        8 << 10,
	}
	if useTLS {
		// HTTP/1.1 also over TLS (a custom dialer leaves HTTP/2 off): one
		// connection per worker, as without TLS, rather than every
		// worker's megabyte bodies multiplexed over one connection.
		t.TLSClientConfig = tc
		if tc == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // only when the user asks
		}
	}
	return t
}
