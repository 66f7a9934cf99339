package remotewrite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// Reset deletes the sink's own series (its metrics with its label=) on
// VictoriaMetrics, leaves another run's alone, and the same times can be
// written again after it, as the next point of a sweep writes them.
func TestReset(t *testing.T) {
	tg := victoriaTarget(t)
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
	write(t, s)
	if n := count(t, "reset"); n != kept {
		t.Errorf("the same times written again after Reset: %d samples stored, want %d as one write stores", n, kept)
	}
}

// Prometheus refuses samples at or before a deleted series' newest time,
// so a reset there would leave the next point failing almost whole
// (this test shows it does, so the refusal stays needed): Reset refuses
// Prometheus and deletes nothing.
func TestResetRefusedOnPrometheus(t *testing.T) {
	tg := prometheusTarget(t, 0)
	schemas := []*sources.Schema{cpuSchema("cpu")}
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	s := openSink(t, tg.write+"?label=run:p", sinks.Options{Schemas: schemas})
	write := func() error {
		b := sources.NewSeriesBatch(schemas)
		(&gen{devices: 5, start: start, step: time.Second}).fill(b, 100)
		_, err := s.Write(context.Background(), b)
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		tg.flush(t)
		return countSamples(t, tg.base, schemas, `run="p"`, "2h", start.Add(10*time.Minute))
	}
	before := count()
	err := s.Reset(context.Background())
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "SOAKD_SWEEP_RESET") {
		t.Errorf("Reset on Prometheus: %v, want a refusal naming SOAKD_SWEEP_RESET", err)
	}
	if n := count(); n != before {
		t.Errorf("the refused Reset deleted samples: %d, %d before", n, before)
	}
	// Why: delete the series through the admin API and write the same
	// times again.
	if err := s.deleteSeries(context.Background(), `{run="p"}`); err != nil {
		t.Fatal(err)
	}
	if err := write(); sinks.ClassOf(err) != sinks.OutOfOrder {
		t.Errorf("the same times after a delete: %v; if Prometheus now takes them, Reset may delete there too", err)
	}
}
