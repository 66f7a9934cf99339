package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
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
// may.
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
	req, _ := http.NewRequest(http.MethodPost, "http://x/write", body)
	if _, err := (waitTransport{inner}).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if !body.closed.Load() {
		t.Fatal("RoundTrip returned before the body was closed")
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

// Against a real HTTP server that rejects every other large body before
// reading it (as InfluxDB does for auth errors), the rejected writes come
// back as rejected with the server's 401 and the others succeed while the
// sink reuses its buffers (under -race this also watches for net/http
// still reading a buffer being refilled; the tests above pin the
// guarantee itself).
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
		var se *StatusError
		if i%2 == 0 && (sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized) {
			fmt.Fprintf(&e, "write %d: %v, want rejected with HTTP 401; ", i, err)
		}
		if i%2 == 1 && err != nil {
			fmt.Fprintf(&e, "write %d: %v; ", i, err)
		}
	}
	if e.Len() > 0 {
		t.Error(e.String())
	}
}

// afterFuncCtx is a context that is never done, with a done channel of
// its own and an AfterFunc method, like the engine's write context: a
// context derived from it registers a callback instead of starting a
// goroutine to watch its done channel.
type afterFuncCtx struct{ doneCtx }

func (afterFuncCtx) AfterFunc(func()) func() bool { return func() bool { return true } }

// doneCtx is afterFuncCtx without AfterFunc: a context derived from it
// starts a goroutine that watches its done channel.
type doneCtx struct{ done chan struct{} }

func (doneCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c doneCtx) Done() <-chan struct{}     { return c.done }
func (doneCtx) Err() error                  { return nil }
func (doneCtx) Value(any) any               { return nil }

// A write starts no goroutine of its own when the caller's context has an
// AfterFunc method (at hundreds of thousands of writes per second, one
// goroutine per write shows in the latency the engine measures). The
// goroutines alive while the server holds the request are counted with
// context.Background() (no done channel, nothing to watch), with a
// context with AfterFunc (must be the same) and with one without (one
// more: the count can see a watcher). Each write reports the bytes the
// server received.
func TestWriteStartsNoGoroutine(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Store(n)
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	schemas := []*sources.Schema{cpuSchema("cpu")}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, raw := range []string{
		"influx1://%s?db=x", "influx1://%s?db=x&gzip=true",
		"influx://%s?bucket=b&create=false", "influx://%s?bucket=b&create=false&gzip=true",
	} {
		s := openSink(t, fmt.Sprintf(raw, host), sinks.Options{Schemas: schemas, Workers: 1})
		b := sources.NewSeriesBatch(schemas)
		(&gen{devices: 3, start: time.Now(), step: time.Second}).fill(b, 10)
		// during returns the fewest goroutines added while a write with
		// ctx was in the server's hands, over a few writes.
		during := func(ctx context.Context) int {
			fewest := math.MaxInt
			for range 3 {
				before := settledGoroutines()
				errc := make(chan error, 1)
				var sent int
				go func() {
					var err error
					sent, err = s.Write(ctx, b)
					errc <- err
				}()
				<-entered
				fewest = min(fewest, runtime.NumGoroutine()-before)
				release <- struct{}{}
				if err := <-errc; err != nil {
					t.Fatalf("%s: %v", raw, err)
				}
				if int64(sent) != received.Load() {
					t.Errorf("%s: Write reported %d bytes sent, the server received %d", raw, sent, received.Load())
				}
			}
			return fewest
		}
		go func() { <-entered; release <- struct{}{} }()
		if _, err := s.Write(context.Background(), b); err != nil { // opens the kept-alive connection
			t.Fatalf("%s: %v", raw, err)
		}
		base := during(context.Background())
		withAfterFunc := during(afterFuncCtx{doneCtx{make(chan struct{})}})
		without := during(doneCtx{make(chan struct{})})
		if withAfterFunc != base || without != base+1 {
			t.Errorf("%s: goroutines during a write: %d with a context that has AfterFunc, %d without, want %d and %d",
				raw, withAfterFunc, without, base, base+1)
		}
	}
}

// settledGoroutines waits (up to 10 s: a loaded machine may take its time
// to end them) until goroutines that are ending (the previous write's)
// have ended and returns their number.
func settledGoroutines() int {
	n, stable := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(10 * time.Second); stable < 10 && time.Now().Before(deadline); stable++ {
		time.Sleep(time.Millisecond)
		if m := runtime.NumGoroutine(); m != n {
			n, stable = m, 0
		}
	}
	return n
}
