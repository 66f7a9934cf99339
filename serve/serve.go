// Package serve is soakd's HTTP API as a feature on the engine: /metrics
// (the soakd_* collector over each workload's totals), /healthz,
// /readyz, /status, /control, the web console's page and pprof, over
// TLS when SOAKD_TLS_CERT_FILE is set. It reads the engine only through
// daemon.Handle and daemon.Phase, each workload's totals through package
// readmodel and its recent rate and latency through a live.Sampler, and
// steers it through the Handle, as /control asks.
//
//	s := serve.New(serve.Options{Config: cfg, Logger: log, Version: v, Registry: prometheus.NewRegistry(), UI: ui})
//	sum, err := daemon.Run(ctx, cfg, daemon.Deps{..., Observers: []daemon.Observer{..., s}})
package serve

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/live"
)

// Options configure the HTTP API.
type Options struct {
	// Config is the run's configuration: LISTEN, TLS_CERT_FILE and
	// TLS_KEY_FILE, CONTROL_TOKEN, PPROF and the bounds /control's rates
	// are held to.
	Config  *config.Config
	Logger  *zap.Logger
	Version string
	// Registry gets soakd's metrics, registered by New, and is what
	// /metrics serves; other features (soakd capacity) add theirs to it.
	Registry *prometheus.Registry
	// Listener, when set, serves the endpoints instead of listening on
	// Config.Listen (tests pass a 127.0.0.1:0 listener).
	Listener net.Listener
	// UI, when set, is served at / and every path no other endpoint
	// takes: the web console (package web).
	UI http.Handler
	// Live, when set, is the run's sampler (among the run's observers,
	// before the server) that /status reads the achieved rate and
	// latency from; when nil the server keeps one of its own.
	Live *live.Sampler
}

// Server is the HTTP API, an observer of the run (daemon.Observer,
// daemon.Finisher): its address is bound when the first workload opens,
// so a port in use fails the run before anything is sent; it serves once
// every workload is open, through the wait for the targets and the run,
// and shuts down when the run is over.
type Server struct {
	o       Options
	api     *httpAPI
	h       http.Handler
	metrics *Metrics
	own     *live.Sampler // the sampler the server drives itself, nil when Options.Live is set

	mu     sync.Mutex
	bound  bool
	srv    *server // nil when LISTEN is off
	closed bool
}

// New registers soakd's metrics on o.Registry (they are there before the
// first scrape) and returns the HTTP API. It serves nothing until the run
// opens its workloads.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	var own *live.Sampler
	if o.Live == nil {
		own = live.New()
		o.Live = own
	}
	m := NewMetrics(o.Registry, o.Version)
	a := &httpAPI{cfg: o.Config, metrics: m, started: time.Now(), version: o.Version, log: o.Logger, live: o.Live}
	return &Server{o: o, api: a, h: a.handler(o.Registry, o.UI), metrics: m, own: own}
}

// Handler is the endpoints, for tests that call them without a network.
func (s *Server) Handler() http.Handler { return s.h }

// Opened binds the address on the first workload (an address in use, or
// a certificate that does not load, fails the run before anything is
// sent; as a failed run, exit 1, not as a setting the configuration got
// wrong) and serves w's metrics and status from now on.
func (s *Server) Opened(w *daemon.Handle) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.bound {
		srv, err := bind(s.o.Config, &s.o, s.h)
		if err != nil {
			return err
		}
		s.srv, s.bound = srv, true
	}
	s.metrics.Add(w)
	s.api.add(w)
	if s.own != nil {
		return s.own.Opened(w)
	}
	return nil
}

// Started serves the endpoints: every workload is open.
func (s *Server) Started(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	if s.own != nil {
		s.own.Started(ctx, ws, stop)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil && !s.closed {
		s.srv.start()
	}
}

// PhaseBegun tells the server's own sampler, when it keeps one; /status
// reads the phases as it is asked.
func (s *Server) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	if s.own != nil {
		s.own.PhaseBegun(w, p)
	}
}

// Tick drives the server's own sampler, when it keeps one.
func (s *Server) Tick(at time.Time, intervalEnded bool) {
	if s.own != nil {
		s.own.Tick(at, intervalEnded)
	}
}

// PhaseEnded does nothing.
func (s *Server) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Finished shuts the server down: the run is over.
func (s *Server) Finished(bool) { s.Close() }

// Close shuts the server down and releases its address, when the run
// could not start (Run returns before Finished); the metrics stay
// registered. Close is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.srv != nil {
		s.srv.shutdown()
	}
}
