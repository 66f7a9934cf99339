// Package sinks defines what a target database looks like to the engine: a
// Sink that writes batches, the optional capabilities a sink may add
// (capabilities.go lists them all: Preparer, Pinger, Querier...), an
// error classification (timeout, connection, rejected, server) and a
// Registry keyed by URL scheme.
//
// Each protocol family lives in its own sub-package (postgres, influx,
// redis, null, file) and is registered once, in cmd/soakd:
//
//	r := sinks.NewRegistry()
//	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV}, Open: null.Open})
//	s, err := r.Open(ctx, "null://?latency=2ms", sinks.Options{Workers: 4})
//
// Their encoders share two packages: lineproto (InfluxDB line protocol)
// and devcache (each device's encoded tags, built once).
package sinks
