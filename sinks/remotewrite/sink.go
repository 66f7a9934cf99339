package remotewrite

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

const userAgent = "soakd"

// Sink writes series batches as Remote-Write 1.0 requests (protobuf,
// snappy-compressed), one request per batch, and returns only when the
// target has answered.
type Sink struct {
	cfg      Config
	log      *zap.Logger
	writeURL string
	auth     string // Authorization header value: a secret, never logged
	tr       *http.Transport
	hc       *http.Client
	conns    sinks.Conns
	errs     *errLog
	schemas  []*sources.Schema // Reset deletes their series

	// QueryState and q serve query workloads (query.go); their zero
	// values, a sink opened for series.
	sinks.QueryState
	q *querier

	// states holds idle per-write buffers: at most one per worker is
	// kept, so memory stays bounded by workers x batch size.
	states chan *state
	closed atomic.Bool
}

var (
	_ sinks.Sink        = (*Sink)(nil)
	_ sinks.Pinger      = (*Sink)(nil)
	_ sinks.Preparer    = (*Sink)(nil)
	_ sinks.ConnCounter = (*Sink)(nil)
)

// state is what one Write needs, reused from batch to batch: the encoder
// (with its label cache) and the request's buffers.
type state struct {
	enc  Encoder
	buf  []byte // the WriteRequest
	zbuf []byte // snappy's output: the request body

	payload []byte
	sent    atomic.Int64 // bytes the transport read from payload
	open    atomic.Int32 // bodies over payload not closed yet
	getBody func() (io.ReadCloser, error)
}

// body is a request body over a state's payload that counts the bytes
// the transport reads and tells the state when it is closed: only then
// may the payload's buffer be reused (net/http may close a request body
// after RoundTrip returned).
type body struct {
	r      bytes.Reader
	st     *state
	closed atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.st.sent.Add(int64(n))
	return n, err
}

func (b *body) Close() error {
	if !b.closed.Swap(true) {
		b.st.open.Add(-1)
	}
	return nil
}

func (st *state) newBody() (io.ReadCloser, error) {
	b := &body{st: st}
	b.r.Reset(st.payload)
	st.open.Add(1)
	return b, nil
}

// Open is the registry's OpenFunc for prom+http:// and prom+https://
// (series and query workloads). It does no I/O.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range o.Schemas {
		errs = append(errs, CheckSchema(s, cfg.Labels))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := cfg.LoadTLS(); err != nil {
		return nil, err
	}
	if err := cfg.withSecrets(o.Password, o.Token); err != nil {
		return nil, err
	}
	s := New(cfg, o)
	if o.Kind == sources.Queries {
		if err := s.newQuerier(o.Schemas, o.Churn); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Check is the registry's CheckFunc: it validates the URL's parameters
// and reads its TLS files.
func Check(u *url.URL, _ sources.Kind) error {
	c, err := ParseURL(u)
	if err != nil {
		return err
	}
	return c.LoadTLS()
}

// New returns a sink for cfg (with its secrets filled in). It does no
// I/O.
func New(cfg Config, o sinks.Options) *Sink {
	workers := max(o.Workers, 1)
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("target", cfg.String()))
	s := &Sink{
		cfg:      cfg,
		log:      log,
		writeURL: cfg.baseURL() + cfg.Path,
		auth:     cfg.authHeader(),
		errs:     newErrLog(log),
		schemas:  o.Schemas,
		states:   make(chan *state, workers),
	}
	s.tr = newTransport(&cfg, workers, &s.conns)
	s.hc = &http.Client{Transport: s.tr}
	return s
}

// newTransport returns a Transport sized for workers concurrent writers:
// one kept-alive connection per worker (plus Ping and the target watch),
// and no transparent response decompression.
func newTransport(c *Config, workers int, conns *sinks.Conns) *http.Transport {
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
	}
	if c.TLS {
		// HTTP/1.1 also over TLS (a custom dialer leaves HTTP/2 off): one
		// connection per worker.
		t.TLSClientConfig = c.tlsConfig
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.Insecure} //nolint:gosec // only when the user asks
		}
	}
	return t
}

func (s *Sink) getState() *state {
	select {
	case st := <-s.states:
		return st
	default:
		st := &state{enc: Encoder{Labels: s.cfg.Labels}}
		st.getBody = st.newBody // one method value per state, not per write
		return st
	}
}

