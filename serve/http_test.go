package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/web"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, u, token string) (int, string) {
	t.Helper()
	if token == "" {
		return postAuth(t, u, "")
	}
	return postAuth(t, u, "Bearer "+token)
}

// postAuth posts to u with the Authorization header auth.
func postAuth(t *testing.T, u, auth string) (int, string) {
	t.Helper()
	return postBody(t, u, auth, "", "")
}

// postBody posts body of type ctype ("" for none) to u with the
// Authorization header auth.
func postBody(t *testing.T, u, auth, ctype, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func status(t *testing.T, base string) report.StatusWorkload {
	t.Helper()
	code, body := get(t, base+"/status")
	if code != 200 {
		t.Fatalf("/status: %d %s", code, body)
	}
	var st report.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	return st.Workloads[0]
}

// eventually polls cond every 50 ms for up to 30 s: what it waits for
// takes milliseconds, but a loaded machine must not fail a clean run, and
// the wait only lengthens a failing one.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestHTTPEndpointsAndControl(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "200", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_CONTROL_TOKEN", "s3cret-token",
		"SOAKD_MAX_RATE", "2000", "SOAKD_SEQ_LOAD_RATE", "2000"), p)
	startRun(t, cfg, p, l)

	eventually(t, "healthz", func() bool { c, _ := get(t, base+"/healthz"); return c == 200 })
	eventually(t, "readyz", func() bool { c, _ := get(t, base+"/readyz"); return c == 200 })
	eventually(t, "running at 200/s", func() bool { s := status(t, base); return s.State == "running" && s.TargetRate == 200 })

	// /metrics serves text by default and the native histograms in protobuf.
	// The gauges are refreshed every second.
	eventually(t, "soakd_target_rate in /metrics", func() bool {
		code, body := get(t, base+"/metrics")
		return code == 200 && strings.Contains(body, `soakd_target_rate{workload="seq"} 200`)
	})

	// /control: token required, compared exactly.
	if c, _ := post(t, base+"/control?rate=1000", ""); c != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", c)
	}
	if c, _ := post(t, base+"/control?rate=1000", "s3cret-tokeN"); c != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", c)
	}
	if c, b := post(t, base+"/control?rate=fast", "s3cret-token"); c != http.StatusBadRequest || !strings.Contains(b, "not a rate") {
		t.Errorf("bad rate: %d %s", c, b)
	}
	if c, b := post(t, base+"/control?workload=nope&action=pause", "s3cret-token"); c != http.StatusBadRequest || !strings.Contains(b, "unknown") {
		t.Errorf("unknown workload: %d %s", c, b)
	}
	if c, b := post(t, base+"/control?rate=3000", "s3cret-token"); c != http.StatusForbidden || !strings.Contains(b, "above SOAKD_MAX_RATE=2000") {
		t.Errorf("rate above SOAKD_MAX_RATE: %d %s", c, b)
	}
	// The scheme is case-insensitive.
	if c, b := postAuth(t, base+"/control?rate=200", "bearer s3cret-token"); c != 200 {
		t.Errorf("lower-case scheme: %d %s", c, b)
	}
	if c, _ := postAuth(t, base+"/control?rate=200", "Basic s3cret-token"); c != http.StatusUnauthorized {
		t.Errorf("another scheme: %d, want 401", c)
	}
	// A step rate's + sent unencoded is read as a space.
	if c, b := post(t, base+"/control?rate=step:100+100/1s..1000", "s3cret-token"); c != 200 {
		t.Fatalf("set a step rate with an unencoded +: %d %s", c, b)
	}
	// In any case, as the rate grammar takes it (STEP: was a 400).
	if c, b := post(t, base+"/control?rate=STEP:100+100/1s..1000", "s3cret-token"); c != 200 {
		t.Fatalf("set a STEP: rate with an unencoded +: %d %s", c, b)
	}
	if c, b := post(t, base+"/control?rate=1000", "s3cret-token"); c != 200 {
		t.Fatalf("set rate: %d %s", c, b)
	}
	eventually(t, "target rate 1000", func() bool { return status(t, base).TargetRate == 1000 })
	eventually(t, "achieved rate near 1000", func() bool { a := status(t, base).Achieved; return a > 700 && a < 1300 })

	if c, b := post(t, base+"/control?action=pause", "s3cret-token"); c != 200 {
		t.Fatalf("pause: %d %s", c, b)
	}
	s := status(t, base)
	if s.State != "paused" || s.TargetRate != 0 {
		t.Fatalf("after pause: state %s target %v", s.State, s.TargetRate)
	}
	// Paused, nothing more is scheduled: what was in flight (the queue
	// and the writes under way, however far a busy machine let them fall
	// behind) may still be acknowledged, and nothing else.
	acked, inFlight := s.Acked, s.InFlight
	time.Sleep(300 * time.Millisecond)
	if a := status(t, base); a.Acked > acked+inFlight || a.Scheduled != s.Scheduled {
		t.Errorf("paused workload kept writing: acknowledged %d -> %d (%d were in flight), scheduled %d -> %d",
			acked, a.Acked, inFlight, s.Scheduled, a.Scheduled)
	}
	if c, b := post(t, base+"/control?action=resume", "s3cret-token"); c != 200 {
		t.Fatalf("resume: %d %s", c, b)
	}
	eventually(t, "writing again", func() bool { return status(t, base).Acked > acked+100 })
}

