package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/live"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/readmodel"
	"github.com/soakd/soakd/report"
)

// httpAPI serves the daemon's endpoints.
type httpAPI struct {
	cfg     *config.Config
	metrics *Metrics
	started time.Time
	version string
	token   [sha256.Size]byte // of the control token; /control is off when hasTok is false
	hasTok  bool
	log     *zap.Logger
	live    *live.Sampler // /status's achieved rate and latency

	mu  sync.Mutex
	wls []*daemon.Handle
}

// add serves w from now on.
func (a *httpAPI) add(w *daemon.Handle) {
	a.mu.Lock()
	a.wls = append(a.wls, w)
	a.mu.Unlock()
}

// workloads are the workloads served so far.
func (a *httpAPI) workloads() []*daemon.Handle {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.wls)
}

// handler returns soakd's HTTP endpoints.
func (a *httpAPI) handler(reg *prometheus.Registry, ui http.Handler) http.Handler {
	if tok := a.cfg.EffectiveControlToken(); tok != "" {
		a.token, a.hasTok = sha256.Sum256([]byte(tok)), true
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true, ErrorLog: zap.NewStdLog(a.log), Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /status", a.status)
	mux.HandleFunc("POST /control", a.control)
	// The read endpoints answer another method 405 naming GET, rather
	// than the console's 404 (POST /status was "404 page not found").
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/status"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.URL.Path+" takes GET", http.StatusMethodNotAllowed)
		})
	}
	// Any other method: 405 naming POST, rather than the console's page
	// (a curl without -X POST must learn why nothing changed).
	mux.HandleFunc("/control", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "/control takes POST (e.g. curl -X POST -H 'Authorization: Bearer TOKEN' '.../control?workload=W&rate=5000')", http.StatusMethodNotAllowed)
	})
	if ui != nil {
		mux.Handle("/", ui)
	}
	if a.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		// Not pprof.Cmdline: soakd's flags hold secrets (--control-token,
		// a target URL's password) and pprof takes no token.
		mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "soakd's command line may hold secrets and is not served; soakd config lists the settings with secrets hidden", http.StatusForbidden)
		})
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// bind binds the server's address: o.Listener, or Config.Listen unless
// that is off (then it returns a nil server). The server serves once
// start is called.
func bind(cfg *config.Config, o *Options, h http.Handler) (*server, error) {
	l := o.Listener
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
			if o.Listener == nil {
				l.Close()
			}
			return nil, fmt.Errorf("%sTLS_CERT_FILE: cannot load %s with its key: %w", config.EnvPrefix, cfg.TLSCertFile, err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		scheme = "https"
	}
	useTLS := srv.TLSConfig != nil
	o.Logger.Info("serving /metrics /healthz /readyz /status", zap.String("addr", l.Addr().String()),
		zap.Bool("tls", useTLS), zap.Bool("control", cfg.EffectiveControlToken() != ""))
	if o.UI != nil {
		u := consoleURL(scheme, l.Addr())
		o.Logger.Info("web console: open "+u, zap.String("url", u))
	}
	return &server{srv: srv, l: l, tls: useTLS, log: o.Logger}, nil
}

// server is the HTTP server, its address bound.
type server struct {
	srv  *http.Server
	l    net.Listener
	tls  bool
	log  *zap.Logger
	once sync.Once
}

// start serves in a goroutine of its own until shutdown.
func (s *server) start() {
	s.once.Do(func() {
		go func() {
			var err error
			if s.tls {
				err = s.srv.ServeTLS(s.l, "", "")
			} else {
				err = s.srv.Serve(s.l)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("HTTP server stopped", zap.Error(err))
			}
		}()
	})
}

