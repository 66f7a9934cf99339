package remotewrite

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// enginePlugins is the composition root of these tests: this sink (the
// registry entry cmd/soakd/plugins has) and the device sources.
func enginePlugins() *config.Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: Schemes, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: Open, Check: Check,
		CheckQueries: CheckQueries, Params: &Params})
	return &config.Plugins{
		Sources: sources.NewRegistry(sources.Register(sources.Spec[iot.Config]{
			Names: iot.Names(), Kind: sources.Series,
			Validate: func(c *iot.Config, w sources.Common) error { return iot.Defaults(w.Source, *c).Validate() },
			New: func(c *iot.Config, w sources.Common) (sources.Source, error) {
				return iot.New(w.Source, *c, w.Seed, w.Shard)
			},
		}), sources.Register(sources.Spec[iot.QueryConfig]{
			Names:    iot.QueryNames(),
			Kind:     sources.Queries,
			Validate: func(c *iot.QueryConfig, w sources.Common) error { return c.Validate(w.Source) },
			New: func(c *iot.QueryConfig, w sources.Common) (sources.Source, error) {
				return iot.NewQueries(w.Source, *c, w.Seed)
			},
		})),
		Sinks: r,
	}
}

// runEngine runs the settings kv (SOAKD_* pairs) to the end through the
// engine.
func runEngine(t *testing.T, kv ...string) *report.Summary {
	t.Helper()
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	sum, err := daemon.Run(t.Context(), cfg, daemon.Deps{Logger: zaptest.NewLogger(t), Plugins: p, Version: "test"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum
}

// devopsSchemas are the tables of the devops source, whose metrics the
// tests count.
func devopsSchemas(t *testing.T) []*sources.Schema {
	t.Helper()
	c := iot.DefaultConfig()
	c.Scale = 1
	src, err := iot.New("devops", c, 1, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	return src.Schemas()
}

// devopsRun is a finite devops run of 20 hosts for 20 minutes of data an
// hour ago, into target.
func devopsRun(target string, more ...string) []string {
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339)
	return append([]string{"SOAKD_WORKLOADS", "w", "SOAKD_W_SOURCE", "devops", "SOAKD_W_TARGET", target,
		"SOAKD_W_RATE", "max", "SOAKD_W_WORKERS", "2", "SOAKD_W_BATCH_SIZE", "200", "SOAKD_W_SCALE", "20",
		"SOAKD_W_START", start, "SOAKD_W_END", "+20m", "SOAKD_W_INTERVAL", "10s"}, more...)
}

// A run through the engine: every value the engine counts as
// acknowledged is a sample Prometheus holds.
func TestEngineRun(t *testing.T) {
	tg := prometheusTarget(t, 0)
	sum := runEngine(t, devopsRun(tg.write+"?label=run:engine")...)
	w := sum.Workloads[0]
	stored := countSamples(t, tg.base, devopsSchemas(t), `run="engine"`, "2h", time.Now())
	t.Logf("rows %d, values %d, failed %d, stored %d samples, errors %v", w.Units, w.Values, w.Failed, stored, w.Errors)
	if w.Units != 20*120 || w.Failed != 0 || int64(stored) != w.Values || w.Values == 0 {
		t.Errorf("rows %d (want %d), values %d acknowledged, %d failed, %d samples stored", w.Units, 20*120, w.Values, w.Failed, stored)
	}
}

// proxy forwards to the server at base, answering the first throttle
// writes 429 with Retry-After: 1 instead (not the empty writes of Ping);
// it listens on ln.
func proxy(t *testing.T, ln net.Listener, base string, throttle int32) *atomic.Int32 {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > int64(max(len(emptyBody), len(emptyBodyV2))) && n.Add(1) <= throttle {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &n
}

// A throttling target (429 with Retry-After) is waited for and written
// again: the engine counts the refusals as server errors, resends each
// batch after the server's delay, and nothing acknowledged is missing.
func TestEngineThrottled(t *testing.T) {
	tg := prometheusTarget(t, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy(t, ln, tg.base, 4)
	start := time.Now()
	sum := runEngine(t, devopsRun("prom+http://"+ln.Addr().String()+"/api/v1/write?label=run:throttled",
		"SOAKD_W_RETRIES", "10", "SOAKD_W_RETRY_BACKOFF", "10ms")...)
	w := sum.Workloads[0]
	stored := countSamples(t, tg.base, devopsSchemas(t), `run="throttled"`, "2h", time.Now())
	t.Logf("took %v, rows %d, values %d, failed %d, stored %d, errors %v", time.Since(start), w.Units, w.Values, w.Failed, stored, w.Errors)
	if w.Errors["server"] == 0 || w.Failed != 0 || int64(stored) != w.Values {
		t.Errorf("errors %v, failed %d, values %d acknowledged, %d stored", w.Errors, w.Failed, w.Values, stored)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the run took %v: Retry-After: 1 was not honoured", d)
	}
}

// A target that is not up when the run starts is waited for
// (START_TIMEOUT): the write endpoint comes up 2 s later, and the run
// then writes everything.
func TestEngineTargetLate(t *testing.T) {
	tg := prometheusTarget(t, 0)
	// Reserved, the port refuses connections until the listener comes
	// up, and no server started meanwhile can take it.
	port := testserver.ReservePort(t)
	addr := port.Addr
	time.AfterFunc(2*time.Second, func() {
		ln, err := port.Listen()
		if err != nil {
			t.Errorf("listen: %v", err)
			return
		}
		proxy(t, ln, tg.base, 0)
	})
	start := time.Now()
	sum := runEngine(t, devopsRun("prom+http://"+addr+"/api/v1/write?label=run:late", "SOAKD_W_START_TIMEOUT", "60s")...)
	w := sum.Workloads[0]
	stored := countSamples(t, tg.base, devopsSchemas(t), `run="late"`, "2h", time.Now())
	if time.Since(start) < 2*time.Second || w.Failed != 0 || int64(stored) != w.Values || w.Values == 0 {
		t.Errorf("took %v, failed %d, values %d acknowledged, %d stored", time.Since(start), w.Failed, w.Values, stored)
	}
}