func TestControlDisabledWithoutToken(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "1s"), p)
	done := make(chan runResult, 1)
	go func() { done <- runTest(context.Background(), cfg, p, l) }()
	eventually(t, "healthz", func() bool { c, _ := get(t, base+"/healthz"); return c == 200 })
	if c, _ := post(t, base+"/control?rate=5", "anything"); c != http.StatusNotFound {
		t.Errorf("/control without SOAKD_CONTROL_TOKEN: %d, want 404", c)
	}
	<-done
}

// A real Prometheus scrapes soakd and reads the native histograms: the
// 99th percentile of the response latency comes back from PromQL.
func TestPrometheusScrapesNativeHistograms(t *testing.T) {
	const modelled = 5 * time.Millisecond // the null target's latency per write
	if testing.Short() {
		t.Skip("real Prometheus, ~15 s")
	}
	p := enginetest.Plugins()
	l := listen(t)
	prom := testserver.Prometheus(t, time.Second, l.Addr().String())
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://?latency="+modelled.String(), "SOAKD_CONTROL_TOKEN", "tok"), p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() { done <- runTest(ctx, cfg, p, l) }()
	defer func() {
		cancel()
		<-done
	}()

	query := func(q string) (float64, bool) {
		code, body := get(t, prom.URL+"/api/v1/query?query="+url.QueryEscape(q))
		if code != 200 {
			t.Fatalf("query %s: %d %s", q, code, body)
		}
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Data.Result) == 0 {
			return 0, false
		}
		var v float64
		_, err := fmt.Sscan(r.Data.Result[0].Value[1].(string), &v)
		return v, err == nil
	}
	// histogram_quantile without _bucket only works on a native histogram;
	// count and ops come from the same scrape, so they must be equal.
	const (
		qP99   = `histogram_quantile(0.99, soakd_response_seconds{workload="seq"})`
		qCount = `histogram_count(soakd_response_seconds{workload="seq"}) - on() soakd_ops_total{workload="seq",op="write",result="ok"}`
		qOps   = `soakd_ops_total{workload="seq",op="write",result="ok"}`
	)
	deadline := time.Now().Add(40 * time.Second)
	for ops, _ := query(qOps); ops <= 1000; ops, _ = query(qOps) {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus scraped %v writes after 40 s", ops)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Pause, so that a later scrape holds every write soakd will report:
	// Prometheus and soakd's summary then judge the same observations,
	// however slow the machine was for the last ones.
	if c, b := post(t, "http://"+l.Addr().String()+"/control?action=pause", "tok"); c != 200 {
		t.Fatalf("pause: %d %s", c, b)
	}
	var p99, diff, ops float64
	for prev := -1.0; ; prev = ops {
		time.Sleep(1500 * time.Millisecond) // more than the scrape interval
		var ok1, ok2, ok3 bool
		p99, ok1 = query(qP99)
		diff, ok2 = query(qCount)
		ops, ok3 = query(qOps)
		if ok1 && ok2 && ok3 && ops == prev {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scraped writes did not settle after the pause: %v then %v", prev, ops)
		}
	}
	cancel()
	res := <-done
	done <- res
	own := res.sum.Workloads[0].Ops[0]
	want := own.Response.P99
	t.Logf("PromQL: response p99 %.4fs over %v writes (soakd's own p99 %.4fs over %d)", p99, ops, want, own.Count)
	if int64(ops) != own.Count {
		t.Fatalf("Prometheus saw %v writes, soakd acknowledged %d: not the same observations", ops, own.Count)
	}
	if diff != 0 {
		t.Errorf("histogram_count - soakd_ops_total{result=ok} = %v in one scrape, want 0", diff)
	}
	// Over the same writes, a native bucket (9 % wide, interpolated) and
	// the HDR histogram's 3 significant digits agree within a bucket's
	// width; and no write took less than the target's modelled latency,
	// which a busy machine can only lengthen.
	if p99 > want*1.1 || p99 < want/1.1 || p99 < modelled.Seconds()/1.1 {
		t.Errorf("native-histogram p99 = %v, want within 10 %% of soakd's own %v over the same writes, and at least the modelled %v", p99, want, modelled)
	}
}

