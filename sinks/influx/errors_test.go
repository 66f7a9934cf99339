package influx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/sinks"
)

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name       string
		code       int
		h          http.Header
		msg, tail  string
		unparsed   int
		points     int
		idempotent bool
		class      sinks.Class
		retry      bool
		after      time.Duration
		partial    bool
		dropped    int
	}{
		{name: "bad request", code: 400, msg: `unable to parse 'x': missing fields`, unparsed: 1, class: sinks.Rejected},
		{name: "auth", code: 401, msg: "authorization failed", class: sinks.Rejected},
		{name: "forbidden", code: 403, msg: `"u" user is not authorized to write to database "x"`, class: sinks.Rejected},
		{name: "no database", code: 404, msg: `database not found: "x"`, class: sinks.Rejected},
		{name: "too large", code: 413, msg: "Request Entity Too Large", class: sinks.Rejected},
		{name: "rate limited", code: 429, h: hdr("Retry-After", "7"), class: sinks.Server, retry: true, after: 7 * time.Second},
		{name: "unavailable, not idempotent", code: 503, h: hdr("Retry-After", "2"), class: sinks.Server, retry: true, after: 2 * time.Second},
		{name: "internal, idempotent", code: 500, msg: "timeout", idempotent: true, class: sinks.Server, retry: true},
		{name: "internal, not idempotent", code: 500, msg: "timeout", class: sinks.Server},
		{name: "request timeout", code: 408, class: sinks.Timeout, retry: true},
		{name: "gateway timeout", code: 504, idempotent: true, class: sinks.Timeout, retry: true},
		{name: "bad gateway", code: 502, class: sinks.Server},
		{name: "1.x partial write: type conflict", code: 400, points: 10,
			msg:  `partial write: field type conflict: input field "v" on measurement "m" is type float, already exists as type integer dropped=3`,
			tail: `already exists as type integer dropped=3"}`, class: sinks.Rejected, partial: true, dropped: 3},
		{name: "1.x partial write: unparsable lines", code: 400, points: 10, msg: "partial write: unable to parse 'a': x\nunable to parse 'b': y dropped=0",
			tail: `y dropped=0"}`, unparsed: 2, class: sinks.Rejected, partial: true, dropped: 2},
		{name: "2.x partial write", code: 400, points: 10, msg: "partial write error (7 written): unable to parse 'x'", unparsed: 1,
			class: sinks.Rejected, partial: true, dropped: 3},
		{name: "redirect", code: 301, class: sinks.Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.h
			if h == nil {
				h = http.Header{}
			}
			points := tc.points
			err := classifyStatus(tc.code, h, errBody{msg: tc.msg, tail: tc.tail, unparsed: tc.unparsed}, points, tc.idempotent)
			if c := sinks.ClassOf(err); c != tc.class {
				t.Errorf("class %s, want %s", c, tc.class)
			}
			retry, after := sinks.Retryable(err)
			if retry != tc.retry || after != tc.after {
				t.Errorf("retry %v after %v, want %v after %v", retry, after, tc.retry, tc.after)
			}
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("no *StatusError in %v", err)
			}
			if se.Partial != tc.partial || se.Dropped != tc.dropped {
				t.Errorf("partial %v dropped %d, want %v %d", se.Partial, se.Dropped, tc.partial, tc.dropped)
			}
			if tc.partial && (se.Stored() != points-tc.dropped || !strings.Contains(err.Error(), fmt.Sprintf("%d of %d points not stored", tc.dropped, points))) {
				t.Errorf("stored %d, message %q", se.Stored(), err)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks the server's message", err)
			}
			// Too large: every batch of that size will be; the error
			// names soakd's setting.
			if names := strings.Contains(err.Error(), "lower BATCH_SIZE"); names != (tc.code == 413) {
				t.Errorf("error %q names BATCH_SIZE: %v", err, names)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-5":                            0,
		"30":                            30 * time.Second,
		" 2 ":                           2 * time.Second,
		"99999999999":                   sinks.MaxRetryAfter,
		"Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0, // in the past
		"Sat, 03 Jan 2026 03:04:05 GMT": sinks.MaxRetryAfter,
		"soon":                          0,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := sinks.RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

func TestClassifyTransport(t *testing.T) {
	t.Parallel()
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		err        error
		idempotent bool
		class      sinks.Class
		retry      bool
	}{
		{"refused: never sent", live, dial, false, sinks.Connection, true},
		{"reset, idempotent", live, reset, true, sinks.Connection, true},
		{"reset, not idempotent", live, reset, false, sinks.Connection, false},
		{"eof mid-request", live, fmt.Errorf("post: %w", io.ErrUnexpectedEOF), true, sinks.Connection, true},
		{"our deadline", done, context.Canceled, true, sinks.Timeout, true},
		{"net timeout", live, &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, false, sinks.Timeout, false},
		{"bad TLS answer", live, fmt.Errorf("x: %w", tlsRecordHeaderError()), true, sinks.Rejected, false},
		// net/http's own unexported errors, e.g. when a killed server had
		// closed the keep-alive connection the request went out on.
		{"no answer, no named cause", live, &url.Error{Op: "Post", URL: "http://x/write",
			Err: errors.New("http: server closed idle connection")}, true, sinks.Connection, true},
		{"no answer, not idempotent", live, errors.New("something odd"), false, sinks.Connection, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := sinks.ClassifyHTTPTransport(tc.ctx, tc.err, tc.idempotent)
			if c := sinks.ClassOf(err); c != tc.class {
				t.Errorf("class %s, want %s (%v)", c, tc.class, err)
			}
			if retry, _ := sinks.Retryable(err); retry != tc.retry {
				t.Errorf("retry %v, want %v", retry, tc.retry)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap %v", err, tc.err)
			}
		})
	}
}

