package daemon

import (
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/sources"
)

// BenchHandle is a series workload in its run phase, for simulating the
// features that read the engine (the history) without running it.
func BenchHandle() *Handle {
	rate := pace.MustParse("100000")
	cfg := &config.Workload{Name: "iot", Workers: 4, BatchSize: 1000, Rate: rate, MaxLag: time.Second}
	w := &workload{runner: newRunner(cfg, sources.Series, nil, nil, zap.NewNop())}
	w.handle = &Handle{w}
	w.beginPhase("run", rate, nil)
	return w.handle
}

// Simulate advances h (a BenchHandle) by secs seconds of 100,000 rows/s,
// 100 batches of 1000 a second, calling each after every second s
// (1..secs).
func Simulate(h *Handle, secs int, each func(s int)) {
	ps := h.w.cur.Load()
	for s := 1; s <= secs; s++ {
		t := ps.workers[s%len(ps.workers)]
		ps.sched.release(100_000)
		t.mu.Lock()
		t.c.acked += 100_000
		t.c.values += 1_000_000
		t.c.bytes += 8_000_000
		t.c.ops[writeOp].ok += 100
		for i := 0; i < 100; i++ {
			if t.lat.n == sampleCap {
				ps.hist.mu.Lock()
				ps.hist.mergeLocked(&t.lat)
				ps.hist.mu.Unlock()
			}
			d := time.Duration(1+i%13) * time.Millisecond
			t.lat.add(sample{op: uint8(writeOp), n: 1, units: 1000, response: d + 50*time.Microsecond, service: d, dispatch: 50 * time.Microsecond})
		}
		t.mu.Unlock()
		each(s)
	}
}

// What the external tests (package daemon_test) share with the internal
// ones: the seq source and the null sink, a configuration from a few
// settings, and the reading of /metrics's text.
var (
	Plugins      = testPlugins
	LoadTest     = loadTest
	Env          = testEnv
	ParseMetrics = parseMetrics
)

// The engine's tests that read /metrics, /status and /control run the
// HTTP feature (package serve) as the composition root does. They are
// internal tests, which cannot import serve (it imports daemon), so
// serve_test.go, an external test file of this package, wires it here.
var (
	// ServeHook returns the HTTP API with soakd's metrics on reg,
	// serving on l (nil: Config.Listen), as an observer, and its
	// endpoints.
	ServeHook func(cfg *config.Config, d Deps, reg *prometheus.Registry, l net.Listener) (Observer, http.Handler)
)

// serving returns d with the HTTP API and soakd's metrics on reg among
// its observers, serving on l when not nil, and its endpoints.
func serving(cfg *config.Config, d Deps, reg *prometheus.Registry, l net.Listener) (Deps, http.Handler) {
	o, h := ServeHook(cfg, d, reg, l)
	d.Observers = append(slices.Clone(d.Observers), o)
	return d, h
}