// runServed runs cfg with its HTTP API and returns the API's handler once
// the run has started, the cancel that stops the run (as SIGTERM does),
// and a channel closed when Run has returned.
func runServed(cfg *config.Config, p *config.Plugins) (http.Handler, context.CancelFunc, <-chan struct{}) {
	var h http.Handler
	open := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		api := New(Options{Config: cfg, Registry: prometheus.NewRegistry()})
		h = api.Handler()
		_, _ = daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Observers: []daemon.Observer{api, startedObserver(func() { close(open) })}})
	}()
	<-open
	return h, cancel, done
}

// /status reports the phase running now: after a KV load phase (inserts)
// the run's latency shows read and update only, and both phases' counts
// are listed, each adding up.
func TestStatusShowsCurrentPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_TARGET", "null://?latency=1ms", "SOAKD_KV_RECORDS", "2000",
			"SOAKD_KV_LOAD_RATE", "1000", "SOAKD_KV_RATE", "500", "SOAKD_KV_DURATION", "30s", "SOAKD_PROGRESS_INTERVAL", "5s"), p)
		h, cancel, done := runServed(cfg, p)
		get := func() report.StatusWorkload {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
			var st report.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			return st.Workloads[0]
		}
		time.Sleep(1500 * time.Millisecond) // in the load phase (2 s at 1000/s)
		synctest.Wait()
		s := get()
		if s.Phase != "load" || len(s.Latency) != 1 || s.Latency["insert"].Count == 0 {
			t.Fatalf("during the load phase: phase %q latency %v", s.Phase, s.Latency)
		}
		for _, at := range []time.Duration{1500 * time.Millisecond, 8 * time.Second} { // the run's first window, then later ones
			time.Sleep(at)
			synctest.Wait()
			s = get()
			if s.Phase != "run" || s.Latency["read"].Count == 0 || s.Latency["update"].Count == 0 || s.Latency["insert"].Count != 0 {
				t.Fatalf("during the run phase: phase %q latency %v", s.Phase, s.Latency)
			}
		}
		if len(s.Phases) != 2 || s.Phases[0].Name != "load" || s.Phases[0].Acked != 2000 || s.Phases[0].StoppedBy != "end of data set" ||
			s.Phases[1].Name != "run" || s.Phases[1].StoppedBy != "" {
			t.Fatalf("phases %+v", s.Phases)
		}
		for _, ph := range s.Phases {
			if ph.Scheduled != ph.Acked+ph.Failed+ph.Dropped+ph.InFlight {
				t.Errorf("phase %s: %+v does not add up", ph.Name, ph.StatusCounts)
			}
		}
		if s.Scheduled != s.Phases[1].Scheduled || s.Acked != s.Phases[1].Acked {
			t.Errorf("top-level counts %+v are not the run phase's %+v", s.StatusCounts, s.Phases[1].StatusCounts)
		}
		cancel()
		<-done
	})
}

// GET /control (curl without -X POST) is 405 with Allow: POST, even
// with the console serving every other path.
func TestControlOtherMethods(t *testing.T) {
	t.Parallel()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_CONTROL_TOKEN", "tok"), enginetest.Plugins())
	ui := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "console") })
	h := New(Options{Config: cfg, Registry: prometheus.NewRegistry(), UI: ui}).Handler()
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/control?workload=seq&rate=5", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
			t.Errorf("%s /control: %d, Allow %q; want 405 and Allow: POST", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/control?workload=seq&rate=5", nil))
	if rec.Code == http.StatusMethodNotAllowed {
		t.Errorf("POST /control: 405")
	}
}

