package capacity

import (
	"context"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// testPlugins are soakd's sources and sinks, and extra.
func testPlugins(extra ...sinks.Entry) *daemon.Plugins {
	p := plugins.All()
	for _, e := range extra {
		p.Sinks.Add(e)
	}
	return p
}

// failingSink fails every write with err.
type failingSink struct{ err error }

func (f failingSink) Write(context.Context, *sources.Batch) (int, error) { return 0, f.err }
func (f failingSink) Close(context.Context) error                        { return nil }

// partial is a write error after which n rows were stored.
type partial struct{ n int }

func (p partial) Error() string { return "partial write" }
func (p partial) Stored() int   { return p.n }

// testEnv is a configuration of the pairs kv, without HTTP endpoints or
// progress lines.
func testEnv(kv ...string) map[string]string {
	m := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// loadTest loads and validates env.
func loadTest(t testing.TB, env map[string]string, p *daemon.Plugins) *daemon.Config {
	t.Helper()
	cfg, err := daemon.Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg
}
