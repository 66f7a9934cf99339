// Package remotewrite is the Prometheus remote-write sink
// (prom+http://, prom+https://): Remote-Write 1.0 (a protobuf
// WriteRequest, encode.go) or 2.0 (an io.prometheus.write.v2.Request with
// its symbol table, encode2.go) compressed with snappy, POSTed to
// Prometheus (--web.enable-remote-write-receiver), VictoriaMetrics, Mimir,
// Cortex, Thanos Receive and the services that speak it. protocol=auto
// (the default) asks the target with an empty 2.0 request before the
// first write, and uses 1.0 where it does not take 2.0 (Sink.protocol).
//
// Each Write encodes the whole batch into reused buffers, one series
// per device × field (metric MEASUREMENT_FIELD, the device's tags as
// labels, the row's time in milliseconds), and sends it as one request,
// returning when the target has answered. Opened for a query workload
// (devops-queries), it runs TSBS's devops query types as PromQL instead
// (query.go, promql.go). Answers are classified as
// sinks.Error: 400 rejected (samples refused for their time said so),
// 429 and 5xx retried by the engine after Retry-After.
//
//	r.Add(sinks.Entry{Schemes: remotewrite.Schemes, Kinds: []sources.Kind{sources.Series, sources.Queries},
//		Open: remotewrite.Open, Check: remotewrite.Check, CheckQueries: remotewrite.CheckQueries, Params: &remotewrite.Params})
//	s, err := r.Open(ctx, "prom+http://127.0.0.1:9090/api/v1/write?header=X-Scope-OrgID:t1", opts)
//	n, err := s.Write(ctx, batch)
//
// See README.md's "Prometheus remote write" section for the URL grammar.
package remotewrite
