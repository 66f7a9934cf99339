package config

import (
	"testing"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/seq"
)

// testPlugins are the seq source and the null sink, as the engine's tests
// use them.
func testPlugins() *Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV}, Open: null.Open, Check: null.Check})
	return &Plugins{
		Sources: sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
			Names: []string{"seq"}, Kind: sources.Series,
			Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
			New:      func(c *seq.Config, w sources.Common) (sources.Source, error) { return seq.New(*c, w.Shard) },
		})),
		Sinks:   r,
		Builtin: map[sources.Kind]string{sources.Series: "null://"},
	}
}

// loadTest loads and validates env (a map of SOAKD_* settings).
func loadTest(t testing.TB, env map[string]string, p *Plugins) *Config {
	t.Helper()
	cfg, err := Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return cfg
}

// testEnv is kv as settings, with the HTTP server and progress lines off.
func testEnv(kv ...string) map[string]string {
	m := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