// The read endpoints answer another method 405 with Allow: GET, HEAD, as
// the console's page does, and HEAD as GET. POST /status was answered by
// the console's "404 page not found", as if there were no such endpoint.
func TestReadEndpointsOtherMethods(t *testing.T) {
	t.Parallel()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq"), enginetest.Plugins())
	ui := web.NewConsole(web.ConsoleOptions{History: history.New(), Version: "test"})
	h := New(Options{Config: cfg, Registry: prometheus.NewRegistry(), UI: ui}).Handler()
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/status", "/history"} {
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(m, path, nil))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q; want 405 and Allow: GET, HEAD", m, path, rec.Code, rec.Header().Get("Allow"))
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("HEAD", path, nil))
		if rec.Code == http.StatusMethodNotAllowed || rec.Code == http.StatusNotFound {
			t.Errorf("HEAD %s: %d", path, rec.Code)
		}
	}
}

// An address in use fails the run before any workload starts: Run
// returns the error, with no summary, and no observer is started.
func TestListenAddressInUse(t *testing.T) {
	taken := listen(t)
	defer taken.Close()
	p := enginetest.Plugins()
	env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "1s")
	env["SOAKD_LISTEN"] = taken.Addr().String()
	cfg := enginetest.Load(t, env, p)
	started := false
	api := New(Options{Config: cfg, Registry: prometheus.NewRegistry()})
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
		Observers: []daemon.Observer{api, startedObserver(func() { started = true })}})
	if err == nil || !strings.Contains(err.Error(), "SOAKD_LISTEN: cannot listen on "+taken.Addr().String()) || sum != nil {
		t.Errorf("Run = %v, %v; want no summary and SOAKD_LISTEN's error", sum, err)
	}
	if started {
		t.Error("a workload started on a run that could not listen")
	}
	api.Close()
}

// /control?workload=all changes every workload or none: with one of them
// closed loop, a pause is refused and the other keeps running. It was
// answered 409 after pausing the first.
func TestControlAllChangesAllOrNothing(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
		"SOAKD_A_RATE", "100", "SOAKD_B_RATE", "max", "SOAKD_A_TARGET", "null://", "SOAKD_B_TARGET", "null://?latency=1ms",
		"SOAKD_CONTROL_TOKEN", "s3cret-token"), p)
	startRun(t, cfg, p, l)
	eventually(t, "both running", func() bool {
		_, body := get(t, base+"/status")
		var st report.Status
		if json.Unmarshal([]byte(body), &st) != nil || len(st.Workloads) != 2 {
			return false
		}
		return st.Workloads[0].State == "running" && st.Workloads[1].State == "running"
	})
	c, b := post(t, base+"/control?workload=all&action=pause", "s3cret-token")
	if c != http.StatusConflict || !strings.Contains(b, "b: workload runs closed loop") || !strings.Contains(b, "nothing was changed") {
		t.Errorf("pause all with b closed loop: %d %s; want 409 naming b, nothing changed", c, b)
	}
	if s := status(t, base); s.Name != "a" || s.State != "running" || s.TargetRate != 100 {
		t.Errorf("after the refused pause: %s is %s at %v/s; want a running at 100/s", s.Name, s.State, s.TargetRate)
	}
}

