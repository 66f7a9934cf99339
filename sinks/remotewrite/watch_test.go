package remotewrite

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// The figures of Prometheus 2.42 and VictoriaMetrics from their own
// /metrics: memory, CPU time, and the storage kinds of each.
func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		mk          func(*testing.T) target
		storage     []string
		unavailable int
	}{
		// Prometheus 2.42 exports the size of its blocks, not its WAL's.
		{func(t *testing.T) target { return prometheusTarget(t, 0) }, []string{"blocks"}, 1},
		{victoriaTarget, []string{"data", "index"}, 0},
	} {
		tg := tc.mk(t)
		t.Run(tg.name, func(t *testing.T) {
			schemas := []*sources.Schema{cpuSchema("cpu")}
			s := openSink(t, tg.write, sinks.Options{Schemas: schemas})
			b := sources.NewSeriesBatch(schemas)
			(&gen{devices: 50, start: time.Now().Add(-time.Hour), step: time.Second}).fill(b, 2000)
			if _, err := s.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			f := sinktest.TargetFigures(t, s)
			if f.Memory["rss"] <= 0 || f.Memory["heap_inuse"] <= 0 || !f.HasCPU || f.CPUSeconds <= 0 {
				t.Errorf("memory %v, CPU %v (%t)", f.Memory, f.CPUSeconds, f.HasCPU)
			}
			for _, k := range tc.storage {
				if _, ok := f.Storage[k]; !ok {
					t.Errorf("storage %v lacks %s", f.Storage, k)
				}
			}
			if len(f.Storage) != len(tc.storage) || len(f.Unavailable) != tc.unavailable {
				t.Errorf("storage %v, unavailable %v", f.Storage, f.Unavailable)
			}
		})
	}
}

func TestWatchServerDown(t *testing.T) {
	tg := prometheusTarget(t, 0)
	s := openSink(t, tg.write, sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	sinktest.TargetFiguresServerDown(t, s, tg.stopped)
}

// A server that keeps /metrics to itself (401) leaves every figure
// unavailable, with the status, and the target up; one whose /metrics
// has no TSDB sizes leaves the storage unavailable. The sink's
// credentials and headers go along.
func TestWatchRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("X-Scope-Orgid") != "t1" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "# HELP x\nprocess_resident_memory_bytes 1e6\nprocess_cpu_seconds_total 2.5\nother{a=\"b\"} 3\n")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	s := openSink(t, "prom+http://"+addr+"/api/v1/write?header=X-Scope-OrgID:t1", sinks.Options{Token: "tok"})
	f := sinktest.TargetFigures(t, s)
	if f.Memory["rss"] != 1e6 || f.CPUSeconds != 2.5 || len(f.Storage) != 0 || !strings.Contains(f.Unavailable["storage"], "prometheus_tsdb") {
		t.Errorf("figures %+v", f)
	}
	s = openSink(t, "prom+http://"+addr+"/api/v1/write", sinks.Options{Token: "tok"})
	f = sinktest.TargetFigures(t, s)
	for _, fig := range []string{"memory", "cpu", "storage"} {
		if !strings.Contains(f.Unavailable[fig], "401") {
			t.Errorf("unavailable %s: %q, want the server's 401", fig, f.Unavailable[fig])
		}
	}
	srv.CloseClientConnections()
}
