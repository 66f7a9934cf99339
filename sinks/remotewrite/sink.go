package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

const userAgent = "soakd"

// Sink writes series batches as Remote-Write requests (protobuf,
// snappy-compressed), 1.0 or 2.0 as the URL's protocol asks, one request
// per batch, and returns only when the target has answered.
type Sink struct {
	cfg      Config
	log      *zap.Logger
	writeURL string
	auth     string // Authorization header value: a secret, never logged
	tr       *http.Transport
	hc       *http.Client
	conns    sinks.Conns
	errs     *sinks.ErrorLog
	schemas  []*sources.Schema // Reset deletes their series

	// QueryState and q serve query workloads (query.go); their zero
	// values, a sink opened for series.
	sinks.QueryState
	q *querier

	// proto is the protocol writes use: the URL's, or with protocol=auto
	// ProtoAuto until negotiate has decided (negMu serializes that).
	proto atomic.Uint32
	negMu sync.Mutex

	states *sinks.Buffers[state] // idle per-write buffers
	closed atomic.Bool
}

var (
	_ sinks.Sink        = (*Sink)(nil)
	_ sinks.Pinger      = (*Sink)(nil)
	_ sinks.Preparer    = (*Sink)(nil)
	_ sinks.ConnCounter = (*Sink)(nil)
	_ sinks.Noter       = (*Sink)(nil)
)

// Notes are the notes for the summary: a query workload's data never
// found.
func (s *Sink) Notes() []string { return s.QueryNotes() }

// state is what one Write needs, reused from batch to batch: the encoders
// (with their label caches) and the request's buffers.
type state struct {
	enc  Encoder
	enc2 EncoderV2
	buf  []byte // the WriteRequest (or 2.0 Request)
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
	log := o.Log(zap.String("target", cfg.String()))
	s := &Sink{
		cfg:      cfg,
		log:      log,
		writeURL: cfg.baseURL() + cfg.Path,
		auth:     cfg.authHeader(),
		errs:     sinks.NewErrorLog(log, errorCuts),
		schemas:  o.Schemas,
	}
	s.proto.Store(uint32(cfg.Protocol))
	s.states = sinks.NewBuffers(workers, s.newState)
	s.tr = sinks.NewHTTPTransport(workers, &s.conns, cfg.TLS, cfg.tlsConfig, cfg.Insecure)
	s.hc = &http.Client{Transport: s.tr}
	return s
}

func (s *Sink) newState() *state {
	st := &state{enc: Encoder{Labels: s.cfg.Labels}, enc2: EncoderV2{Labels: s.cfg.Labels}}
	st.getBody = st.newBody // one method value per state, not per write
	return st
}

// Write encodes every table of b into one request of the protocol in
// use and sends it. It returns the bytes sent (compressed). With
// protocol=auto, a batch a 2.0 target turns down as not 2.0 (415, or 2xx
// without X-Prometheus-Remote-Write-Samples-Written: nothing written) is
// sent again as 1.0, and 1.0 is used from then on.
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if len(b.Queries) > 0 {
		return s.writeQueries(ctx, b)
	}
	ctx, cancel := sinks.WriteTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	p, err := s.protocol(ctx)
	if err != nil {
		s.errs.Once(err)
		return 0, fmt.Errorf("cannot write %d rows: %w", b.Len(), err)
	}
	st := s.states.Get()
	sent, samples, err := s.sendBatch(ctx, st, b, p)
	if p == Proto2 && s.cfg.Protocol == ProtoAuto && notV2(err) {
		s.fallBack(err)
		if st.open.Load() != 0 { // the transport may still read the payload: let it go
			st = s.states.Get()
		}
		var n int
		n, samples, err = s.sendBatch(ctx, st, b, Proto1)
		sent += n
	}
	if st.open.Load() == 0 {
		s.states.Put(st)
	} // else the transport may still read the payload: let it go
	if err != nil {
		s.errs.Once(err)
		return sent, fmt.Errorf("cannot write %d samples of %d rows: %w", samples, b.Len(), err)
	}
	return sent, nil
}

