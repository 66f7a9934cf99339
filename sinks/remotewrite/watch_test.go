package remotewrite

import (
	"bytes"
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

// Each server's active series are the series soakd wrote, and no more:
// the test Prometheus servers scrape nothing, themselves included, and
// VictoriaMetrics does not scrape itself by default. VictoriaMetrics
// counts a series active once it has a sample stamped in the current
// hour, and takes up to some 10 s to (it adds them to the figure every
// 10 s): the rows are stamped now, and written
// again (later) until the figure settles, which also carries the test
// over an hour's turn.
func TestWatchActiveSeries(t *testing.T) {
	for _, mk := range []func(*testing.T) target{
		func(t *testing.T) target { return prometheusTarget(t, 0) },
		func(t *testing.T) target { return prometheus3Target(t, 0) },
		victoriaTarget,
	} {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			// cpuSchema's fields: usage_user, usage.system, procs; a
			// series per device and field.
			const devices, fields = 50, 3
			schemas := []*sources.Schema{cpuSchema("cpu")}
			s := openSink(t, tg.write, sinks.Options{Schemas: schemas})
			if f := sinktest.TargetFigures(t, s); f.Stats["active_series"] != 0 {
				t.Errorf("active series of an empty server: %v (unavailable: %q)", f.Stats["active_series"], f.Unavailable["active_series"])
			}
			b := sources.NewSeriesBatch(schemas)
			// One row per device a round, a second apart: every 7th
			// row's usage.system is null, so each device has all three
			// series from the second round on.
			g := &gen{devices: devices, start: time.Now(), step: time.Second}
			var got []float64
			for deadline := time.Now().Add(60 * time.Second); ; {
				g.fill(b, devices)
				if _, err := s.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				f := sinktest.TargetFigures(t, s)
				v, ok := f.Stats["active_series"]
				if !ok {
					t.Fatalf("no active series: %q", f.Unavailable["active_series"])
				}
				got = append(got, v)
				if v == devices*fields && len(got) >= 2 {
					t.Logf("active series over %d rounds: %v", len(got), got)
					return
				}
				if v > devices*fields || time.Now().After(deadline) {
					t.Fatalf("active series read over %d rounds: %v, want %d", len(got), got, devices*fields)
				}
				time.Sleep(time.Second)
			}
		})
	}
}

// The server's version, for reports, from its own /metrics: Prometheus'
// build info, VictoriaMetrics' vm_app_version; a /metrics without either
// is an error that says so.
func TestServerVersion(t *testing.T) {
	for _, tc := range []struct {
		mk   func(*testing.T) target
		want string
	}{
		{func(t *testing.T) target { return prometheusTarget(t, 0) }, "Prometheus 2."},
		// The test deps build VictoriaMetrics with go install, which
		// sets no version.
		{victoriaTarget, "VictoriaMetrics"},
	} {
		tg := tc.mk(t)
		t.Run(tg.name, func(t *testing.T) {
			s := openSink(t, tg.write, sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
			v, err := s.ServerVersion(context.Background())
			if err != nil || !strings.HasPrefix(v, tc.want) {
				t.Errorf("ServerVersion = %q, %v; want %s...", v, err, tc.want)
			}
		})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/vm":
			fmt.Fprint(w, "vm_app_version{version=\"victoria-metrics-20251201-tags-v1.151.0-0-gabc\", short_version=\"v1.151.0\"} 1\n")
			return
		case "/metrics":
		default:
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "go_build_info{path=\"x\",version=\"(devel)\"} 1\nthanos_build_info{version=\"0.36.1\"} 1\n")
	}))
	defer srv.Close()
	s := openSink(t, "prom+"+srv.URL+"/api/v1/write", sinks.Options{})
	if v, err := s.ServerVersion(context.Background()); v != "thanos 0.36.1" || err != nil {
		t.Errorf("ServerVersion = %q, %v; want thanos 0.36.1", v, err)
	}
	s = openSink(t, "prom+"+srv.URL+"/api/v1/write?metrics_path=/vm", sinks.Options{})
	if v, err := s.ServerVersion(context.Background()); v != "VictoriaMetrics v1.151.0" || err != nil {
		t.Errorf("ServerVersion = %q, %v; want VictoriaMetrics v1.151.0", v, err)
	}
	s = openSink(t, "prom+"+srv.URL+"/api/v1/write?metrics_path=/nothing", sinks.Options{})
	if v, err := s.ServerVersion(context.Background()); err == nil {
		t.Errorf("ServerVersion of a 404 = %q", v)
	}
	srv.CloseClientConnections()
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
	if f.Memory["rss"] != 1e6 || f.CPUSeconds != 2.5 || len(f.Storage) != 0 || !strings.Contains(f.Unavailable["storage"], "prometheus_tsdb") ||
		len(f.Stats) != 0 || !strings.Contains(f.Unavailable["active_series"], "prometheus_tsdb_head_series") {
		t.Errorf("figures %+v", f)
	}
	s = openSink(t, "prom+http://"+addr+"/api/v1/write", sinks.Options{Token: "tok"})
	f = sinktest.TargetFigures(t, s)
	for _, fig := range []string{"memory", "cpu", "storage", "active_series"} {
		if !strings.Contains(f.Unavailable[fig], "401") {
			t.Errorf("unavailable %s: %q, want the server's 401", fig, f.Unavailable[fig])
		}
	}
	srv.CloseClientConnections()
}

