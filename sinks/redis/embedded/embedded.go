package embedded

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/alicebob/miniredis/v2"

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
	srv  *miniredis.Miniredis
	stop sync.Once
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
	at := *u
	at.Host = srv.Addr()
	cfg, err := redis.ParseURL(&at)
	if err == nil {
		var s *redis.Sink
		if s, err = redis.New(cfg, o, sinks.RedactURL(u)); err == nil {
			return &Sink{Sink: s, srv: srv}, nil
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