// shutdown stops serving, giving requests in flight 2 s; the listener is
// closed even when the server never served.
func (s *server) shutdown() {
	s.once.Do(func() {}) // never serve after this
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = s.srv.Shutdown(ctx)
	cancel()
	s.l.Close()
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

// stopping says whether soakd is stopping: a workload still running
// says so (one that ended before the stop stays done).
func (a *httpAPI) stopping() bool {
	for _, wl := range a.workloads() {
		if wl.State() == "stopping" {
			return true
		}
	}
	return false
}

// readyz is 200 when every workload's target is prepared and answers;
// 503 once soakd is stopping; otherwise 503 with, per workload not ready, why: the target (secrets
// redacted), the setup step waited for, the last error and the next retry.
func (a *httpAPI) readyz(w http.ResponseWriter, _ *http.Request) {
	if a.stopping() {
		// A terminating pod takes no more traffic: its target's
		// readiness is no longer checked (pingLoop has ended).
		http.Error(w, "not ready: soakd is stopping", http.StatusServiceUnavailable)
		return
	}
	var notReady []string
	for _, wl := range a.workloads() {
		if msg := wl.NotReady(); msg != "" {
			notReady = append(notReady, msg)
		}
	}
	if len(notReady) > 0 {
		http.Error(w, "not ready: "+strings.Join(notReady, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *httpAPI) status(w http.ResponseWriter, _ *http.Request) {
	st := report.Status{Version: a.version, Uptime: time.Since(a.started).Seconds()}
	for _, wl := range a.workloads() {
		cfg := wl.Config()
		achieved, window := a.live.Recent(wl)
		s := report.StatusWorkload{
			Name: wl.Name(), Source: cfg.Source, Target: cfg.Sink.Redacted, Rate: cfg.Rate.String(),
			Achieved: achieved, Unit: report.UnitName(wl.Kind()), Workers: cfg.Workers,
			StatusCounts: report.IdleCounts(), Latency: map[string]report.OpLatency{}, Phases: []report.StatusPhase{},
		}
		s.Ready = wl.Ready()
		cur := wl.Phase()
		for _, ps := range wl.Phases() {
			p := report.StatusPhase{Name: ps.Name(), Rate: ps.Rate(), Seconds: ps.Elapsed().Seconds(),
				StoppedBy: ps.StoppedBy(), StatusCounts: readmodel.Status(ps)}
			s.Phases = append(s.Phases, p)
			if ps.Same(cur) {
				s.Phase, s.Rate, s.StatusCounts = ps.Name(), ps.Rate(), p.StatusCounts
			}
		}
		if cur != nil && s.Dropped > 0 {
			s.DropCause = wl.DropCause()
		}
		if cur != nil {
			d := window.Dispatch
			s.Dispatch = report.OpLatency{Count: d.Count, P50: d.P50, P99: d.P99}
			for _, q := range window.Ops {
				s.Latency[q.Op] = report.OpLatency{Count: q.Response.Count, P50: q.Response.P50, P99: q.Response.P99,
					ServiceP50: q.Service.P50, ServiceP99: q.Service.P99}
			}
		}
		s.Extra = wl.StatusFields()
		s.LastError = wl.LastError()
		s.Thresholds = wl.Verdicts()
		s.State = wl.State()
		if s.State == "starting" {
			s.Waiting = wl.Waiting()
		}
		if s.State == "running" || s.State == "paused" {
			s.TargetRate, _ = wl.TargetRate()
			s.LagSeconds = wl.Lag().Seconds()
		}
		st.Workloads = append(st.Workloads, s)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}

// ControlLogMessage is the message of the log line each /control change
// writes, with its caller: the audit trail, which the log never samples.
const ControlLogMessage = "control"

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
	// The scheme is case-insensitive (RFC 9110 §11.1): bearer works too.
	tok, ok := "", len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ")
	if ok {
		// The scheme may be followed by more than one space (RFC 9110
		// §11.4: 1*SP): "Bearer  TOKEN" was refused as a wrong token.
		tok = strings.TrimLeft(auth[len("Bearer "):], " \t")
	}
	want := a.token
	if path := a.cfg.ControlTokenPath; path != "" {
		// Read again at every request: a token rotated in its file (a
		// Kubernetes secret updated) was refused, and the old one, meant
		// to be revoked, kept working until soakd restarted.
		b, err := os.ReadFile(path)
		cur := strings.TrimSpace(string(b))
		if err != nil || cur == "" {
			why := "it holds no token"
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				why = pe.Err.Error()
			} else if err != nil {
				why = err.Error()
			}
			http.Error(w, fmt.Sprintf("%sCONTROL_TOKEN_FILE %s cannot be read (%s): nothing was changed", config.EnvPrefix, path, why),
				http.StatusServiceUnavailable)
			a.log.Warn("control refused: the token file cannot be read", zap.String("file", path), zap.String("why", why),
				zap.String("from", r.RemoteAddr))
			return
		}
		want = sha256.Sum256([]byte(cur))
	}
	sum := sha256.Sum256([]byte(tok))
	// Comparing fixed-size digests in constant time leaks neither the
	// token nor its length.
	if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 || !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="soakd"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	// What /control does not read is refused rather than ignored: a
	// JSON or multipart body, or an unknown parameter, was answered
	// "want rate=RATE or action=pause|resume" when the rate was in it,
	// and a misspelt extra parameter was dropped without a word.
	if ct := r.Header.Get("Content-Type"); ct != "" && r.ContentLength != 0 {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/x-www-form-urlencoded" {
			http.Error(w, fmt.Sprintf("a body of type %s is not read: give workload, rate or action in the query string "+
				"(.../control?workload=W&rate=5000) or as a form (curl -d 'workload=W&rate=5000'); nothing was changed", mt), http.StatusUnsupportedMediaType)
			return
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Form)) {
		if k != "workload" && k != "rate" && k != "action" {
			http.Error(w, fmt.Sprintf("unknown parameter %q: /control takes workload, rate and action; nothing was changed", k),
				http.StatusBadRequest)
			return
		}
	}
	// A parameter given twice is refused rather than read as its first:
	// workload=a&workload=b paused a alone and answered ok.
	for _, k := range []string{"workload", "rate", "action"} {
		if len(r.Form[k]) > 1 {
			http.Error(w, fmt.Sprintf("%s given %d times (%s): give it once (workload=all changes every workload)",
				k, len(r.Form[k]), strings.Join(r.Form[k], ", ")), http.StatusBadRequest)
			return
		}
	}
	var p pace.Rate
	act := -1 // in controlActions
	rate, action := r.Form.Get("rate"), r.Form.Get("action")
	// Any case, as a rate takes it (STEP:, MAX): action=PAUSE was
	// refused while rate=MAX was taken.
	action = strings.ToLower(strings.TrimSpace(action))
	switch {
	case rate != "" && action != "":
		http.Error(w, "give either rate or action, not both", http.StatusBadRequest)
		return
	case rate != "":
		// In a query string + is a space: step:1000+500/30s sent
		// unencoded arrives as "step:1000 500/30s".
		if strings.HasPrefix(strings.ToLower(rate), "step:") { // pace.Parse takes any case
			rate = strings.ReplaceAll(rate, " ", "+")
		}
		var err error
		p, err = pace.Parse(rate)
		if err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := a.cfg.CheckRate(p); err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusForbidden)
			return
		}
		act = 0
	case action == "pause":
		act = 1
	case action == "resume":
		act = 2
	case action != "":
		http.Error(w, fmt.Sprintf("action %q: want action=pause or action=resume (or rate=RATE)", r.Form.Get("action")), http.StatusBadRequest)
		return
	default:
		http.Error(w, "want rate=RATE or action=pause|resume", http.StatusBadRequest)
		return
	}
	targets, err := a.pick(r.Form.Get("workload"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Stopping is soakd's, not one workload's: a workload that ended
	// before the stop stays done, and naming it answered "not running".
	if a.stopping() {
		http.Error(w, "soakd is stopping: no new work is scheduled; nothing was changed", http.StatusConflict)
		return
	}
	// Every workload named must be able to take the change before any
	// does: workload=all answered 409 after changing the first ones.
	for _, wl := range targets {
		switch wl.State() {
		case "starting":
			// It waits for its target: "not running" sent the user to
			// look for a workload that had ended.
			http.Error(w, wl.Name()+": workload is waiting for its target (see /status or /readyz); it can be changed once its first phase begins; nothing was changed",
				http.StatusConflict)
			return
		case "done":
			http.Error(w, wl.Name()+": workload is not running; nothing was changed", http.StatusConflict)
			return
		}
		if by := wl.SteeredBy(); by != "" {
			// A capacity search judges each step at the rate it set: a
			// change from here made its steps fail and blamed the target.
			http.Error(w, wl.Name()+": its rate is steered by "+by+"; nothing was changed", http.StatusConflict)
			return
		}
		if _, paced := wl.TargetRate(); !paced {
			http.Error(w, wl.Name()+": workload runs closed loop (RATE=max); restart it with a numeric rate to control it; nothing was changed",
				http.StatusConflict)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	var done []string
	for _, wl := range targets {
		var err error
		switch act {
		case 0:
			err = wl.SetRate(ctx, p)
		case 1:
			err = wl.Pause(ctx)
		case 2:
			err = wl.Resume(ctx)
		}
		if err != nil {
			// It ended or timed out since the check above.
			msg := wl.Name() + ": " + err.Error()
			if len(done) > 0 {
				msg += "; changed before it: " + strings.Join(done, ", ")
			}
			http.Error(w, msg, http.StatusConflict)
			return
		}
		done = append(done, wl.Name())
		a.metrics.controlled(wl, act)
		a.log.Info(ControlLogMessage, zap.String("workload", wl.Name()), zap.String("rate", rate), zap.String("action", action),
			zap.String("from", r.RemoteAddr))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{"ok":true}`)
}

// controlActions name the changes /control makes, as soakd_control_total's
// action label: a new rate, pause, resume.
var controlActions = [...]string{"rate", "pause", "resume"}

func (a *httpAPI) pick(name string) ([]*daemon.Handle, error) {
	wls := a.workloads()
	if name == "all" || (name == "" && len(wls) == 1) {
		return wls, nil
	}
	var names []string
	for _, wl := range wls {
		if wl.Name() == name {
			return []*daemon.Handle{wl}, nil
		}
		names = append(names, wl.Name())
	}
	if name == "" {
		return nil, fmt.Errorf("workload: say which (%s, or all)", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("workload %q: unknown (%s, or all)", name, strings.Join(names, ", "))
}
