package daemon

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// The configuration check shows the sink the workload's record shape: a
// test-only target that stores a record as one value, as Memcached does,
// refuses DATA_TYPE=hash (the default) as a TARGET error, and takes
// DATA_TYPE=string.
func TestConfigCheckShowsSinkTheShape(t *testing.T) {
	t.Parallel()
	var seen sources.KVShape
	p := testPlugins(sinks.Entry{Schemes: []string{"memo"}, Kinds: []sources.Kind{sources.KV},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
			return nil, errors.New("test only")
		},
		CheckShape: func(_ *url.URL, _ sources.Kind, s sources.KVShape) error {
			seen = s
			if s.DataType == sources.DataTypeHash {
				return errors.New("DATA_TYPE hash: memo:// stores a record as one value; use DATA_TYPE=string")
			}
			return nil
		}})
	p.Sources.Add(sources.Register(sources.Spec[kv.Config]{
		Names: []string{"kv"}, Kind: sources.KV,
		Validate: func(c *kv.Config, _ sources.Common) error { return c.Validate() },
		New:      func(c *kv.Config, w sources.Common) (sources.Source, error) { return kv.New(*c, w.Seed, w.Shard) },
	}))
	env := map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": "memo://h", "SOAKD_KV_KEY_PREFIX": "t:"}
	cfg, err := config.Load(env, p.Sources)
	err = cfg.Check(p, err)
	if err == nil || !strings.Contains(err.Error(), "SOAKD_KV_TARGET: DATA_TYPE hash: memo://") {
		t.Errorf("DATA_TYPE=hash: %v, want a SOAKD_KV_TARGET error", err)
	}
	if seen != (sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "t:"}) {
		t.Errorf("the sink saw the shape %+v", seen)
	}
	env["SOAKD_KV_DATA_TYPE"] = "STRING"
	cfg, err = config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Errorf("DATA_TYPE=string: %v", err)
	}
	if seen.DataType != sources.DataTypeString {
		t.Errorf("the sink saw DATA_TYPE %q, want string", seen.DataType)
	}
}