// sendBatch encodes b as a request of protocol p into st and posts it; it
// returns the bytes sent and the samples encoded (none: nothing sent).
func (s *Sink) sendBatch(ctx context.Context, st *state, b *sources.Batch, p Protocol) (sent, samples int, err error) {
	st.buf = st.buf[:0]
	if p == Proto2 {
		st.enc2.Reset()
		for _, t := range b.Tables {
			if t.Len() > 0 {
				samples += st.enc2.AppendTable(t)
			}
		}
		st.buf = st.enc2.AppendRequest(st.buf)
	} else {
		for _, t := range b.Tables {
			if t.Len() > 0 {
				var n int
				st.buf, n = st.enc.AppendTable(st.buf, t)
				samples += n
			}
		}
	}
	if samples == 0 {
		return 0, 0, nil
	}
	st.zbuf = Compress(st.zbuf[:cap(st.zbuf)], st.buf)
	st.payload = st.zbuf
	st.sent.Store(0)
	err = s.post(ctx, st, samples, p)
	return int(st.sent.Load()), samples, err
}

// post sends st.payload, a request of protocol p, and classifies the
// answer. A 2.0 write is acknowledged only when the target says it wrote
// every sample (X-Prometheus-Remote-Write-Samples-Written): a 1.0-only
// receiver answers 2xx to a 2.0 request it read as an empty 1.0 one.
func (s *Sink) post(ctx context.Context, st *state, samples int, p Protocol) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, nil)
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
	req.Body, _ = st.newBody()
	req.ContentLength = int64(len(st.payload))
	req.GetBody = st.getBody
	s.setHeaders(req, p)
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinks.ClassifyHTTPTransport(ctx, err, s.cfg.Idempotent)
	}
	defer resp.Body.Close()
	return s.answer(resp, p, samples, s.cfg.Idempotent)
}

// answer classifies the target's answer to a request of protocol p that
// held samples samples (0: an empty request, Ping's).
func (s *Sink) answer(resp *http.Response, p Protocol, samples int, idempotent bool) error {
	written, told, bad := samplesWritten(resp.Header)
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if p != Proto2 {
			return nil
		}
		se := &StatusError{StatusCode: resp.StatusCode, Samples: samples, Written: written}
		switch {
		case bad:
			se.Message = "the X-Prometheus-Remote-Write-Samples-Written header does not hold a count"
		case !told:
			se.NotV2 = true
			se.Written = 0
			se.Message = "the answer to a Remote-Write 2.0 request has no X-Prometheus-Remote-Write-Samples-Written header: the target took it for 1.0 and wrote nothing" + s.not2Hint()
		case written < samples:
			se.Message = "the target wrote fewer samples than it was sent"
		default:
			return nil
		}
		return &sinks.Error{Class: sinks.Rejected, Err: se}
	}
	msg := readMessage(resp)
	if p == Proto2 && resp.StatusCode == http.StatusUnsupportedMediaType {
		se := &StatusError{StatusCode: resp.StatusCode, Samples: samples, Written: 0, NotV2: true,
			Message: "the target does not take Remote-Write 2.0: " + msg + s.not2Hint()}
		return &sinks.Error{Class: sinks.Rejected, Err: se}
	}
	err := classifyStatus(resp.StatusCode, resp.Header, msg, samples, idempotent)
	if p == Proto2 && told && !bad {
		var se *StatusError
		if errors.As(err, &se) {
			se.Written = written
		}
	}
	return err
}

// not2Hint is what a "not 2.0" error says to do: nothing with
// protocol=auto, which falls back to 1.0 itself.
func (s *Sink) not2Hint() string {
	if s.cfg.Protocol == Proto2 {
		return " (protocol=1.0 or auto writes to it)"
	}
	return ""
}