func tlsRecordHeaderError() error {
	return tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}
}

// readError keeps the message, the tail and counts every "unable to
// parse" even across read chunks, in a body far larger than it keeps.
func TestReadError(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"error":"partial write: `)
	const n = 5000
	for i := range n {
		fmt.Fprintf(&b, "unable to parse 'cpu,host=h%d usage=': missing field value\\n", i)
	}
	b.WriteString(` dropped=4"}`)
	resp := &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(&oneByteThenRest{s: b.String()})}
	eb := readError(resp)
	if eb.unparsed != n {
		t.Errorf("unparsed %d, want %d", eb.unparsed, n)
	}
	if !strings.HasSuffix(eb.tail, `dropped=4"}`) || len(eb.tail) > 64 {
		t.Errorf("tail %q", eb.tail)
	}
	if !strings.HasPrefix(eb.msg, "{\"error\":\"partial write: unable to parse") || len(eb.msg) > maxMessage+3 {
		t.Errorf("msg %q (a truncated JSON body is kept as text)", eb.msg[:min(80, len(eb.msg))])
	}
	ok, dropped := parsePartial(errBody{msg: "partial write: " + eb.msg, tail: eb.tail, unparsed: eb.unparsed}, 100000)
	if !ok || dropped != n+4 {
		t.Errorf("partial %v dropped %d, want %d", ok, dropped, n+4)
	}

	for _, tc := range []struct {
		h    http.Header
		body string
		want string
	}{
		{http.Header{"X-Influxdb-Error": {"database not found: \"x\""}}, `{"error":"database not found: \"x\""}`, `database not found: "x"`},
		{http.Header{}, `{"code":"invalid","message":"partial write error (1 written)"}`, "partial write error (1 written)"},
		{http.Header{}, "plain text\n", "plain text"},
		{http.Header{}, "", "Bad Request"},
	} {
		resp := &http.Response{StatusCode: 400, Header: tc.h, Body: io.NopCloser(strings.NewReader(tc.body))}
		if got := readError(resp).msg; got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
	}
}

// oneByteThenRest returns its first byte alone, then chunks of 4093 bytes,
// so matches straddle read boundaries.
type oneByteThenRest struct {
	s   string
	off int
}

func (r *oneByteThenRest) Read(p []byte) (int, error) {
	if r.off >= len(r.s) {
		return 0, io.EOF
	}
	n := 4093
	if r.off == 0 {
		n = 1
	}
	n = copy(p[:min(n, len(p))], r.s[r.off:])
	r.off += n
	return n, nil
}

// Each distinct server error is logged once, however many batches fail
// with it; the number of distinct errors remembered is bounded.
func TestErrLogOnce(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	l := sinks.NewErrorLog(zap.New(core), errorCuts)
	fail := func(code int, msg string) error {
		return classifyStatus(code, http.Header{}, errBody{msg: msg}, 1, true)
	}
	for i := range 100 {
		l.Once(fail(400, fmt.Sprintf("unable to parse 'cpu,host=h%d x': bad", i)))
		l.Once(fail(404, `database not found: "db"`))
		l.Once(sinks.NewError(sinks.Connection, true, errors.New("refused")))
	}
	if n := logs.Len(); n != 2 {
		t.Fatalf("%d log entries, want 2: %v", n, logs.All())
	}
	for i := range 2 * sinks.MaxDistinctErrors {
		l.Once(fail(500, fmt.Sprintf("error kind %c%c", 'a'+i%26, 'a'+i/26)))
	}
	if n := logs.Len(); n != sinks.MaxDistinctErrors+1 {
		t.Errorf("%d log entries, want %d (bounded, plus one notice)", n, sinks.MaxDistinctErrors+1)
	}
	for _, e := range logs.All() {
		if e.ContextMap()["error"] == nil && !strings.Contains(e.Message, "too many") {
			t.Errorf("entry without the server's message: %v", e)
		}
	}
}
