package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/klauspost/compress/gzip"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
)

const userAgent = "soakd"

// Sink writes series batches as line protocol, one HTTP request per
// batch, and returns only when the target has answered.
type Sink struct {
	cfg   Config
	log   *zap.Logger
	errs  *sinks.ErrorLog
	tr    *http.Transport
	conns sinks.Conns // the transport's connections
	hc    *http.Client
	auth  string // Authorization header value: a secret, never logged

	writeURL string // v1

	client     influxdb2.Client // v2
	v2WriteURL string           // the client's write URL

	states *sinks.Buffers[state] // idle per-write buffers
	closed atomic.Bool

	q *querier // query workloads: nil for series ones
	sinks.QueryState

	bucket bucketID // TargetFigures: the v2 bucket's id on InfluxDB 2.x

	lost lostDatabase // the database created again when it goes missing
}

// state is what one Write needs: the encoder (with its per-schema names
// and tag-set cache) and buffers, reused from batch to batch.
type state struct {
	enc  lineproto.Encoder
	buf  []byte
	gz   *gzip.Writer
	zbuf bytes.Buffer

	payload []byte       // the request body: buf or zbuf's bytes
	sent    atomic.Int64 // bytes the transport read from payload
	getBody func() (io.ReadCloser, error)
}

// body is a request body over a state's payload that counts the bytes the
// transport reads from it, resends included: the bytes sent. Counting
// here rather than through a value in the request's context leaves the
// engine's write context unwrapped: net/http would start a goroutine per
// request to watch a wrapped context, as it cannot see its AfterFunc.
type body struct {
	r    bytes.Reader // a field, not embedded: WriteTo would bypass Read
	sent *atomic.Int64
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.sent.Add(int64(n))
	return n, err
}

func (*body) Close() error { return nil }

// newBody returns a fresh body over st.payload (also r.GetBody, for the
// transport's resends).
func (st *state) newBody() (io.ReadCloser, error) {
	b := &body{sent: &st.sent}
	b.r.Reset(st.payload)
	return b, nil
}

// setBody makes st.payload the body of r.
func (st *state) setBody(r *http.Request) {
	r.Body, _ = st.newBody()
	r.ContentLength = int64(len(st.payload))
	r.GetBody = st.getBody
}

var (
	_ sinks.Sink     = (*Sink)(nil)
	_ sinks.Preparer = (*Sink)(nil)
	_ sinks.Pinger   = (*Sink)(nil)
	_ sinks.Querier  = (*Sink)(nil)
	_ sinks.Noter    = (*Sink)(nil)
)

// Notes are the notes for the summary: a query workload's data never
// found.
func (s *Sink) Notes() []string { return s.QueryNotes() }

// Open is the registry's OpenFunc for influx://, influxs:// and influx1://
// (the registry entry accepts series workloads only). It does no I/O.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range o.Schemas {
		errs = append(errs, lineproto.CheckSchema(s))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := cfg.LoadTLS(); err != nil {
		return nil, err
	}
	cfg.withSecrets(o.Password, o.Token)
	if o.Kind == sources.Queries {
		if err := checkQueries(cfg); err != nil {
			return nil, err
		}
		s := New(cfg, o)
		if err := s.newQuerier(o.Schemas, o.Churn); err != nil {
			return nil, err
		}
		return s, nil
	}
	return New(cfg, o), nil
}

// Check is the registry's CheckFunc: it validates the URL's parameters,
// reads its TLS files, and for query workloads checks that the target
// speaks InfluxQL.
func Check(u *url.URL, kind sources.Kind) error {
	c, err := ParseURL(u)
	if err != nil {
		return err
	}
	if kind == sources.Queries {
		if err := checkQueries(c); err != nil {
			return err
		}
	}
	return c.LoadTLS()
}

// New returns a sink for cfg. It does no I/O.
func New(cfg Config, o sinks.Options) *Sink {
	workers := max(o.Workers, 1)
	log := o.Log(zap.String("target", cfg.String()))
	s := &Sink{
		cfg:  cfg,
		log:  log,
		errs: sinks.NewErrorLog(log, errorCuts),
		auth: cfg.authHeader(),
	}
	s.states = sinks.NewBuffers(workers, s.newState)
	s.tr = sinks.NewHTTPTransport(workers, &s.conns, cfg.TLS, cfg.tlsConfig, cfg.Insecure)
	s.hc = &http.Client{Transport: waitTransport{s.tr}}
	if cfg.API == V1 {
		q := url.Values{}
		if cfg.DB != "" {
			q.Set("db", cfg.DB)
		}
		if cfg.RP != "" {
			q.Set("rp", cfg.RP)
		}
		if cfg.PrecisionParam != "" {
			q.Set("precision", cfg.PrecisionParam)
		}
		s.writeURL = cfg.baseURL() + cfg.WritePath
		if len(q) > 0 {
			s.writeURL += "?" + q.Encode()
		}
		return s
	}
	opts := influxdb2.DefaultOptions().
		SetHTTPClient(s.hc).
		SetApplicationName(userAgent).
		SetPrecision(cfg.Precision.Duration()).
		SetLogLevel(0) // errors only; the sink logs what matters itself
	s.client = influxdb2.NewClientWithOptions(cfg.baseURL(), strings.TrimPrefix(s.auth, "Token "), opts)
	// The client's write URL: API URL + write?org=&bucket=&precision=.
	q := url.Values{"org": {cfg.Org}, "bucket": {cfg.Bucket}, "precision": {cfg.Precision.String()}}
	s.v2WriteURL = s.client.HTTPService().ServerAPIURL() + "write?" + q.Encode()
	return s
}

