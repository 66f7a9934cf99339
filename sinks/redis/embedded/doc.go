// Package embedded is soakd's built-in KV target, redis://embedded: an
// in-process Redis-protocol server (miniredis) on a loopback port with the
// redis sink pointed at it, so a KV workload with no TARGET sends nothing
// out of the process. The data is held in memory and lost when the sink
// closes. It is a demo target: miniredis keeps every value in Go maps and
// runs commands one at a time, so it neither stores nor performs like a
// Redis server.
//
// The redis sink itself knows nothing of it (to the sink, "embedded" is
// a host name); the composition root, cmd/soakd, sends the URL here:
//
//	open := func(ctx context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
//		if embedded.Is(u) {
//			return embedded.Open(ctx, u, o)
//		}
//		return redis.Open(ctx, u, o)
//	}
//	r.Add(sinks.Entry{Schemes: redis.Schemes, Kinds: []sources.Kind{sources.KV}, Open: open, Check: redis.Check})
package embedded
