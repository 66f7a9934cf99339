package influx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeFlag struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeFlag) Close() error { c.closed.Store(true); return nil }

func okResponse() *http.Response {
	return &http.Response{StatusCode: 204, Body: http.NoBody, Header: http.Header{}}
}

// RoundTrip returns only after the transport closed the body, even when
// the transport answers first and reads the body afterwards, as net/http
// may; the bytes it read are added to the context's counter.
func TestWaitTransportWaitsForClose(t *testing.T) {
	t.Parallel()
	var bg atomic.Int32
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		bg.Add(1)
		go func() {
			defer bg.Add(-1)
			time.Sleep(20 * time.Millisecond)
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}()
		return okResponse(), nil
	})
	body := &closeFlag{Reader: strings.NewReader("cpu v=1 1\n")}
	var sent int64
	ctx := context.WithValue(context.Background(), sentKey{}, &sent)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/write", body)
	if _, err := (waitTransport{inner}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if !body.closed.Load() {
		t.Fatal("RoundTrip returned before the body was closed")
	}
	if sent != int64(len("cpu v=1 1\n")) {
		t.Errorf("sent %d bytes, want %d", sent, len("cpu v=1 1\n"))
	}
	for bg.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
}

// A resend on a fresh body (GetBody) is tracked too: RoundTrip waits for
// the second body, not just the first.
func TestWaitTransportResend(t *testing.T) {
	t.Parallel()
	second := &closeFlag{Reader: strings.NewReader("abc")}
	done := make(chan struct{})
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Body.Close() // the first attempt found the connection closed
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		go func() {
			defer close(done)
			time.Sleep(20 * time.Millisecond)
			_, _ = io.Copy(io.Discard, b)
			b.Close()
		}()
		return okResponse(), nil
	})
	req, _ := http.NewRequest(http.MethodPost, "http://x/write", &closeFlag{Reader: strings.NewReader("abc")})
	req.GetBody = func() (io.ReadCloser, error) { return second, nil }
	if _, err := (waitTransport{inner}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if !second.closed.Load() {
		t.Fatal("RoundTrip returned before the resent body was closed")
	}
	<-done
}

// When the context ends first, RoundTrip returns anyway; the sink then
// drops the buffer instead of reusing it.
func TestWaitTransportContextEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	finished := make(chan struct{})
	inner := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		go func() {
			defer close(finished)
			<-release
			r.Body.Close()
		}()
		return okResponse(), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/write", strings.NewReader("x"))
	if _, err := (waitTransport{inner}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("returned before the context ended, with the body still open")
	}
	close(release)
	<-finished
}

// Against a real HTTP server that rejects large bodies before reading
// them (as InfluxDB does for auth errors), writes are classified and the
// sink keeps working while it reuses its buffers (under -race this also
// watches for net/http still reading a buffer being refilled; the tests
// above pin the guarantee itself).
func TestEarlyAnswerReuse(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 0 {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("X-Influxdb-Error", "authorization failed")
		w.WriteHeader(http.StatusUnauthorized) // before reading the body
	}))
	defer srv.Close()
	schemas := []*sources.Schema{cpuSchema("cpu")}
	raw := "influx1://" + strings.TrimPrefix(srv.URL, "http://") + "?db=x"
	s := openSink(t, raw, sinks.Options{Schemas: schemas, Workers: 1})
	b := sources.NewSeriesBatch(schemas)
	g := &gen{devices: 50, start: time.Now(), step: time.Second}
	var e bytes.Buffer
	for i := range 10 {
		g.fill(b, 20000) // ~2 MB: more than the socket buffers take at once
		_, err := s.Write(context.Background(), b)
		if i%2 == 0 && sinks.ClassOf(err) != sinks.Rejected && sinks.ClassOf(err) != sinks.Connection {
			fmt.Fprintf(&e, "write %d: %v; ", i, err)
		}
		if i%2 == 1 && err != nil && sinks.ClassOf(err) != sinks.Connection {
			fmt.Fprintf(&e, "write %d: %v; ", i, err)
		}
	}
	if e.Len() > 0 {
		t.Error(e.String())
	}
}