// VictoriaMetrics takes samples stamped outside its retention (here, a
// month ahead) with 204 and stores none of them: the figures' discarded
// count rises by exactly their number, and not for samples it stores.
// Prometheus refuses such samples (400), so it gives no such figure.
func TestWatchDiscarded(t *testing.T) {
	tg := victoriaTarget(t)
	schemas := []*sources.Schema{cpuSchema("ahead")} // three fields
	s := openSink(t, tg.write, sinks.Options{Schemas: schemas})
	before, ok := sinktest.TargetFigures(t, s).Stats[sinks.StatDiscarded]
	if !ok {
		t.Fatal("no discarded figure of VictoriaMetrics")
	}
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 10, start: time.Now().Add(30 * 24 * time.Hour), step: time.Second}).fill(b, 100)
	if _, err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("write of samples a month ahead: %v (VictoriaMetrics answers them as written)", err)
	}
	(&gen{devices: 10, start: time.Now().Add(-time.Minute), step: time.Second}).fill(b, 100)
	if _, err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	// Every 7th row's usage.system is null: no sample.
	want := float64(100*3 - (100+6)/7)
	var got float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = sinktest.TargetFigures(t, s).Stats[sinks.StatDiscarded] - before; got >= want {
			break
		}
	}
	if got != want {
		t.Errorf("discarded rose by %v, want the %v samples ahead", got, want)
	}
	f := sinktest.TargetFigures(t, s)
	if r := f.Stats[sinks.StatDiscarded+".big_timestamp"]; r != want {
		t.Errorf("discarded for big_timestamp: %v, want %v (by reason: %v)", r, want, f.Stats)
	}

	// Sent to the wrong path (VictoriaMetrics' JSON-lines import, which the
	// sink refuses as a target URL), a remote-write request is answered
	// 204 and not one line parses: discarded as invalid_vmimport.
	before = f.Stats[sinks.StatDiscarded]
	(&gen{devices: 10, start: time.Now().Add(-time.Minute), step: time.Second}).fill(b, 100)
	var enc Encoder
	body, _ := enc.AppendTable(nil, b.Tables[0])
	resp, err := http.Post(tg.base+"/api/v1/import", "application/x-protobuf", bytes.NewReader(Compress(nil, body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a remote-write request to the import path: HTTP %d, want 204", resp.StatusCode)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if f = sinktest.TargetFigures(t, s); f.Stats[sinks.StatDiscarded] > before {
			break
		}
	}
	if f.Stats[sinks.StatDiscarded] <= before || f.Stats[sinks.StatDiscarded+".invalid_vmimport"] <= 0 {
		t.Errorf("a request sent to the import path: discarded %v → %v, by reason %v; want a rise, as invalid_vmimport",
			before, f.Stats[sinks.StatDiscarded], f.Stats)
	}
}
