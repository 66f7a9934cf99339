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

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/logthrottle"
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
	case errors.Is(err, http.ErrSchemeMismatch):
		// net/http says so in place of the RecordHeaderError above when
		// the answer starts "HTTP/". Resending cannot help: taken for a
		// broken connection, a target URL of https to a plain-HTTP
		// server was retried until START_TIMEOUT, by default for ever.
		return NewError(Rejected, false, fmt.Errorf("%w: the server speaks plain HTTP, not TLS; give the target URL a scheme without TLS (prom+http://, influx://, influx1:// without tls=true)", err))
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

// WriteTimeout bounds ctx by a sink's TIMEOUT t (0: none), only where t
// is tighter than ctx's own deadline: deriving from the engine's reusable
// write context costs a context and a timer per write. cancel, never
// nil, ends what it derived.
func WriteTimeout(ctx context.Context, t time.Duration) (context.Context, context.CancelFunc) {
	if t <= 0 {
		return ctx, func() {}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= t {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, t)
}

// ClassifyHTTPStatus is the class of a write a server answered with a
// non-2xx status code, and whether to send it again: 429 and 503 say the
// request was not processed (always safe to resend), 408 that the server
// gave up reading it; 504 and other 5xx leave its fate unknown (resent
// when the write is idempotent); other 4xx refuse it.
func ClassifyHTTPStatus(code int, idempotent bool) (Class, bool) {
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return Server, true
	case code == http.StatusRequestTimeout:
		return Timeout, true
	case code == http.StatusGatewayTimeout:
		return Timeout, idempotent
	case code >= 500:
		return Server, idempotent
	case code >= 400:
		return Rejected, false
	}
	return Other, false
}

// NewHTTPTransport returns a Transport for a sink that writes over HTTP
// with workers concurrent writers: one kept-alive connection per worker
// (plus setup, Ping and the target watch), large write buffers for
// megabyte bodies, and no transparent response decompression. With TLS
// on, tc is its configuration (LoadClientTLS's), or nil when the sink was
// made without reading its files; HTTP/1.1 stays on over TLS (a custom
// dialer leaves HTTP/2 off): one connection per worker, as without TLS,
// rather than every worker's bodies multiplexed over one connection.
func NewHTTPTransport(workers int, conns *Conns, tlsOn bool, tc *tls.Config, insecure bool) *http.Transport {
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
	if tlsOn {
		t.TLSClientConfig = tc
		if tc == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // only when the user asks
		}
	}
	return t
}

// StatusAnswer is a write error a server answered with an HTTP status
// and a message; LogFields are what else the sink says of it in a log.
type StatusAnswer interface {
	error
	Answer() (status int, message string)
	LogFields() []zap.Field
}

// ErrorLog logs each distinct error a server answered a write with once,
// not once per batch: a rejected schema or a full disk would otherwise
// log thousands of lines a minute. It tells at most MaxDistinctErrors
// kinds apart.
type ErrorLog struct {
	log   *zap.Logger
	kinds *logthrottle.Once
	cuts  string
}

// MaxDistinctErrors is how many kinds of error an ErrorLog tells apart.
const MaxDistinctErrors = 64

// NewErrorLog logs to l. Two messages are the same error when their text
// before the first character of cuts (where the server quotes the
// offending line, field or series), digits folded, is the same.
func NewErrorLog(l *zap.Logger, cuts string) *ErrorLog {
	return &ErrorLog{log: l, kinds: logthrottle.NewOnce(MaxDistinctErrors), cuts: cuts}
}

// Once logs err, a classified write error, the first time its status and
// kind are seen. Errors without an answer (StatusAnswer) are not logged:
// they are counted by class, and the engine logs them.
func (l *ErrorLog) Once(err error) {
	var sa StatusAnswer
	if !errors.As(err, &sa) {
		return
	}
	status, msg := sa.Answer()
	if !l.kinds.First(l.log, strconv.Itoa(status)+" "+l.kind(msg)) {
		return
	}
	fields := []zap.Field{zap.String("class", string(ClassOf(err))), zap.Int("status", status), zap.String("error", msg)}
	l.log.Warn("write failed (logged once for each distinct error)", append(fields, sa.LogFields()...)...)
}

// kind is msg's text before the first of cuts, at most 120 bytes, digits
// folded.
func (l *ErrorLog) kind(msg string) string {
	if i := strings.IndexAny(msg, l.cuts); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	b := []byte(msg)
	for i, c := range b {
		if c >= '0' && c <= '9' {
			b[i] = '#'
		}
	}
	return string(b)
}

// Buffers keeps the idle per-write state of a sink's workers (encoders
// and their buffers) for reuse: at most one per worker, so memory stays
// bounded by workers × batch size, and a write never waits for one.
type Buffers[T any] struct {
	idle     chan *T
	newState func() *T
}

// NewBuffers keeps at most workers idle states; newState makes one when
// none is idle.
func NewBuffers[T any](workers int, newState func() *T) *Buffers[T] {
	return &Buffers[T]{idle: make(chan *T, workers), newState: newState}
}

// Get returns an idle state, or a new one.
func (b *Buffers[T]) Get() *T {
	select {
	case st := <-b.idle:
		return st
	default:
		return b.newState()
	}
}

// Put keeps st for the next write, or drops it when enough are idle.
func (b *Buffers[T]) Put(st *T) {
	select {
	case b.idle <- st:
	default:
	}
}