// A /control parameter given twice is refused, nothing changed: it was
// read as its first, so workload=a&workload=b paused a alone and
// answered {"ok":true}, and rate=300&rate=500 set 300.
func TestControlRefusesRepeatedParameters(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
		"SOAKD_A_RATE", "100", "SOAKD_B_RATE", "100", "SOAKD_A_TARGET", "null://", "SOAKD_B_TARGET", "null://",
		"SOAKD_CONTROL_TOKEN", "s3cret-token"), p)
	startRun(t, cfg, p, l)
	states := func() map[string]report.StatusWorkload {
		_, body := get(t, base+"/status")
		var st report.Status
		if json.Unmarshal([]byte(body), &st) != nil {
			return nil
		}
		m := map[string]report.StatusWorkload{}
		for _, w := range st.Workloads {
			m[w.Name] = w
		}
		return m
	}
	eventually(t, "both running", func() bool {
		m := states()
		return m["a"].State == "running" && m["b"].State == "running"
	})
	for _, q := range []string{"workload=a&workload=b&action=pause", "workload=a&rate=300&rate=500",
		"workload=a&action=pause&action=resume"} {
		c, b := post(t, base+"/control?"+q, "s3cret-token")
		if c != http.StatusBadRequest || !strings.Contains(b, "give it once") {
			t.Errorf("%s: %d %s; want 400 saying to give it once", q, c, b)
		}
	}
	for name, w := range states() {
		if w.State != "running" || w.TargetRate != 100 {
			t.Errorf("%s is %s at %v/s after the refused changes; want running at 100/s", name, w.State, w.TargetRate)
		}
	}
}

// With SOAKD_PPROF, /debug/pprof serves profiles but not the command
// line, whose flags may hold the control token and a target's password:
// pprof takes no token. It answered them to anyone.
func TestPprofKeepsTheCommandLine(t *testing.T) {
	t.Parallel()
	env := enginetest.Env("SOAKD_WORKLOADS", "seq")
	env["SOAKD_PPROF"] = "true"
	cfg := enginetest.Load(t, env, enginetest.Plugins())
	h := New(Options{Config: cfg, Registry: prometheus.NewRegistry()}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/cmdline", nil))
	if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), os.Args[0]) {
		t.Errorf("/debug/pprof/cmdline: %d %q; want 403 without the command line", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/goroutine?debug=1", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "goroutine profile:") {
		t.Errorf("/debug/pprof/goroutine: %d, want the profile", rec.Code)
	}
}

// From the stop (a signal, SOAKD_DURATION) until the writes in flight end,
// soakd schedules nothing, and says so: /status's state is stopping with
// target rate 0, soakd_target_rate is 0, /readyz is 503 (a terminating
// pod takes no traffic) and /control answers 409 at once. Each said the
// run was live: state running at rate 20, ready, and a pause that waited
// 5 s to answer "context deadline exceeded". A workload that ended at its
// DURATION while another runs has soakd_target_rate 0 too, not its last
// rate.
func TestStoppingSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "slow,short",
			"SOAKD_SLOW_SOURCE", "seq", "SOAKD_SLOW_TARGET", "null://?latency=20s", "SOAKD_SLOW_RATE", "20", "SOAKD_SLOW_BATCH_SIZE", "10",
			"SOAKD_SHORT_SOURCE", "seq", "SOAKD_SHORT_TARGET", "null://?latency=1ms", "SOAKD_SHORT_RATE", "200", "SOAKD_SHORT_DURATION", "2s",
			"SOAKD_SHUTDOWN_GRACE", "60s", "SOAKD_CONTROL_TOKEN", "tok"), p)
		h, cancel, done := runServed(cfg, p)
		do := func(method, path string) (int, string) {
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("Authorization", "Bearer tok")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code, rec.Body.String()
		}
		state := func() map[string]report.StatusWorkload {
			_, body := do("GET", "/status")
			var st report.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			m := map[string]report.StatusWorkload{}
			for _, w := range st.Workloads {
				m[w.Name] = w
			}
			return m
		}
		rateMetric := func(w string) string {
			_, body := do("GET", "/metrics")
			for line := range strings.Lines(body) {
				if strings.HasPrefix(line, `soakd_target_rate{workload="`+w+`"} `) {
					return strings.TrimSpace(strings.TrimPrefix(line, `soakd_target_rate{workload="`+w+`"} `))
				}
			}
			return "absent"
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		st := state()
		if st["slow"].State != "running" || st["short"].State != "done" || rateMetric("slow") != "20" || rateMetric("short") != "0" {
			t.Errorf("before the stop: slow %s, short %s; soakd_target_rate slow %s short %s; want running and done, 20 and 0",
				st["slow"].State, st["short"].State, rateMetric("slow"), rateMetric("short"))
		}
		if code, body := do("GET", "/readyz"); code != http.StatusOK {
			t.Errorf("/readyz before the stop: %d %s", code, body)
		}
		cancel() // as SIGTERM does; slow's writes take 20 s
		time.Sleep(time.Second)
		synctest.Wait()
		st = state()
		if st["slow"].State != "stopping" || st["slow"].TargetRate != 0 || rateMetric("slow") != "0" {
			t.Errorf("while draining: state %s, target_rate %v, soakd_target_rate %s; want stopping, 0, 0",
				st["slow"].State, st["slow"].TargetRate, rateMetric("slow"))
		}
		if code, body := do("GET", "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
			t.Errorf("/readyz while draining: %d %s; want 503 saying soakd is stopping", code, body)
		}
		start := time.Now()
		if code, body := do("POST", "/control?workload=slow&action=pause"); code != http.StatusConflict || !strings.Contains(body, "soakd is stopping") ||
			time.Since(start) != 0 {
			t.Errorf("/control while draining: %d %q after %v; want 409 saying soakd is stopping, at once", code, body, time.Since(start))
		}
		// The workload that ended before the stop, alone or first of
		// all: soakd is stopping, not "short is not running".
		for _, path := range []string{"/control?workload=short&rate=5", "/control?workload=all&action=pause"} {
			if code, body := do("POST", path); code != http.StatusConflict || !strings.Contains(body, "soakd is stopping") {
				t.Errorf("%s while draining: %d %q; want 409 saying soakd is stopping", path, code, body)
			}
		}
		<-done
	})
}

