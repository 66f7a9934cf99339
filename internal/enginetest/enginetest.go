// Package enginetest is what the tests of the engine's features share:
// soakd's plugins, a configuration from a few settings, and sinks that
// fail or store part of a batch.
package enginetest

import (
	"context"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Plugins are soakd's sources and sinks, and extra.
func Plugins(extra ...sinks.Entry) *config.Plugins {
	p := plugins.All()
	for _, e := range extra {
		p.Sinks.Add(e)
	}
	return p
}

// Env is a configuration of the pairs kv, without HTTP endpoints or
// progress lines.
func Env(kv ...string) map[string]string {
	m := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Load loads and validates env, failing t on a problem.
func Load(t testing.TB, env map[string]string, p *config.Plugins) *config.Config {
	t.Helper()
	cfg, err := config.Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg
}

// FailingSink fails every write with Err.
type FailingSink struct{ Err error }

func (f FailingSink) Write(context.Context, *sources.Batch) (int, error) { return 0, f.Err }
func (f FailingSink) Close(context.Context) error                        { return nil }

// Partial is a write error after which N rows were stored.
type Partial struct{ N int }

func (p Partial) Error() string { return "partial write" }
func (p Partial) Stored() int   { return p.N }
