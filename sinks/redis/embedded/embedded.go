package embedded

import (
	"context"
	"fmt"
	"net/url"
	"runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/redis"
)

// URL is the built-in KV target: the target of a KV workload with no
// TARGET set.
const URL = "redis://embedded"

// Host is the host name that selects the in-process server.
const Host = "embedded"

// Is reports whether u names the in-process server: redis://embedded,
// with any parameters of the redis sink.
func Is(u *url.URL) bool { return u.Scheme == "redis" && u.Host == Host }

// Sink is the redis sink writing to an in-process server. Close closes
// the sink, then stops the server; the data is lost.
type Sink struct {
	*redis.Sink
	srv   *miniredis.Miniredis
	guard *memGuard
	stop  sync.Once
}

var (
	_ sinks.Sink   = (*Sink)(nil)
	_ sinks.Pinger = (*Sink)(nil)
	_ sinks.Prober = (*Sink)(nil)
)

// Open is a sinks.OpenFunc for redis://embedded (see Is): it starts the
// server on a free 127.0.0.1 port and opens the redis sink on it with the
// URL's parameters (index, cleanup, pool_size, ...). Errors name the
// target as redis://embedded.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	if !Is(u) {
		return nil, fmt.Errorf("BUG: embedded.Open called for %s", sinks.RedactURL(u))
	}
	srv := miniredis.NewMiniRedis()
	if err := srv.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("cannot start the in-process Redis server: %w", err)
	}
	// Set once started (the server exists from then on), before the
	// sink below makes the first connection.
	g := &memGuard{limit: MaxHeap}
	srv.Server().SetPreHook(g.hook)
	at := *u
	at.Host = srv.Addr()
	cfg, err := redis.ParseURL(&at)
	if err == nil {
		var s *redis.Sink
		if s, err = redis.New(cfg, o, sinks.RedactURL(u)); err == nil {
			return &Sink{Sink: s, srv: srv, guard: g}, nil
		}
	}
	srv.Close()
	return nil, err
}

// Close closes the redis sink, then stops the server. Safe to call more
// than once.
func (s *Sink) Close(ctx context.Context) error {
	err := s.Sink.Close(ctx)
	s.stop.Do(s.srv.Close)
	return err
}

// MaxHeap bounds the live heap the built-in target may fill: the records
// a workload loads are bounded by RECORDS (checked at start, up to about
// 1.6 GB of records at their real 2.3 KB each), but the ones its inserts
// add grow without end. Past it, commands that write are refused as a
// Redis server at its maxmemory with noeviction refuses them (OOM,
// counted as rejected).
const MaxHeap = 2 << 30

// writes are the commands of the redis sink that add to what the server
// holds.
var writes = map[string]bool{"SET": true, "SETRANGE": true, "HSET": true, "HMSET": true, "SADD": true, "ZADD": true, "MSET": true}

// errOOM is Redis's own reply past maxmemory.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// memGuard refuses writes while the process's live heap is over limit, read
// every guardEvery writes (a read of the runtime's metrics costs about a
// microsecond).
type memGuard struct {
	limit uint64
	n     atomic.Uint64
	over  atomic.Bool
}

const guardEvery = 256

func (g *memGuard) hook(c *server.Peer, cmd string, _ ...string) bool {
	if !writes[cmd] {
		return false
	}
	if g.n.Add(1)%guardEvery == 1 {
		// Live as of the last collection: not the garbage not yet freed.
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		g.over.Store(s[0].Value.Uint64() > g.limit)
	}
	if g.over.Load() {
		c.WriteError(errOOM)
		return true
	}
	return false
}