// The token may follow the scheme after more than one space (RFC 9110
// §11.4), as a header written by hand or pasted often has it: "Bearer
// s3cret" with two spaces was refused as a wrong token (401).
func TestControlTokenAfterSeveralSpaces(t *testing.T) {
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://",
		"SOAKD_CONTROL_TOKEN", "s3cret-token"), enginetest.Plugins())
	srv := httptest.NewServer(New(Options{Config: cfg}).Handler())
	defer srv.Close()
	for _, auth := range []string{"Bearer s3cret-token", "Bearer  s3cret-token", "bearer \t s3cret-token"} {
		// A rate that is no rate is refused after the token is checked:
		// 400 says the token was taken.
		if c, b := postAuth(t, srv.URL+"/control?rate=fast", auth); c != http.StatusBadRequest {
			t.Errorf("Authorization %q: %d %s, want 400 (the token taken, the rate refused)", auth, c, b)
		}
	}
	for _, auth := range []string{"Bearer  s3cret-tokeN", "Bearer   ", "Bearer"} {
		if c, b := postAuth(t, srv.URL+"/control?rate=fast", auth); c != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d %s, want 401", auth, c, b)
		}
	}
}

// A workload still waiting for its target cannot be changed, and the
// refusal says so: it said "workload is not running", as for one that
// had ended, while /status said it was starting.
func TestControlWhileWaitingForTheTarget(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_LOAD", "false",
		"SOAKD_KV_TARGET", fmt.Sprintf("redis://127.0.0.1:%d/0", testserver.ClosedPort(t)),
		"SOAKD_CONTROL_TOKEN", "s3cret-token"), p)
	startRun(t, cfg, p, l)
	eventually(t, "a failed attempt to reach the target", func() bool {
		c, _ := get(t, base+"/healthz")
		if c != 200 {
			return false
		}
		s := status(t, base)
		return s.State == "starting" && s.Waiting != nil && s.Waiting.Attempts > 0
	})
	for _, q := range []string{"workload=kv&action=pause", "workload=all&rate=10"} {
		c, b := post(t, base+"/control?"+q, "s3cret-token")
		if c != http.StatusConflict || !strings.Contains(b, "kv: workload is waiting for its target") {
			t.Errorf("%s while the target is not up: %d %s, want 409 saying it waits for its target", q, c, b)
		}
	}
}

