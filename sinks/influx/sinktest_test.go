package influx

import (
	"context"
	"fmt"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestConformance runs the sink suite through both APIs of InfluxDB 1.8,
// each sink on a database of its own, counting the points of every
// measurement.
func TestConformance(t *testing.T) {
	srv := testserver.Influx(t)
	for _, api := range []struct{ name, url string }{
		{"v1", "influx1://%s?db=%s"},
		{"v2", "influx://%s?bucket=%s"},
	} {
		t.Run(api.name, func(t *testing.T) {
			n := 0
			sinktest.Run(t, sinktest.Harness{
				Kinds:  []sources.Kind{sources.Series},
				Server: srv.Addr,
				Open: func(t *testing.T, addr string, o sinks.Options) sinktest.Target {
					n++
					db := fmt.Sprintf("sinktest_%s_%d", api.name, n)
					if addr == "" {
						addr = srv.Addr
					}
					s, err := Open(context.Background(), mustParse(t, fmt.Sprintf(api.url, addr, db)), o)
					if err != nil {
						t.Fatal(err)
					}
					return sinktest.Target{Sink: s, Count: func(t *testing.T) int {
						points := 0
						for _, sc := range o.Schemas {
							for _, ser := range influxQuery(t, srv, db, "SELECT * FROM "+quoteIdent(sc.Measurement)) {
								points += len(ser.Values)
							}
						}
						return points
					}}
				},
			})
		})
	}
}