func (s *Sink) newState() *state {
	st := &state{enc: lineproto.Encoder{Precision: s.cfg.Precision, SortTags: s.cfg.sortTags()}}
	st.getBody = st.newBody // one method value per state, not per write
	return st
}

// Write encodes every table of b into one line-protocol body and sends it
// in one request. It returns the bytes sent (compressed when gzip is on).
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if len(b.Queries) > 0 {
		return s.writeQueries(ctx, b)
	}
	st := s.states.Get()
	if cap(st.buf) == 0 {
		st.presize(b, s.cfg.Gzip > 0)
	}
	st.buf = st.buf[:0]
	for _, t := range b.Tables {
		if t.Len() > 0 {
			st.buf = st.enc.AppendTable(st.buf, t)
		}
	}
	if len(st.buf) == 0 {
		s.states.Put(st)
		return 0, nil
	}
	ctx, cancel := sinks.WriteTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	st.payload = st.buf
	if s.cfg.Gzip > 0 {
		st.payload = st.compress(s.cfg.Gzip)
	}
	st.sent.Store(0)
	var err error
	if s.cfg.API == V1 {
		err = s.writeV1(ctx, st)
	} else {
		err = s.writeV2(ctx, st)
	}
	sent := int(st.sent.Load())
	if ctx.Err() == nil {
		s.states.Put(st)
	} // else the transport may still be reading the buffers: let them go
	if err != nil {
		s.errs.Once(err)
		return sent, fmt.Errorf("cannot write %d rows: %w", b.Len(), err)
	}
	return sent, nil
}

func (s *Sink) writeV1(ctx context.Context, st *state) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, nil)
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
	st.setBody(req)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", userAgent)
	if s.cfg.Gzip > 0 {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinks.ClassifyHTTPTransport(ctx, err, s.cfg.Idempotent)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	eb := readError(resp)
	err = classifyStatus(resp.StatusCode, resp.Header, eb, lines(st.buf), s.cfg.Idempotent)
	return s.onMissing(ctx, resp.StatusCode, eb.msg, err)
}

func (s *Sink) writeV2(ctx context.Context, st *state) error {
	// The request the client's write API would send, through the
	// client's HTTP service (auth, user agent, error parsing), but with
	// the sink's counting body over its reused buffer (safe because
	// waitTransport returns only after the body is closed). The client
	// would also compress every batch with a new standard-library writer
	// at the default level (about 8 us of CPU per 350-byte row here) in a
	// goroutine of its own.
	he := s.client.HTTPService().DoPostRequest(ctx, s.v2WriteURL, nil, func(r *http.Request) {
		st.setBody(r)
		if s.cfg.Gzip > 0 {
			r.Header.Set("Content-Encoding", "gzip")
		}
		r.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}, func(r *http.Response) error {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
		return r.Body.Close()
	})
	switch {
	case he == nil:
		return nil
	case he.StatusCode != 0:
		msg := he.Message
		if msg == "" {
			msg = he.Code
		}
		eb := errBody{msg: truncate(msg), tail: msg[max(0, len(msg)-64):], unparsed: strings.Count(msg, "unable to parse")}
		err := classifyStatus(he.StatusCode, he.Header, eb, lines(st.buf), s.cfg.Idempotent)
		return s.onMissing(ctx, he.StatusCode, msg, err)
	}
	return sinks.ClassifyHTTPTransport(ctx, he, s.cfg.Idempotent)
}

// presize gives a state's empty buffers, before its first batch, about
// the room b takes: each table's first line times its rows, with an
// eighth more, and with gzip a quarter of that for its output. Grown by
// appending instead (a quarter at a time, at that size), the 3.6 MB
// buffer of a 10,000-row TSBS batch took 21 MB of allocations and their
// copies and page faults: on the 2-core development VM, whose page faults
// are slow, encoding a worker's first batch took 240-350 ms instead of the
// next ones' 3-14 ms (40-60 ms presized), while the server waited for its
// first write.
func (st *state) presize(b *sources.Batch, compressed bool) {
	n := 0
	for _, t := range b.Tables {
		for i := 0; i < t.Len(); i++ {
			if line, ok := st.enc.AppendRow(st.buf[:0], t, i); ok {
				st.buf = line
				n += len(line) * (t.Len() - i)
				break
			}
		}
	}
	n += n / 8
	st.buf = make([]byte, 0, n)
	if compressed {
		st.zbuf.Grow(n / 4)
	}
}

func (st *state) compress(level int) []byte {
	st.zbuf.Reset()
	if st.gz == nil {
		st.gz, _ = gzip.NewWriterLevel(&st.zbuf, level) // level checked by ParseURL
	} else {
		st.gz.Reset(&st.zbuf)
	}
	_, _ = st.gz.Write(st.buf) // writes to a bytes.Buffer cannot fail
	_ = st.gz.Close()
	return st.zbuf.Bytes()
}

func lines(buf []byte) int { return bytes.Count(buf, []byte{'\n'}) }

// OpenConns is the number of connections open to the server now.
func (s *Sink) OpenConns() int64 { return s.conns.Open() }

// Close releases idle connections. Safe to call more than once.
func (s *Sink) Close(context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.StopRangeWatch()
	if s.client != nil {
		s.client.Close()
	}
	s.tr.CloseIdleConnections()
	return nil
}
