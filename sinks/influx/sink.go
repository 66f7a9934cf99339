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
	"time"
	"unsafe"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"
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
	cfg  Config
	log  *zap.Logger
	errs *errLog
	tr   *http.Transport
	hc   *http.Client
	auth string // Authorization header value: a secret, never logged

	writeURL string // v1

	client     influxdb2.Client // v2
	v2w        api.WriteAPIBlocking
	v2WriteURL string // the URL v2w posts to, for gzip bodies

	// states holds idle per-write buffers: at most one per worker is kept,
	// so memory stays bounded by workers x batch size.
	states chan *state
	closed atomic.Bool
}

// state is what one Write needs: the encoder (with its per-schema names
// and tag-set cache) and buffers, reused from batch to batch.
type state struct {
	enc  lineproto.Encoder
	buf  []byte
	gz   *gzip.Writer
	zbuf bytes.Buffer
	sent int64
}

var (
	_ sinks.Sink     = (*Sink)(nil)
	_ sinks.Preparer = (*Sink)(nil)
	_ sinks.Pinger   = (*Sink)(nil)
)

// Open is the registry's OpenFunc for influx://, influxs:// and influx1://.
// It does no I/O.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	if o.Kind != 0 && o.Kind != sources.Series {
		return nil, fmt.Errorf("%s:// writes series (rows), not %s workloads", u.Scheme, o.Kind)
	}
	var errs []error
	for _, s := range o.Schemas {
		errs = append(errs, lineproto.CheckSchema(s))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.withSecrets(o.Password, o.Token)
	return New(cfg, o), nil
}

// Check is the registry's CheckFunc: it validates the URL's parameters.
func Check(u *url.URL, kind sources.Kind) error {
	if kind != 0 && kind != sources.Series {
		return fmt.Errorf("%s:// writes series (rows), not %s workloads", u.Scheme, kind)
	}
	_, err := ParseURL(u)
	return err
}

// New returns a sink for cfg. It does no I/O.
func New(cfg Config, o sinks.Options) *Sink {
	workers := max(o.Workers, 1)
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	log = log.With(zap.String("target", cfg.String()))
	tr := newTransport(&cfg, workers)
	s := &Sink{
		cfg:    cfg,
		log:    log,
		errs:   newErrLog(log),
		tr:     tr,
		hc:     &http.Client{Transport: waitTransport{tr}},
		auth:   cfg.authHeader(),
		states: make(chan *state, workers),
	}
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
		SetPrecision(precisionDuration(cfg.Precision)).
		SetLogLevel(0) // errors only; the sink logs what matters itself
	s.client = influxdb2.NewClientWithOptions(cfg.baseURL(), strings.TrimPrefix(s.auth, "Token "), opts)
	s.v2w = s.client.WriteAPIBlocking(cfg.Org, cfg.Bucket)
	// The client's write URL: API URL + write?org=&bucket=&precision=.
	q := url.Values{"org": {cfg.Org}, "bucket": {cfg.Bucket}, "precision": {cfg.Precision.String()}}
	s.v2WriteURL = s.client.HTTPService().ServerAPIURL() + "write?" + q.Encode()
	return s
}

func precisionDuration(p lineproto.Precision) time.Duration {
	switch p {
	case lineproto.Microsecond:
		return time.Microsecond
	case lineproto.Millisecond:
		return time.Millisecond
	case lineproto.Second:
		return time.Second
	}
	return time.Nanosecond
}

func (s *Sink) getState() *state {
	select {
	case st := <-s.states:
		return st
	default:
		return &state{enc: lineproto.Encoder{Precision: s.cfg.Precision}}
	}
}

func (s *Sink) putState(st *state) {
	select {
	case s.states <- st:
	default:
	}
}

// Write encodes every table of b into one line-protocol body and sends it
// in one request. It returns the bytes sent (compressed when gzip is on).
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	st := s.getState()
	st.buf = st.buf[:0]
	for _, t := range b.Tables {
		if t.Len() > 0 {
			st.buf = st.enc.AppendTable(st.buf, t)
		}
	}
	if len(st.buf) == 0 {
		s.putState(st)
		return 0, nil
	}
	if t := s.cfg.Timeout; t > 0 {
		// Only when it is tighter than the caller's deadline: deriving from
		// the engine's reusable write context costs a goroutine per write.
		if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > t {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, t)
			defer cancel()
		}
	}
	st.sent = 0
	ctx = context.WithValue(ctx, sentKey{}, &st.sent)
	var err error
	if s.cfg.API == V1 {
		err = s.writeV1(ctx, st)
	} else {
		err = s.writeV2(ctx, st)
	}
	sent := int(st.sent)
	if ctx.Err() == nil {
		s.putState(st)
	} // else the transport may still be reading the buffers: let them go
	if err != nil {
		s.errs.once(err)
		return sent, fmt.Errorf("cannot write %d rows: %w", b.Len(), err)
	}
	return sent, nil
}

func (s *Sink) writeV1(ctx context.Context, st *state) error {
	body := st.buf
	if s.cfg.Gzip > 0 {
		body = st.compress(s.cfg.Gzip)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, bytes.NewReader(body))
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
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
		return classifyTransport(ctx, err, s.cfg.Idempotent)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	return classifyStatus(resp.StatusCode, resp.Header, readError(resp), lines(st.buf), s.cfg.Idempotent)
}

func (s *Sink) writeV2(ctx context.Context, st *state) error {
	var err error
	if s.cfg.Gzip > 0 {
		// The client would compress every batch with a new standard-library
		// writer at the default level (about 8 us of CPU per 350-byte row
		// here) in a goroutine of its own. The same request, compressed
		// into a reused buffer at the configured level, goes through the
		// client's HTTP service (auth, user agent, error parsing).
		body := st.compress(s.cfg.Gzip)
		if perr := s.client.HTTPService().DoPostRequest(ctx, s.v2WriteURL, bytes.NewReader(body), func(r *http.Request) {
			r.Header.Set("Content-Encoding", "gzip")
			r.Header.Set("Content-Type", "text/plain; charset=utf-8")
		}, func(r *http.Response) error {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
			return r.Body.Close()
		}); perr != nil {
			err = perr
		}
	} else {
		// WriteRecord takes the whole batch as one record: the client
		// joins a single argument without copying and sends it as the
		// request body. The string aliases the reused buffer, which is
		// safe because waitTransport returns only after the body is closed.
		err = s.v2w.WriteRecord(ctx, unsafe.String(unsafe.SliceData(st.buf), len(st.buf)))
	}
	if err == nil {
		return nil
	}
	var he *http2.Error
	if errors.As(err, &he) && he.StatusCode != 0 {
		msg := he.Message
		if msg == "" {
			msg = he.Code
		}
		eb := errBody{msg: truncate(msg), tail: msg[max(0, len(msg)-64):], unparsed: strings.Count(msg, "unable to parse")}
		return classifyStatus(he.StatusCode, he.Header, eb, lines(st.buf), s.cfg.Idempotent)
	}
	return classifyTransport(ctx, err, s.cfg.Idempotent)
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

// Close releases idle connections. Safe to call more than once.
func (s *Sink) Close(context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.client != nil {
		s.client.Close()
	}
	s.tr.CloseIdleConnections()
	return nil
}