func (s *Sink) putState(st *state) {
	select {
	case s.states <- st:
	default:
	}
}

// Write encodes every table of b into one WriteRequest and sends it. It
// returns the bytes sent (compressed).
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if len(b.Queries) > 0 {
		return s.writeQueries(ctx, b)
	}
	st := s.getState()
	st.buf = st.buf[:0]
	samples := 0
	for _, t := range b.Tables {
		if t.Len() > 0 {
			var n int
			st.buf, n = st.enc.AppendTable(st.buf, t)
			samples += n
		}
	}
	if samples == 0 {
		s.putState(st)
		return 0, nil
	}
	if t := s.cfg.Timeout; t > 0 {
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > t {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, t)
			defer cancel()
		}
	}
	st.zbuf = Compress(st.zbuf[:cap(st.zbuf)], st.buf)
	st.payload = st.zbuf
	st.sent.Store(0)
	err := s.post(ctx, st, samples)
	sent := int(st.sent.Load())
	if st.open.Load() == 0 {
		s.putState(st)
	} // else the transport may still read the payload: let it go
	if err != nil {
		s.errs.once(err)
		return sent, fmt.Errorf("cannot write %d samples of %d rows: %w", samples, b.Len(), err)
	}
	return sent, nil
}

// post sends st.payload and classifies the answer.
func (s *Sink) post(ctx context.Context, st *state, samples int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, nil)
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
	req.Body, _ = st.newBody()
	req.ContentLength = int64(len(st.payload))
	req.GetBody = st.getBody
	s.setHeaders(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinks.ClassifyHTTPTransport(ctx, err, s.cfg.Idempotent)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	return classifyStatus(resp.StatusCode, resp.Header, readMessage(resp), samples, s.cfg.Idempotent)
}

// setHeaders sets Remote-Write 1.0's headers, the credentials and the
// URL's extra headers.
func (s *Sink) setHeaders(req *http.Request) {
	h := req.Header
	for k, v := range s.cfg.Headers {
		h[k] = v
	}
	h["Content-Encoding"] = contentEncoding
	h["Content-Type"] = contentType
	h["X-Prometheus-Remote-Write-Version"] = rwVersion
	h["User-Agent"] = userAgentHeader
	if s.auth != "" {
		h.Set("Authorization", s.auth)
	}
}

// Header values shared by every request (read only).
var (
	contentEncoding = []string{"snappy"}
	contentType     = []string{"application/x-protobuf"}
	rwVersion       = []string{"0.1.0"}
	userAgentHeader = []string{userAgent}
)

// emptyRequest is an empty WriteRequest, snappy-compressed: what Ping
// sends.
var emptyRequest = Compress(nil, nil)

// Compress compresses a WriteRequest in snappy's block format, at
// snappy's standard speed, into dst if it is long enough (give it
// dst[:cap(dst)] to reuse a buffer). klauspost's snappy.Encode is s2's
// EncodeSnappyBetter, which on devops batches took twice the CPU for
// bodies under 2 % smaller; Prometheus' own remote-write client
// (github.com/golang/snappy) has only the standard speed.
func Compress(dst, src []byte) []byte { return s2.EncodeSnappy(dst, src) }

// Ping sends an empty write request: the target is ready when it accepts
// one, which also proves the write path and the credentials (a sink
// opened for a query workload asks a query instead, pingQuery). A target
// that answers 404, 401 or 403 refuses it (a configuration error); one
// that is starting (503) or down is waited for.
func (s *Sink) Ping(ctx context.Context) error {
	if s.q != nil {
		return s.pingQuery(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, bytes.NewReader(emptyRequest))
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
	s.setHeaders(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinks.ClassifyHTTPTransport(ctx, err, true)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	return fmt.Errorf("cannot write to %s: %w", s.cfg.String(), classifyStatus(resp.StatusCode, resp.Header, readMessage(resp), 0, true))
}

// Prepare reads the data's time range for a query workload, and keeps
// reading it until Close; a series workload has nothing to prepare (the
// target takes any metric).
func (s *Sink) Prepare(ctx context.Context) error { return s.StartRangeWatch(ctx) }

// OpenConns is the number of connections open to the server now.
func (s *Sink) OpenConns() int64 { return s.conns.Open() }

// Close releases idle connections. Safe to call more than once.
func (s *Sink) Close(context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.StopRangeWatch()
	s.tr.CloseIdleConnections()
	return nil
}
