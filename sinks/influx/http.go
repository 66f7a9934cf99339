package influx

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
)

// waitTransport makes RoundTrip return only once the wrapped transport has
// closed the request body (or the request's context is done).
//
// net/http may read and close a request body after RoundTrip returned (the
// RoundTripper contract allows it, e.g. when the server answers before it
// has read the whole body). The sink sends batches straight from a buffer
// that it reuses for the next batch, so it must know that the transport is
// done with it. If the context ends first, the sink drops the buffer
// instead of reusing it.
type waitTransport struct{ rt http.RoundTripper }

func (t waitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return t.rt.RoundTrip(req)
	}
	w := &bodyWait{closed: make(chan struct{}, 1)}
	r := *req // RoundTrip must not modify req
	r.Body = w.track(req.Body)
	if get := req.GetBody; get != nil {
		// The transport resends on a fresh body when a kept-alive
		// connection turns out to be closed before anything was written.
		r.GetBody = func() (io.ReadCloser, error) {
			b, err := get()
			if err != nil {
				return nil, err
			}
			return w.track(b), nil
		}
	}
	resp, err := t.rt.RoundTrip(&r)
	w.wait(req.Context())
	return resp, err
}

// bodyWait tracks the bodies handed to the transport for one request.
type bodyWait struct {
	open   atomic.Int32
	closed chan struct{} // a token each time open drops to 0
}

func (w *bodyWait) track(rc io.ReadCloser) io.ReadCloser {
	w.open.Add(1)
	return &trackedBody{rc: rc, w: w}
}

// wait returns once every tracked body is closed or ctx is done. A stale
// token (open went to 0 and up again on a resend) only causes another
// look at open.
func (w *bodyWait) wait(ctx context.Context) {
	for w.open.Load() > 0 {
		select {
		case <-w.closed:
		case <-ctx.Done():
			return
		}
	}
}

type trackedBody struct {
	rc     io.ReadCloser
	w      *bodyWait
	closed atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) { return b.rc.Read(p) }

func (b *trackedBody) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	err := b.rc.Close()
	if b.w.open.Add(-1) == 0 {
		select {
		case b.w.closed <- struct{}{}:
		default:
		}
	}
	return err
}