// samplesWritten reads X-Prometheus-Remote-Write-Samples-Written: the
// count (-1 when absent), whether it is there, and whether it is not a
// count.
func samplesWritten(h http.Header) (n int, told, bad bool) {
	v := h.Values(headerSamplesWritten)
	if len(v) == 0 {
		return -1, false, false
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 {
		return -1, true, true
	}
	return n, true, false
}

// notV2 reports whether err says that the target does not take 2.0.
func notV2(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.NotV2
}

// protocol returns the protocol writes use, negotiating it first with
// protocol=auto: an empty 2.0 request that a 2.0 target answers with
// X-Prometheus-Remote-Write-Samples-Written, a 1.0 one without (it reads
// an empty 1.0 request) or with 415 or 400. Until an answer decides, each call
// asks again and returns the probe's error (a target down, 503).
func (s *Sink) protocol(ctx context.Context) (Protocol, error) {
	if p := Protocol(s.proto.Load()); p != ProtoAuto {
		return p, nil
	}
	s.negMu.Lock()
	defer s.negMu.Unlock()
	if p := Protocol(s.proto.Load()); p != ProtoAuto {
		return p, nil
	}
	err := s.emptyRequest(ctx, Proto2)
	switch {
	case err == nil:
		s.proto.Store(uint32(Proto2))
		s.log.Info("remote write: the target takes Remote-Write 2.0; writing 2.0")
		return Proto2, nil
	case notV2(err) || badRequest(err):
		// A receiver that checks the Content-Type without knowing 2.0,
		// or cannot parse the body, may answer 400 rather than 415: the
		// empty probe holds nothing else that could be bad, so it says
		// the same. Any real refusal shows on the 1.0 writes.
		s.fallBack(err)
		return Proto1, nil
	}
	return ProtoAuto, err
}

// badRequest reports whether err is a 400 answer.
func badRequest(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusBadRequest
}

// fallBack makes writes use 1.0 from now on, because of err (a "not 2.0"
// answer), and says so once.
func (s *Sink) fallBack(err error) {
	if s.proto.Swap(uint32(Proto1)) != uint32(Proto1) {
		s.log.Info("remote write: the target does not take Remote-Write 2.0; writing 1.0", zap.String("answer", err.Error()))
	}
}

// Protocol is the protocol writes use now: ProtoAuto until protocol=auto
// has negotiated.
func (s *Sink) Protocol() Protocol { return Protocol(s.proto.Load()) }

// setHeaders sets protocol p's headers, the credentials and the URL's
// extra headers.
func (s *Sink) setHeaders(req *http.Request, p Protocol) {
	h := req.Header
	s.commonHeaders(h)
	h["Content-Encoding"] = contentEncoding
	if p == Proto2 {
		h["Content-Type"] = contentTypeV2
		h["X-Prometheus-Remote-Write-Version"] = rwVersionV2
	} else {
		h["Content-Type"] = contentType
		h["X-Prometheus-Remote-Write-Version"] = rwVersion
	}
}

// commonHeaders sets what every request of the sink carries: the URL's
// extra headers, the User-Agent and the credentials.
func (s *Sink) commonHeaders(h http.Header) {
	for k, v := range s.cfg.Headers {
		h[k] = v
	}
	h["User-Agent"] = userAgentHeader
	if s.auth != "" {
		h.Set("Authorization", s.auth)
	}
}

// postForm POSTs form to where (a query, read-back or delete API) with
// the sink's headers. A request that got no answer is classified.
func (s *Sink) postForm(ctx context.Context, where, form string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, where, strings.NewReader(form))
	if err != nil {
		return nil, sinks.NewError(sinks.Other, false, err)
	}
	s.commonHeaders(req.Header)
	req.Header["Content-Type"] = formContentType
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, sinks.ClassifyHTTPTransport(ctx, err, true)
	}
	return resp, nil
}

