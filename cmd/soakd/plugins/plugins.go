// Package plugins is soakd's composition root: the one list of sources
// and sinks that soakd run and soakd generate use. A new source or sink is
// added here and nowhere else outside its own package.
package plugins

import (
	"context"
	"net/url"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/influx"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sinks/postgres"
	"github.com/soakd/soakd/sinks/redis"
	"github.com/soakd/soakd/sinks/redis/embedded"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/kv"
	"github.com/soakd/soakd/sources/seq"
)

// All is the one list of sources and sinks soakd knows.
func All() *daemon.Plugins {
	r := sinks.NewRegistry()
	series := []sources.Kind{sources.Series}
	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV, sources.Queries}, Open: null.Open, Check: null.Check, Params: &null.Params})
	r.Add(sinks.Entry{Schemes: []string{"file"}, Kinds: series, Open: file.Open, Check: file.Check, Params: &file.Params})
	r.Add(sinks.Entry{Schemes: []string{"postgres", "postgresql"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: postgres.Open, Check: postgres.Check, Params: &postgres.Params})
	r.Add(sinks.Entry{Schemes: []string{"influx", "influxs", "influx1"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: influx.Open, Check: influx.Check, Params: &influx.Params})
	r.Add(sinks.Entry{Schemes: redis.Schemes, Kinds: []sources.Kind{sources.KV}, Open: openRedis, Check: redis.Check, Params: &redis.Params})

	srcs := daemon.Sources{
		{
			Names:    iot.Names(),
			Kind:     sources.Series,
			Settings: func() any { return &iot.Config{} },
			Validate: func(w *daemon.Workload) error {
				return iot.Defaults(w.Source, *w.Ext.(*iot.Config)).Validate()
			},
			New: func(w *daemon.Workload) (sources.Source, error) {
				return iot.New(w.Source, *w.Ext.(*iot.Config), w.Seed, w.Shard)
			},
			File: &daemon.FileEntry{
				Defaults: iot.FileDefaults(),
				Finite:   func(w *daemon.Workload) error { return w.Ext.(*iot.Config).Finite() },
			},
		},
		{
			Names:    iot.QueryNames(),
			Kind:     sources.Queries,
			Settings: func() any { return &iot.QueryConfig{} },
			Validate: func(w *daemon.Workload) error { return w.Ext.(*iot.QueryConfig).Validate(w.Source) },
			New: func(w *daemon.Workload) (sources.Source, error) {
				return iot.NewQueries(w.Source, *w.Ext.(*iot.QueryConfig), w.Seed)
			},
		},
		{
			Names:    []string{"kv"},
			Kind:     sources.KV,
			Settings: func() any { return &kv.Config{} },
			Validate: func(w *daemon.Workload) error {
				c := w.Ext.(*kv.Config)
				if err := c.Validate(); err != nil {
					return err
				}
				if w.Target == "" {
					return builtinFits(c)
				}
				return nil
			},
			New: func(w *daemon.Workload) (sources.Source, error) {
				return kv.New(*w.Ext.(*kv.Config), w.Seed, w.Shard)
			},
			// The built-in target keeps records in this process's memory:
			// 10,000 default records (10 MB of values) keep the zero-config
			// demo small; set RECORDS to load more.
			BuiltinDefaults: map[string]string{"RECORDS": "10000"},
		},
		{
			Names:    []string{"seq"},
			Kind:     sources.Series,
			Settings: func() any { return &seq.Config{} },
			Validate: func(w *daemon.Workload) error { return w.Ext.(*seq.Config).Validate() },
			New: func(w *daemon.Workload) (sources.Source, error) {
				return seq.New(*w.Ext.(*seq.Config), w.Shard)
			},
			File: &daemon.FileEntry{
				Finite: func(w *daemon.Workload) error { return w.Ext.(*seq.Config).Finite() },
			},
		},
	}
	return &daemon.Plugins{
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

// builtinMaxBytes bounds the records the built-in KV target may hold in
// soakd's own memory.
const builtinMaxBytes = 1 << 30

// builtinFits refuses a data set too big for the built-in target, which
// keeps every record in this process: a real target takes any size.
func builtinFits(c *kv.Config) error {
	per := int64(c.Fields)*int64(c.FieldLength+48) + 96 // values, field names and the server's own per-entry cost
	if c.Records > builtinMaxBytes/per {
		return sources.Invalid("RECORDS", "%d records of %d bytes would need about %.1f GiB in soakd's memory for the built-in target (at most %d records of this size): set TARGET to a real server, or lower RECORDS",
			c.Records, per, float64(c.Records)*float64(per)/(1<<30), builtinMaxBytes/per)
	}
	return nil
}
