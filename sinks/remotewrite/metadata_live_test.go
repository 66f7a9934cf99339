package remotewrite

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// The metadata of 2.0 series reaches Prometheus 3.16: each metric's type
// (gauge, counter for a field that only grows) and help text. 3.16's
// receiver keeps it only with --enable-feature=metadata-wal-records, and
// then in its head and WAL alone: /api/v1/metadata and
// /api/v1/targets/metadata list what its scrapes saw, never what was
// written to it. So the WAL is read back after the server stops, with
// Prometheus' own reader; type-and-unit-labels also puts the type on the
// series as a __type__ label, which a query sees.
func TestMetadataPrometheus3(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, 0, testserver.PrometheusV3(),
		testserver.PrometheusFeatures("metadata-wal-records", "type-and-unit-labels"))
	cpu, mem := cpuSchema("cpu"), cpuSchema("mem")
	cpu.Fields[2].Counter = true
	schemas := []*sources.Schema{cpu, mem}
	s := openSink(t, "prom+http://"+srv.Addr+"/api/v1/write?protocol=2.0", sinks.Options{Schemas: schemas})
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	const devices = 4
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	g := &gen{devices: devices, start: start, step: time.Second}
	b := sources.NewSeriesBatch(schemas)
	for range 2 {
		g.fill(b, 40)
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	type meta struct{ typ, help string }
	want := map[string]meta{}
	for _, sc := range schemas {
		for _, f := range sc.Fields {
			typ := "gauge"
			if f.Counter {
				typ = "counter"
			}
			want[MetricName(sc.Measurement, f.Name)] = meta{typ, "soakd series source: field " + f.Name + " of " + sc.Measurement + ", one series per device"}
		}
	}
	at := start.Add(time.Minute)
	for name, m := range want {
		if n := promScalar(t, srv.URL, fmt.Sprintf("count(last_over_time(%s[2h]))", name), at); n != devices {
			t.Errorf("%s: %v series, want %d", name, n, devices)
		}
		if n := promScalar(t, srv.URL, fmt.Sprintf("count(last_over_time(%s{__type__=%q}[2h]))", name, m.typ), at); n != devices {
			t.Errorf("%s: %v series of type %s, want %d", name, n, m.typ, devices)
		}
	}

	srv.Proc.Stop()
	got := walMetadata(t, filepath.Join(srv.Proc.Dir, "data", "wal"))
	if len(got) != len(want)*devices {
		t.Errorf("the WAL holds metadata of %d series, want %d", len(got), len(want)*devices)
	}
	for series, m := range got {
		w, ok := want[series.name]
		if !ok || m != w {
			t.Errorf("series %d of %s: type %q help %q, sent %q %q", series.ref, series.name, m.typ, m.help, w.typ, w.help)
		}
	}
}

// walSeries is a series of a Prometheus WAL: its ref and metric name.
type walSeries struct {
	ref  uint64
	name string
}

// walMetadata reads a stopped Prometheus' WAL in dir and returns the last
// metadata it holds for each series (its type as the exposition format
// names it, and its help), by series.
func walMetadata(t *testing.T, dir string) map[walSeries]struct{ typ, help string } {
	t.Helper()
	r, err := wlog.NewSegmentsReader(dir)
	if err != nil {
		t.Fatalf("WAL %s: %v", dir, err)
	}
	defer r.Close()
	dec := record.NewDecoder(nil, slog.New(slog.DiscardHandler))
	names := map[uint64]string{}
	metas := map[uint64]struct{ typ, help string }{}
	rd := wlog.NewReader(r)
	for rd.Next() {
		rec := rd.Record()
		switch dec.Type(rec) {
		case record.Series:
			ss, err := dec.Series(rec, nil)
			if err != nil {
				t.Fatalf("WAL series record: %v", err)
			}
			for _, s := range ss {
				names[uint64(s.Ref)] = s.Labels.Get(model.MetricNameLabel)
			}
		case record.Metadata:
			ms, err := dec.Metadata(rec, nil)
			if err != nil {
				t.Fatalf("WAL metadata record: %v", err)
			}
			for _, m := range ms {
				metas[uint64(m.Ref)] = struct{ typ, help string }{string(record.ToMetricType(m.Type)), m.Help}
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("WAL %s: %v", dir, err)
	}
	out := map[walSeries]struct{ typ, help string }{}
	for ref, m := range metas {
		out[walSeries{ref, names[ref]}] = m
	}
	return out
}
