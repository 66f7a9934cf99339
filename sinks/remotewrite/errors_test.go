package remotewrite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// answering is a server that answers every write with status and body
// (and Retry-After when set), counting requests and checking that each
// is a Remote-Write 1.0 request.
func answering(t *testing.T, status int, body, retryAfter string) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		for h, want := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
			"X-Prometheus-Remote-Write-Version": "0.1.0", "X-Scope-Orgid": "tenant1", "Authorization": "Bearer s3cret"} {
			if got := r.Header.Get(h); got != want {
				t.Errorf("header %s: %q, want %q", h, got, want)
			}
		}
		raw, _ := io.ReadAll(r.Body)
		if _, err := snappy.DecodeStrict(nil, raw); err != nil {
			t.Errorf("body: %v", err)
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// Each answer gets its class, and the engine is told whether to resend
// and after how long: a 400 is never resent, out-of-order samples are
// said so, 429 and 503 are resent after Retry-After, other 5xx only
// when idempotent.
func TestClassify(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 3, start: time.Now(), step: time.Second}).fill(b, 6)
	for _, tc := range []struct {
		name, params  string
		status        int
		body, after   string
		class         sinks.Class
		retry, ooo    bool
		wantAfter     time.Duration
		wantInMessage string
	}{
		{name: "ok", status: 204},
		{name: "bad request", status: 400, body: "invalid labels", class: sinks.Rejected, wantInMessage: "invalid labels"},
		{name: "out of order", status: 400, body: "out of order sample\n", class: sinks.OutOfOrder, ooo: true},
		{name: "duplicate", status: 400, body: "duplicate sample for timestamp", class: sinks.OutOfOrder, ooo: true},
		{name: "too old", status: 400, body: "out of bounds", class: sinks.OutOfOrder, ooo: true},
		// Prometheus 2.42 with an out-of-order window: older than it.
		{name: "too old for the window", status: 500, body: "too old sample\n", class: sinks.OutOfOrder, ooo: true},
		{name: "server error naming a sample", status: 500, body: "too old sample store", class: sinks.Server, retry: true},
		{name: "auth", status: 401, body: "no", class: sinks.Rejected, wantInMessage: sinks.AuthFailed},
		{name: "too large", status: 413, body: "request too large", class: sinks.Rejected, wantInMessage: "request too large (" + sinks.TooLarge + ")"},
		{name: "throttled", status: 429, body: "slow down", after: "7", class: sinks.Server, retry: true, wantAfter: 7 * time.Second},
		{name: "starting", status: 503, class: sinks.Server, retry: true},
		{name: "server error", status: 500, body: "boom", class: sinks.Server, retry: true},
		{name: "server error not idempotent", params: "&idempotent=false", status: 500, class: sinks.Server},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, n := answering(t, tc.status, tc.body, tc.after)
			s := openSink(t, "prom+http://"+addr+"/api/v1/write?protocol=1.0&header=X-Scope-OrgID:tenant1"+tc.params,
				sinks.Options{Schemas: schemas, Token: "s3cret"})
			sent, err := s.Write(context.Background(), b)
			if n.Load() != 1 {
				t.Errorf("%d requests, want 1: the engine, not the sink, resends", n.Load())
			}
			if sent <= 0 {
				t.Errorf("%d bytes sent", sent)
			}
			if tc.class == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if sinks.ClassOf(err) != tc.class {
				t.Fatalf("class %s, want %s: %v", sinks.ClassOf(err), tc.class, err)
			}
			retry, after := sinks.Retryable(err)
			if retry != tc.retry || after != tc.wantAfter {
				t.Errorf("retry %t after %v, want %t after %v", retry, after, tc.retry, tc.wantAfter)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.OutOfOrder != tc.ooo || se.StatusCode != tc.status || se.Samples != b.NumValues {
				t.Errorf("status error %+v, want out of order %t", se, tc.ooo)
			}
			if !strings.Contains(err.Error(), tc.wantInMessage) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q, want it to say %q and no secret", err, tc.wantInMessage)
			}
		})
	}
}

// Ping sends an empty write: accepted means ready; a wrong path (404)
// or refused credentials are refusals, a server starting (503) is
// waited for.
func TestPing(t *testing.T) {
	for _, tc := range []struct {
		status int
		class  sinks.Class
	}{{204, ""}, {200, ""}, {404, sinks.Rejected}, {401, sinks.Rejected}, {503, sinks.Server}} {
		addr, n := answering(t, tc.status, "", "")
		s := openSink(t, "prom+http://"+addr+"/api/v1/write?protocol=1.0&header=X-Scope-OrgID:tenant1", sinks.Options{Token: "s3cret"})
		err := s.Ping(context.Background())
		if sinks.ClassOf(err) != tc.class || n.Load() != 1 {
			t.Errorf("HTTP %d: %d requests, class %q (%v), want %q", tc.status, n.Load(), sinks.ClassOf(err), err, tc.class)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, "-1": 0, "junk": 0, "99999999": sinks.MaxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
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

// An answer's text stays; binary in it, whole or quoted, becomes a count
// of its bytes.
func TestTextOnly(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`out of order sample`:                           `out of order sample`,
		`bad label "héllo wörld"`:                       `bad label "héllo wörld"`,
		"\x0a\x1a\x00\xff":                              "(4 bytes, not text)",
		`incorrect line "\xf1\x01\n\x1a": cannot parse`: `incorrect line (4 bytes, not text): cannot parse`,
		`cut "\x00\x01\x0`:                              `cut (at least 2 bytes, not text)`,
		`a lone " quote`:                                `a lone " quote`,
	} {
		if got := textOnly(in); got != want {
			t.Errorf("textOnly(%q) = %q, want %q", in, got, want)
		}
	}
}