// Header values shared by every request (read only).
var (
	contentEncoding = []string{"snappy"}
	contentType     = []string{"application/x-protobuf"}
	rwVersion       = []string{"0.1.0"}
	contentTypeV2   = []string{"application/x-protobuf;proto=io.prometheus.write.v2.Request"}
	formContentType = []string{"application/x-www-form-urlencoded"}
	rwVersionV2     = []string{"2.0.0"}
	userAgentHeader = []string{userAgent}
)

// headerSamplesWritten is the answer's header in which a 2.0 target
// counts the samples it wrote.
const headerSamplesWritten = "X-Prometheus-Remote-Write-Samples-Written"

// emptyBody is an empty 1.0 WriteRequest, snappy-compressed, and
// emptyBodyV2 an empty 2.0 Request (its symbol table holds the empty
// string, which the spec puts first): what Ping and the negotiation send.
// A 1.0 server reads emptyBodyV2 as an empty WriteRequest.
var (
	emptyBody   = Compress(nil, nil)
	emptyBodyV2 = Compress(nil, (&EncoderV2{}).AppendRequest(nil))
)

// Compress compresses a WriteRequest in snappy's block format, at
// snappy's standard speed, into dst if it is long enough (give it
// dst[:cap(dst)] to reuse a buffer). klauspost's snappy.Encode is s2's
// EncodeSnappyBetter, which on devops batches took twice the CPU for
// bodies under 2 % smaller; Prometheus' own remote-write client
// (github.com/golang/snappy) has only the standard speed.
func Compress(dst, src []byte) []byte { return s2.EncodeSnappy(dst, src) }

// Ping sends an empty write request of the protocol in use (with
// protocol=auto, once negotiated): the target is ready when it accepts
// one, which also proves the write path and the credentials (a sink
// opened for a query workload asks a query instead, pingQuery). A target
// that answers 404, 401 or 403 refuses it (a configuration error); one
// that is starting (503) or down is waited for.
func (s *Sink) Ping(ctx context.Context) error {
	if s.q != nil {
		return s.pingQuery(ctx)
	}
	p, err := s.protocol(ctx)
	if err == nil {
		err = s.emptyRequest(ctx, p)
		if p == Proto2 && s.cfg.Protocol == ProtoAuto && notV2(err) {
			s.fallBack(err)
			err = s.emptyRequest(ctx, Proto1)
		}
	}
	if err != nil {
		return fmt.Errorf("cannot write to %s: %w", s.cfg.String(), sinks.OtherProtocol(ctx, err, s.writeURL))
	}
	return nil
}

// emptyRequest posts an empty request of protocol p and classifies the
// answer: nil when the target accepted it (a 2.0 one only with
// X-Prometheus-Remote-Write-Samples-Written).
func (s *Sink) emptyRequest(ctx context.Context, p Protocol) error {
	body := emptyBody
	if p == Proto2 {
		body = emptyBodyV2
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.writeURL, bytes.NewReader(body))
	if err != nil {
		return sinks.NewError(sinks.Other, false, err)
	}
	s.setHeaders(req, p)
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinks.ClassifyHTTPTransport(ctx, err, true)
	}
	defer resp.Body.Close()
	if v := resp.Header.Get("X-Influxdb-Version"); v != "" {
		// An endpoint of InfluxDB's line protocol (VictoriaMetrics'
		// /write, /api/v2/write, /influx/...) takes the empty 1.0
		// request as no lines at all, so without this the run would
		// start and every write be refused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("the path %s answers as an InfluxDB endpoint (X-Influxdb-Version: %s), not a remote-write one: fix the target URL's path (/api/v1/write on Prometheus and VictoriaMetrics, /api/v1/push on Mimir and Cortex)",
			s.cfg.Path, v))
	}
	return s.answer(resp, p, 0, true)
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
