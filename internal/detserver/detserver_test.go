package detserver

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The server keeps what the kv workload writes, and no pipeline, however
// deep, completes faster than its commands cost in the one queue: N
// commands take at least N × Service (a floor, never a ceiling, so a busy
// machine cannot fail it).
func TestServerQueueAndStore(t *testing.T) {
	s := Start(t, time.Millisecond, 0)
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "h", "f0", "a", "f1", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("GET k = %q, %v", v, err)
	}
	if m, err := c.HGetAll(ctx, "h").Result(); err != nil || len(m) != 2 || m["f1"] != "b" {
		t.Errorf("HGETALL h = %v, %v", m, err)
	}
	if err := c.Get(ctx, "absent").Err(); err != goredis.Nil {
		t.Errorf("GET absent: %v, want nil", err)
	}
	const n = 200
	p := c.Pipeline()
	for range n {
		p.Get(ctx, "k")
	}
	t0 := time.Now()
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < n*s.Service {
		t.Errorf("%d commands took %v, less than the %v they cost in the queue", n, d, n*s.Service)
	}
	if s.Capacity() != 1000 {
		t.Errorf("capacity %v, want 1000/s", s.Capacity())
	}
}
