package sinks

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A sink's transport keeps workers + 2 connections alive and closes
// the others once a burst of more concurrent requests is over, and asks
// for no compressed answers (it reads them itself).
func TestHTTPTransportPool(t *testing.T) {
	t.Parallel()
	const workers, burst = 2, 10
	var arrived sync.WaitGroup
	arrived.Add(burst)
	release := make(chan struct{})
	var mu sync.Mutex
	var encodings []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		encodings = append(encodings, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		arrived.Done()
		<-release
	}))
	defer srv.Close()
	var conns Conns
	tr := NewHTTPTransport(workers, &conns, false, nil, false)
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var done sync.WaitGroup
	for range burst {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := hc.Get(srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	arrived.Wait() // every request on a connection of its own
	if n := conns.Open(); n != burst {
		t.Fatalf("%d connections open for %d requests in flight", n, burst)
	}
	close(release)
	done.Wait()
	// The transport closes what it cannot keep as it takes the
	// connections back, just after the answers were read.
	for i := 0; conns.Open() != workers+2 && i < 500; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := conns.Open(); n != workers+2 {
		t.Errorf("%d connections kept alive, want %d", n, workers+2)
	}
	for _, e := range encodings {
		if e != "" {
			t.Fatalf("Accept-Encoding %q sent", e)
		}
	}
}

// Without the TLS files read, the transport still checks the server's
// certificate, unless insecure; TLS off sets no TLS configuration.
func TestHTTPTransportTLSFallback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var conns Conns
	get := func(insecure bool) error {
		tr := NewHTTPTransport(1, &conns, true, nil, insecure)
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	var uae x509.UnknownAuthorityError
	if err := get(false); !errors.As(err, &uae) {
		t.Errorf("an unknown CA: %v", err)
	}
	if err := get(true); err != nil {
		t.Errorf("insecure: %v", err)
	}
	if tr := NewHTTPTransport(1, &conns, false, nil, true); tr.TLSClientConfig != nil {
		t.Errorf("TLS off: TLS configuration %+v", tr.TLSClientConfig)
	}
}

// A non-2xx answer's class: what was not processed is always resent,
// what may have been stored only when resending is harmless, and a
// refused request never.
func TestClassifyHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		code       int
		idempotent bool
		class      Class
		retry      bool
	}{
		{429, false, Server, true},
		{503, false, Server, true},
		{408, false, Timeout, true},
		{504, false, Timeout, false},
		{504, true, Timeout, true},
		{500, false, Server, false},
		{502, true, Server, true},
		{400, true, Rejected, false},
		{401, true, Rejected, false},
		{404, true, Rejected, false},
		{302, true, Other, false},
	} {
		if class, retry := ClassifyHTTPStatus(tc.code, tc.idempotent); class != tc.class || retry != tc.retry {
			t.Errorf("%d (idempotent %v): %s, retry %v; want %s, %v", tc.code, tc.idempotent, class, retry, tc.class, tc.retry)
		}
	}
}

// WriteTimeout derives a deadline only where TIMEOUT is tighter than the
// caller's: none for 0, the caller's context as is when its own deadline
// comes first.
func TestWriteTimeout(t *testing.T) {
	bg := context.Background()
	if ctx, cancel := WriteTimeout(bg, 0); ctx != bg {
		t.Error("TIMEOUT 0 derived a context")
	} else {
		cancel()
	}
	near, cancelNear := context.WithTimeout(bg, time.Minute)
	defer cancelNear()
	if ctx, cancel := WriteTimeout(near, time.Hour); ctx != near {
		t.Error("a TIMEOUT looser than the caller's deadline derived a context")
	} else {
		cancel()
	}
	far, cancelFar := context.WithTimeout(bg, 2*time.Hour)
	defer cancelFar()
	ctx, cancel := WriteTimeout(far, time.Minute)
	dl, _ := ctx.Deadline()
	farDl, _ := far.Deadline()
	if ctx == far || !dl.Before(farDl) {
		t.Errorf("a TIMEOUT tighter than the caller's deadline: deadline %v, the caller's %v", dl, farDl)
	}
	cancel()
	if ctx.Err() == nil {
		t.Error("cancel did not end the derived context")
	}
}
