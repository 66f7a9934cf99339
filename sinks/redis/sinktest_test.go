package redis

import (
	"context"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestConformance runs the sink suite for every data type: each sink
// writes under a key prefix of its own, and its records are the keys
// under that prefix (the scan index aside).
func TestConformance(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	for _, dt := range []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet} {
		t.Run(string(dt), func(t *testing.T) {
			sinktest.Run(t, sinktest.Harness{
				Kinds:  []sources.Kind{sources.KV},
				Server: srv.Addr,
				Open: func(t *testing.T, addr string, o sinks.Options) sinktest.Target {
					if addr == "" {
						addr = srv.Addr
					}
					o.Shape.DataType = dt
					s := open(t, "redis://"+addr+"/0", o)
					return sinktest.Target{Sink: s, Count: func(t *testing.T) int {
						keys, err := a.Keys(context.Background(), globEscape(o.Shape.KeyPrefix)+"*").Result()
						if err != nil {
							t.Fatal(err)
						}
						n := 0
						for _, k := range keys {
							if k != o.Shape.KeyPrefix+"_indices" {
								n++
							}
						}
						return n
					}}
				},
			})
		})
	}
}
