// Package influx is the line-protocol sink: InfluxDB 2.x, 3.x and 1.8+
// through the v2 API (influx://, influxs://, with influxdb-client-go), and
// InfluxDB 1.x, CnosDB, TDengine (taosAdapter), VictoriaMetrics, QuestDB
// and GreptimeDB through raw line-protocol POSTs (influx1:// or ?api=v1).
//
// Each Write encodes the whole batch into a reused buffer (no allocation
// per row) and sends it as one request, returning when the target has
// answered, so latency and failures are measured per batch. Failures are
// classified as sinks.Error (rejected, server, timeout, connection); the
// engine does the retries, which are safe for InfluxDB because writing the
// same points twice stores them once.
//
//	r.Add(sinks.Entry{Schemes: []string{"influx", "influxs", "influx1"},
//		Kinds: []sources.Kind{sources.Series}, Open: influx.Open, Check: influx.Check})
//	s, err := r.Open(ctx, "influx1://127.0.0.1:8086?db=soak&gzip=true", opts)
//	if p, ok := s.(sinks.Preparer); ok {
//		err = p.Prepare(ctx) // CREATE DATABASE soak
//	}
//	n, err := s.Write(ctx, batch)
//
// See README.md for every URL parameter and target.
package influx
