// Package plugins is soakd's composition root: the one list of sources
// and sinks that soakd run and soakd generate use. A new source or sink is
// added here and nowhere else outside its own package.
package plugins

import (
	"context"
	"net/url"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/influx"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sinks/postgres"
	"github.com/soakd/soakd/sinks/redis"
	"github.com/soakd/soakd/sinks/redis/embedded"
	"github.com/soakd/soakd/sinks/remotewrite"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/kv"
	"github.com/soakd/soakd/sources/seq"
)

// All is the one list of sources and sinks soakd knows.
func All() *config.Plugins {
	r := sinks.NewRegistry()
	series := []sources.Kind{sources.Series}
	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV, sources.Queries}, Open: null.Open, Check: null.Check, Params: &null.Params})
	r.Add(sinks.Entry{Schemes: []string{"file"}, Kinds: series, Open: file.Open, Check: file.Check, Params: &file.Params})
	r.Add(sinks.Entry{Schemes: []string{"postgres", "postgresql"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: postgres.Open, Check: postgres.Check, Params: &postgres.Params})
	r.Add(sinks.Entry{Schemes: []string{"influx", "influxs", "influx1"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: influx.Open, Check: influx.Check, Params: &influx.Params})
	r.Add(sinks.Entry{Schemes: remotewrite.Schemes, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: remotewrite.Open, Check: remotewrite.Check,
		CheckQueries: remotewrite.CheckQueries, Params: &remotewrite.Params})
	r.Add(sinks.Entry{Schemes: redis.Schemes, Kinds: []sources.Kind{sources.KV}, Open: openRedis, Check: redis.Check, CheckShape: redis.CheckShape,
		Params: &redis.Params})

	srcs := sources.NewRegistry()
	srcs.Add(sources.Register(sources.Spec[iot.Config]{
		Names: iot.Names(),
		Kind:  sources.Series,
		Validate: func(c *iot.Config, w sources.Common) error {
			return iot.Defaults(w.Source, *c).Validate()
		},
		New: func(c *iot.Config, w sources.Common) (sources.Source, error) {
			return iot.New(w.Source, *c, w.Seed, w.Shard)
		},
		Finite:       (*iot.Config).Finite,
		FileDefaults: iot.FileDefaults(),
	}))
	srcs.Add(sources.Register(sources.Spec[iot.QueryConfig]{
		Names:    iot.QueryNames(),
		Kind:     sources.Queries,
		Validate: func(c *iot.QueryConfig, w sources.Common) error { return c.Validate(w.Source) },
		New: func(c *iot.QueryConfig, w sources.Common) (sources.Source, error) {
			return iot.NewQueries(w.Source, *c, w.Seed)
		},
	}))
	srcs.Add(sources.Register(sources.Spec[kv.Config]{
		Names:    []string{"kv"},
		Kind:     sources.KV,
		Validate: (*kv.Config).Check,
		New: func(c *kv.Config, w sources.Common) (sources.Source, error) {
			return kv.New(*c, w.Seed, w.Shard)
		},
		// The built-in target keeps records in this process's memory,
		// where a record of 10 fields of 100 bytes takes about 2.3 KB
		// in miniredis's maps: with 1,000 default records (2.3 MB) the
		// zero-config demo peaks at 46-49 MB of RSS (10,000 took it to
		// 65-85 MB, their 23 MB twice over with the garbage collector's
		// headroom); set RECORDS to load more.
		BuiltinDefaults: map[string]string{"RECORDS": "1000"},
	}))
	srcs.Add(sources.Register(sources.Spec[seq.Config]{
		Names:    []string{"seq"},
		Kind:     sources.Series,
		Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
		New: func(c *seq.Config, w sources.Common) (sources.Source, error) {
			return seq.New(*c, w.Shard)
		},
		Finite: (*seq.Config).Finite,
	}))
	return &config.Plugins{
		Sources: srcs,
		Sinks:   r,
		// In-process targets only: a run with no TARGET sends nothing out.
		Builtin: map[sources.Kind]string{
			sources.Series:  "null://?latency=1ms..4ms",
			sources.KV:      embedded.URL,
			sources.Queries: "null://?latency=1ms..4ms",
		},
	}
}

// openRedis opens redis://embedded, the built-in KV target, as an
// in-process server, and every other Redis URL with the redis sink.
func openRedis(ctx context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	if embedded.Is(u) {
		return embedded.Open(ctx, u, o)
	}
	return redis.Open(ctx, u, o)
}
