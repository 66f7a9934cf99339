package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/soakd/soakd/config"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/pace"
)

// httpAPI serves the daemon's endpoints.
type httpAPI struct {
	cfg       *config.Config
	wls       []*workload
	started   time.Time
	observers []Observer
	version   string
	token     [sha256.Size]byte // of the control token; /control is off when hasTok is false
	hasTok    bool
	log       *zap.Logger
}

// handler returns soakd's HTTP endpoints.
func handler(cfg *config.Config, d Deps, wls []*workload, started time.Time) http.Handler {
	a := &httpAPI{cfg: cfg, wls: wls, started: started, version: d.Version, log: d.Logger, observers: d.Observers}
	if tok := cfg.EffectiveControlToken(); tok != "" {
		a.token, a.hasTok = sha256.Sum256([]byte(tok)), true
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{
		EnableOpenMetrics: true, ErrorLog: zap.NewStdLog(d.Logger), Registry: d.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /status", a.status)
	mux.HandleFunc("POST /control", a.control)
	// Any other method: 405 naming POST, rather than the console's page
	// (a curl without -X POST must learn why nothing changed).
	mux.HandleFunc("/control", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "/control takes POST (e.g. curl -X POST -H 'Authorization: Bearer TOKEN' '.../control?workload=W&rate=5000')", http.StatusMethodNotAllowed)
	})
	if d.UI != nil {
		mux.Handle("/", d.UI)
	}
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveHTTP serves h on d.Listener, or on Config.Listen unless that is
// off (then it returns a nil server).
func serveHTTP(cfg *config.Config, d Deps, h http.Handler) (*http.Server, error) {
	l := d.Listener
	if l == nil {
		if cfg.Listen == config.ListenOff {
			return nil, nil
		}
		var err error
		l, err = net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%sLISTEN: cannot listen on %s: %w", config.EnvPrefix, cfg.Listen, err)
		}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			if d.Listener == nil {
				l.Close()
			}
			return nil, fmt.Errorf("%sTLS_CERT_FILE: cannot load %s with its key: %w", config.EnvPrefix, cfg.TLSCertFile, err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		scheme = "https"
	}
	useTLS := srv.TLSConfig != nil // Serve changes srv.TLSConfig: read it before
	go func() {
		var err error
		if useTLS {
			err = srv.ServeTLS(l, "", "")
		} else {
			err = srv.Serve(l)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.Logger.Error("HTTP server stopped", zap.Error(err))
		}
	}()
	d.Logger.Info("serving /metrics /healthz /readyz /status", zap.String("addr", l.Addr().String()),
		zap.Bool("tls", useTLS), zap.Bool("control", cfg.EffectiveControlToken() != ""))
	if d.UI != nil {
		u := consoleURL(scheme, l.Addr())
		d.Logger.Info("web console: open "+u, zap.String("url", u))
	}
	return srv, nil
}

// ConsoleURL is the web console's URL for a listener's address: on a
// wildcard address (":9480"), http://localhost:PORT/.
func ConsoleURL(addr net.Addr) string { return consoleURL("http", addr) }

func consoleURL(scheme string, addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// readyz is 200 when every workload's target is prepared and answers;
// otherwise 503 with, per workload not ready, why: the target (secrets
// redacted), the setup step waited for, the last error and the next retry.
func (a *httpAPI) readyz(w http.ResponseWriter, _ *http.Request) {
	var notReady []string
	for _, wl := range a.wls {
		if msg := wl.notReady(); msg != "" {
			notReady = append(notReady, msg)
		}
	}
	if len(notReady) > 0 {
		http.Error(w, "not ready: "+strings.Join(notReady, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// StatusWorkload is one workload in /status. Its counts are the current
// phase's, read in one snapshot: scheduled = acked + failed + dropped +
// in_flight. Phases lists every phase started so far.
type StatusWorkload struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"`
	Target     string  `json:"target"`
	Phase      string  `json:"phase"`
	State      string  `json:"state"` // starting, running, paused, done
	Rate       string  `json:"rate"`
	TargetRate float64 `json:"target_rate"`
	Achieved   float64 `json:"achieved_rate"` // over the last 10 s
	Unit       string  `json:"unit"`
	StatusCounts
	// Latency is the current phase's response and service latency per op
	// over the last window (PROGRESS_INTERVAL, or 10 s; the window so far
	// in a phase younger than that): op is write for series, read,
	// update, insert, scan, rmw for KV.
	Latency map[string]OpLatency `json:"latency"`
	// Dispatch is the delay from each batch's intended start to its first
	// send over the same window: waiting for a free worker plus soakd's
	// own lateness (service fields unused).
	Dispatch   OpLatency `json:"dispatch"`
	LagSeconds float64   `json:"lag_seconds"`
	Workers    int       `json:"workers"`
	Ready      bool      `json:"ready"`
	// Waiting is what the workload waits for while its target is not up
	// (state starting): absent once it is, as /readyz says.
	Waiting   *StatusWaiting `json:"waiting,omitempty"`
	LastError *ErrorSummary  `json:"last_error,omitempty"`
	// DropCause is the current phase's, when it has dropped work.
	DropCause *DropCause    `json:"drop_cause,omitempty"`
	Phases    []StatusPhase `json:"phases"`
	// Thresholds are the workload's THRESHOLDS judged on its run phase so
	// far, as soakd_threshold_ok and soakd_threshold_value show them.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Extra holds the fields observers add (StatusAdder), by name:
	// soakd capacity's "capacity". They follow the fields above.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the workload's fields, then Extra's.
func (s StatusWorkload) MarshalJSON() ([]byte, error) {
	type plain StatusWorkload
	b, err := json.Marshal(plain(s))
	if err != nil || len(s.Extra) == 0 {
		return b, err
	}
	keys := slices.Sorted(maps.Keys(s.Extra))
	b = b[:len(b)-1] // the closing brace
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(s.Extra[k])
		if err != nil {
			return nil, fmt.Errorf("status field %s: %w", k, err)
		}
		b = append(append(append(append(b, ','), kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}

// StatusCounts are a phase's unit counts and failed attempts by class.
type StatusCounts struct {
	Scheduled int64            `json:"scheduled"`
	Acked     int64            `json:"acked"`
	Failed    int64            `json:"failed"`
	Dropped   int64            `json:"dropped"`
	InFlight  int64            `json:"in_flight"`
	Errors    map[string]int64 `json:"errors"`
	// Verify is the phase's read-back checks, when VERIFY is on.
	Verify *VerifyCounts `json:"verify,omitempty"`
}

// VerifyCounts are a phase's read-back checks (VERIFY) of acknowledged
// units: as soakd_verify_checked_total, soakd_verify_failures_total by
// kind and soakd_verify_skipped_total count them.
type VerifyCounts struct {
	Checked   int64 `json:"checked"`
	Missing   int64 `json:"missing"`
	Mismatch  int64 `json:"mismatch"`
	Duplicate int64 `json:"duplicate"`
	Skipped   int64 `json:"skipped"`
}

// Failures is how many checks failed, of every kind.
func (v *VerifyCounts) Failures() int64 { return v.Missing + v.Mismatch + v.Duplicate }

// StatusPhase is one phase of a workload in /status.
type StatusPhase struct {
	Name      string  `json:"name"`
	Rate      string  `json:"rate"`
	Seconds   float64 `json:"seconds"`
	StoppedBy string  `json:"stopped_by,omitempty"` // empty while it runs
	StatusCounts
}

// OpLatency is an op's latency quantiles in /status.
type OpLatency struct {
	Count      int64   `json:"count"`
	P50        float64 `json:"p50_seconds"`
	P99        float64 `json:"p99_seconds"`
	ServiceP50 float64 `json:"service_p50_seconds"`
	ServiceP99 float64 `json:"service_p99_seconds"`
}

// Status is the /status document.
type Status struct {
	Version   string           `json:"version"`
	Uptime    float64          `json:"uptime_seconds"`
	Workloads []StatusWorkload `json:"workloads"`
}

func statusCounts(c *counts) StatusCounts {
	return StatusCounts{Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped,
		InFlight: c.inflight(), Errors: errorsByClass(c)}
}

// phaseCounts are statusCounts of ps's snapshot c, with its read-back
// checks when the phase has them.
func phaseCounts(ps *phaseStats, c *counts) StatusCounts {
	sc := statusCounts(c)
	if ps.verify != nil {
		v := &c.verify
		sc.Verify = &VerifyCounts{Checked: v.checked, Missing: v.failures[0], Mismatch: v.failures[1],
			Duplicate: v.failures[2], Skipped: v.skipped}
	}
	return sc
}

func (a *httpAPI) status(w http.ResponseWriter, _ *http.Request) {
	st := Status{Version: a.version, Uptime: time.Since(a.started).Seconds()}
	for _, wl := range a.wls {
		achieved, window := wl.statusLive()
		s := StatusWorkload{
			Name: wl.name, Source: wl.cfg.Source, Target: wl.cfg.Sink.Redacted, Rate: wl.cfg.Rate.String(),
			Achieved: achieved, Unit: unitName(wl.kind), Workers: wl.cfg.Workers,
			StatusCounts: statusCounts(&counts{}), Latency: map[string]OpLatency{}, Phases: []StatusPhase{},
		}
		s.Ready, _ = wl.ready.get()
		cur := wl.cur.Load()
		for _, ps := range wl.allPhases() {
			c := ps.snapshot()
			p := StatusPhase{Name: ps.name, Rate: ps.rateText(), Seconds: ps.elapsed().Seconds(),
				StoppedBy: ps.stopReason(), StatusCounts: phaseCounts(ps, &c)}
			s.Phases = append(s.Phases, p)
			if ps == cur {
				s.Phase, s.Rate, s.StatusCounts = ps.name, ps.rateText(), p.StatusCounts
			}
		}
		if cur != nil && s.Dropped > 0 {
			ws := wl.phaseSummary(cur)
			s.DropCause = ws.DropCause
		}
		if cur != nil {
			s.Dispatch = OpLatency{Count: window.dispatch.Count, P50: window.dispatch.P50, P99: window.dispatch.P99}
			for op := range window.ops {
				if q := window.ops[op]; q.response.Count > 0 {
					s.Latency[opName(op)] = OpLatency{Count: q.response.Count, P50: q.response.P50, P99: q.response.P99,
						ServiceP50: q.service.P50, ServiceP99: q.service.P99}
				}
			}
		}
		for _, o := range a.observers {
			if sa, ok := o.(StatusAdder); ok {
				if k, v, ok := sa.AddStatus(wl.name); ok {
					if s.Extra == nil {
						s.Extra = map[string]any{}
					}
					s.Extra[k] = v
				}
			}
		}
		if e := wl.lastError(); e.Text != "" {
			s.LastError = errorSummary(e)
		}
		s.Thresholds = verdictsOf(a.observers, wl.name, false)
		sch := wl.sched.Load()
		switch {
		case wl.finished.Load():
			s.State = "done"
		case !wl.started():
			s.State = "starting"
			s.Waiting = wl.waiting()
		case sch.paused:
			s.State = "paused"
		default:
			s.State = "running"
		}
		if wl.started() && !wl.finished.Load() {
			s.TargetRate = sch.rateAt(wl.since())
			s.LagSeconds = wl.lagNow().Seconds()
		}
		st.Workloads = append(st.Workloads, s)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}

// control changes a workload at run time:
//
//	POST /control?workload=iot&rate=5000        new rate profile, from now
//	POST /control?workload=iot&action=pause     stop scheduling (resume continues the profile)
//	POST /control?workload=iot&action=resume
//
// workload may be omitted when there is one, or "all". Authorization:
// Bearer SOAKD_CONTROL_TOKEN.
func (a *httpAPI) control(w http.ResponseWriter, r *http.Request) {
	if !a.hasTok {
		http.Error(w, "control is disabled: set SOAKD_CONTROL_TOKEN to enable it", http.StatusNotFound)
		return
	}
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	sum := sha256.Sum256([]byte(tok))
	// Comparing fixed-size digests in constant time leaks neither the
	// token nor its length.
	if subtle.ConstantTimeCompare(sum[:], a.token[:]) != 1 || !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="soakd"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req controlReq
	rate, action := r.Form.Get("rate"), r.Form.Get("action")
	switch {
	case rate != "" && action != "":
		http.Error(w, "give either rate or action, not both", http.StatusBadRequest)
		return
	case rate != "":
		p, err := pace.Parse(rate)
		if err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := a.cfg.CheckRate(p); err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusForbidden)
			return
		}
		req.rate = &p
	case action == "pause":
		req.pause = true
	case action == "resume":
		req.resume = true
	default:
		http.Error(w, "want rate=RATE or action=pause|resume", http.StatusBadRequest)
		return
	}
	targets, err := a.pick(r.Form.Get("workload"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	for _, wl := range targets {
		if wl.finished.Load() || !wl.started() {
			http.Error(w, wl.name+": workload is not running", http.StatusConflict)
			return
		}
		if err := wl.control(ctx, req); err != nil {
			http.Error(w, wl.name+": "+err.Error(), http.StatusConflict)
			return
		}
		wl.controls[req.action()].Add(1)
		a.log.Info("control", zap.String("workload", wl.name), zap.String("rate", rate), zap.String("action", action),
			zap.String("from", r.RemoteAddr))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{"ok":true}`)
}

// controlActions name the changes /control makes, as soakd_control_total's
// action label: a new rate, pause, resume.
var controlActions = [...]string{"rate", "pause", "resume"}

// action is the index of the change req makes in controlActions.
func (c controlReq) action() int {
	switch {
	case c.pause:
		return 1
	case c.resume:
		return 2
	}
	return 0
}

func (a *httpAPI) pick(name string) ([]*workload, error) {
	if name == "all" || (name == "" && len(a.wls) == 1) {
		return a.wls, nil
	}
	var names []string
	for _, wl := range a.wls {
		if wl.name == name {
			return []*workload{wl}, nil
		}
		names = append(names, wl.name)
	}
	if name == "" {
		return nil, fmt.Errorf("workload: say which (%s, or all)", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("workload %q: unknown (%s, or all)", name, strings.Join(names, ", "))
}
