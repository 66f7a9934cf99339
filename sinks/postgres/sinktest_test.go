package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestConformance runs the sink suite for every insert method, each sink
// on a database of its own, counting the rows of its tables.
func TestConformance(t *testing.T) {
	srv := testserver.Postgres(t)
	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run(method, func(t *testing.T) {
			n := 0
			sinktest.Run(t, sinktest.Harness{
				Kinds:  []sources.Kind{sources.Series},
				Server: srv.Addr,
				Open: func(t *testing.T, addr string, o sinks.Options) sinktest.Target {
					n++
					db := newDB(t, srv, fmt.Sprintf("sinktest_%s_%d", method, n))
					raw := withParams(db, "insert", method)
					if addr != "" {
						raw = strings.Replace(raw, "@"+srv.Addr+"/", "@"+addr+"/", 1)
					}
					s, err := Open(context.Background(), mustURL(t, raw), o)
					if err != nil {
						t.Fatal(err)
					}
					return sinktest.Target{Sink: s, Count: func(t *testing.T) int {
						c := connect(t, db)
						rows := 0
						for _, sc := range o.Schemas {
							rows += int(count(t, c, sc.Measurement))
						}
						return rows
					}}
				},
			})
		})
	}
}