// /control refuses what it does not read, nothing changed: a JSON or
// multipart body holding the rate was answered "want rate=RATE or
// action=pause|resume", and an unknown parameter was ignored.
func TestControlRefusesWhatItDoesNotRead(t *testing.T) {
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://",
		"SOAKD_CONTROL_TOKEN", "s3cret-token"), enginetest.Plugins())
	srv := httptest.NewServer(New(Options{Config: cfg}).Handler())
	defer srv.Close()
	send := func(query, ctype, body string) (int, string) {
		t.Helper()
		return postBody(t, srv.URL+"/control?"+query, "Bearer s3cret-token", ctype, body)
	}
	for _, c := range []struct{ query, ctype, body string }{
		{"workload=seq", "application/json", `{"rate":"500"}`},
		{"workload=seq", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"rate\"\r\n\r\n500\r\n--x--\r\n"},
	} {
		if code, b := send(c.query, c.ctype, c.body); code != http.StatusUnsupportedMediaType || !strings.Contains(b, "query string") {
			t.Errorf("a %s body: %d %s, want 415 saying where the parameters go", c.ctype, code, b)
		}
	}
	if code, b := send("workload=seq&rate=500&rampup=10s", "", ""); code != http.StatusBadRequest || !strings.Contains(b, `unknown parameter "rampup"`) {
		t.Errorf("an unknown parameter: %d %s, want 400 naming it", code, b)
	}
	// A form body is read, as curl -d sends it (no workload runs here:
	// the change reaches none).
	if code, b := send("", "application/x-www-form-urlencoded", "workload=all&rate=500"); code != http.StatusOK {
		t.Errorf("a form body: %d %s", code, b)
	}
}

// The token in SOAKD_CONTROL_TOKEN_FILE is read again at every request: a
// token rotated in its file (a Kubernetes secret updated) was refused,
// and the old one, meant to be revoked, kept working until a restart.
func TestControlTokenFileRotated(t *testing.T) {
	file := t.TempDir() + "/control-token"
	if err := os.WriteFile(file, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://",
		"SOAKD_CONTROL_TOKEN_FILE", file), enginetest.Plugins())
	srv := httptest.NewServer(New(Options{Config: cfg}).Handler())
	defer srv.Close()
	// A rate that is no rate is refused after the token is checked: 400
	// says the token was taken.
	try := func(token string, want int) {
		t.Helper()
		if c, b := post(t, srv.URL+"/control?rate=fast", token); c != want {
			t.Errorf("token %q: %d %s, want %d", token, c, b, want)
		} else if strings.Contains(b, "first-token") || strings.Contains(b, "second-token") {
			t.Errorf("token %q: the answer shows a token: %s", token, b)
		}
	}
	try("first-token", http.StatusBadRequest)
	if err := os.WriteFile(file, []byte("second-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	try("first-token", http.StatusUnauthorized)
	try("second-token", http.StatusBadRequest)
	// A file gone or emptied refuses every change, saying which file.
	if err := os.WriteFile(file, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	try("second-token", http.StatusServiceUnavailable)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	try("second-token", http.StatusServiceUnavailable)
	if c, b := post(t, srv.URL+"/control?rate=fast", "second-token"); !strings.Contains(b, "SOAKD_CONTROL_TOKEN_FILE "+file) {
		t.Errorf("the token file removed: %d %s, want the setting and the file named", c, b)
	}
}

// action takes any case, as a rate does (rate=MAX, STEP:...): action=PAUSE
// was refused with "want rate=RATE or action=pause|resume". An action
// that is neither is refused naming it, nothing changed.
func TestControlActionInAnyCase(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "a", "SOAKD_A_SOURCE", "seq", "SOAKD_A_RATE", "100",
		"SOAKD_A_TARGET", "null://", "SOAKD_CONTROL_TOKEN", "s3cret-token"), p)
	startRun(t, cfg, p, l)
	eventually(t, "running", func() bool { return status(t, base).State == "running" })
	if c, b := post(t, base+"/control?workload=a&action=stop", "s3cret-token"); c != http.StatusBadRequest || !strings.Contains(b, `action "stop"`) {
		t.Errorf("action=stop: %d %s; want 400 naming it", c, b)
	}
	if s := status(t, base); s.State != "running" {
		t.Errorf("after action=stop: %s; want running", s.State)
	}
	if c, b := post(t, base+"/control?workload=a&action=PAUSE", "s3cret-token"); c != http.StatusOK {
		t.Fatalf("action=PAUSE: %d %s; want 200", c, b)
	}
	eventually(t, "paused", func() bool { return status(t, base).State == "paused" })
	if c, b := post(t, base+"/control?workload=a&action=Resume", "s3cret-token"); c != http.StatusOK {
		t.Fatalf("action=Resume: %d %s; want 200", c, b)
	}
	eventually(t, "running again", func() bool { return status(t, base).State == "running" })
}
