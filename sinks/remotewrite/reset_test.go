package remotewrite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// Reset deletes the sink's own series (its metrics with its label=) on
// Prometheus and VictoriaMetrics, and leaves another run's alone.
func TestReset(t *testing.T) {
	for _, mk := range []func(*testing.T) target{
		func(t *testing.T) target { return prometheusTarget(t, 0) },
		victoriaTarget,
	} {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			schemas := []*sources.Schema{cpuSchema("cpu"), cpuSchema("mem")}
			start := time.Now().Add(-time.Hour).Truncate(time.Second)
			write := func(t *testing.T, s *Sink) {
				t.Helper()
				b := sources.NewSeriesBatch(schemas)
				(&gen{devices: 5, start: start, step: time.Second}).fill(b, 100)
				if _, err := s.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			other := openSink(t, tg.write+"?label=run:kept", sinks.Options{Schemas: schemas})
			write(t, other)
			count := func(t *testing.T, run string) int {
				tg.flush(t)
				return countSamples(t, tg.base, schemas, `run="`+run+`"`, "2h", start.Add(10*time.Minute))
			}
			kept := count(t, "kept")
			s := openSink(t, tg.write+"?label=run:reset", sinks.Options{Schemas: schemas})
			sinktest.Reset(t, s, sinktest.ResetCase{
				Write: func(t *testing.T) { write(t, s) },
				Count: func(t *testing.T) int { return count(t, "reset") },
				Foreign: func(t *testing.T, when string) {
					if n := count(t, "kept"); n != kept {
						t.Errorf("%s: the other run's series hold %d samples, %d before", when, n, kept)
					}
				},
			})
		})
	}
}

// A Prometheus without its admin API refuses Reset: a configuration
// error that says what to turn on.
func TestResetRefused(t *testing.T) {
	srv := testserver.Prometheus(t, time.Hour)
	s := openSink(t, "prom+http://"+srv.Addr+"/api/v1/write", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	err := s.Reset(context.Background())
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "--web.enable-admin-api") {
		t.Errorf("Reset: %v", err)
	}
}
