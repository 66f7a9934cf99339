package influx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// shardBytes sums the diskBytes of db's shards from /debug/vars, read
// through a client of the test's own.
func shardBytes(t *testing.T, srv *testserver.Server, db string) (own, all float64) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(srv.URL + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		t.Fatal(err)
	}
	for k, raw := range vars {
		if !strings.HasPrefix(k, "shard:") {
			continue
		}
		var st struct {
			Tags   map[string]string  `json:"tags"`
			Values map[string]float64 `json:"values"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		all += st.Values["diskBytes"]
		if st.Tags["database"] == db {
			own += st.Values["diskBytes"]
		}
	}
	return own, all
}

// TestWatchInfluxDB1 reads the figures of InfluxDB 1.8 through both
// APIs: memory and CPU time from /metrics and /debug/vars, and the disk
// size of the shards of the sink's own database only.
func TestWatchInfluxDB1(t *testing.T) {
	srv := testserver.Influx(t)
	// Another database's shards must not count.
	srv.InfluxExec(t, "", "CREATE DATABASE other")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	var lines strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&lines, "m,h=h%d v=%d %d\n", i%50, i, int64(i)*1e9)
	}
	resp, err := hc.Post(srv.URL+"/write?db=other", "text/plain", strings.NewReader(lines.String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	for _, tc := range []struct{ name, url, db string }{
		{"v1", "influx1://%s?db=watch1", "watch1"},
		{"v2", "influx://%s?bucket=watch2/autogen", "watch2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemas := []*sources.Schema{cpuSchema("cpu")}
			s := openSink(t, fmt.Sprintf(tc.url, srv.Addr), sinks.Options{Schemas: schemas, Workers: 1})
			ctx := context.Background()
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			g := &gen{devices: 20, start: time.Now().Add(-time.Hour).Truncate(time.Second), step: time.Second}
			b := sources.NewSeriesBatch(schemas)
			for range 10 {
				g.fill(b, 1000)
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			f := sinktest.TargetFigures(t, s)
			own, all := shardBytes(t, srv, tc.db)
			for _, kind := range []string{"heap_inuse", "sys", "rss"} {
				if f.Memory[kind] <= 0 {
					t.Errorf("memory %s = %v (%+v)", kind, f.Memory[kind], f)
				}
			}
			if !f.HasCPU || f.CPUSeconds <= 0 {
				t.Errorf("CPU: %v (%+v)", f.CPUSeconds, f)
			}
			if f.Storage["shard"] <= 0 || f.Storage["shard"] >= all {
				t.Errorf("shard = %.0f bytes; /debug/vars says %.0f for %s, %.0f for every database", f.Storage["shard"], own, tc.db, all)
			}
			if d := f.Storage["shard"] - own; d < -0.1*own || d > 0.1*own {
				t.Errorf("shard = %.0f bytes, /debug/vars read alone says %.0f", f.Storage["shard"], own)
			}
		})
	}
}

// fakeInflux2 serves what InfluxDB 2.x answers TargetFigures: /metrics
// with shard sizes by bucket id, and the buckets API.
func fakeInflux2(t *testing.T, lookups *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Token tok" {
			http.Error(w, `{"code":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprint(w, `# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.5e+07
go_memstats_sys_bytes 4e+07
process_resident_memory_bytes 3.2e+07
process_cpu_seconds_total 12.5
storage_shard_disk_size{bucket="0aa",engine="tsm1",id="1",path="/var/lib/influxdb2/engine/data/0aa/autogen/1",walPath="/w {x}\"y\""} 1000
storage_shard_disk_size{bucket="0aa",engine="tsm1",id="2",path="/p",walPath="/w"} 500
storage_shard_disk_size{bucket="0bb",engine="tsm1",id="3",path="/p",walPath="/w"} 7777
storage_shard_disk_size_other 1
`)
		case "/api/v2/buckets":
			lookups.Add(1)
			if r.URL.Query().Get("name") != "soak" || r.URL.Query().Get("org") != "o" {
				t.Errorf("bucket lookup %s", r.URL)
			}
			fmt.Fprint(w, `{"buckets":[{"id":"0aa","name":"soak"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWatchInfluxDB2(t *testing.T) {
	var lookups atomic.Int32
	srv := fakeInflux2(t, &lookups)
	addr := strings.TrimPrefix(srv.URL, "http://")
	s := openSink(t, "influx://"+addr+"?bucket=soak&org=o&token=tok", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	for range 2 {
		f := sinktest.TargetFigures(t, s)
		want := map[string]float64{"heap_inuse": 1.5e7, "sys": 4e7, "rss": 3.2e7}
		for k, v := range want {
			if f.Memory[k] != v {
				t.Errorf("memory %s = %v, want %v", k, f.Memory[k], v)
			}
		}
		if f.CPUSeconds != 12.5 || !f.HasCPU {
			t.Errorf("CPU %v", f.CPUSeconds)
		}
		if f.Storage["shard"] != 1500 {
			t.Errorf("shard = %v, want the 1500 bytes of bucket soak's shards", f.Storage["shard"])
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("the bucket's id was looked up %d times, want once", n)
	}

	// Without the token the server refuses every endpoint: all figures
	// are unavailable, and the target is up.
	s = openSink(t, "influx://"+addr+"?bucket=soak&org=o&token=bad", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	f := sinktest.TargetFigures(t, s)
	for _, fig := range []string{"memory", "cpu", "storage"} {
		if !strings.Contains(f.Unavailable[fig], "401") {
			t.Errorf("unavailable %s: %q, want the server's 401", fig, f.Unavailable[fig])
		}
	}
}

func TestWatchServerDown(t *testing.T) {
	srv := testserver.Influx(t)
	s := openSink(t, "influx1://"+srv.Addr+"?db=down", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	sinktest.TargetFiguresServerDown(t, s, srv.Proc.Stop)
}

// TestWatchInfluxDB1Auth: InfluxDB 1.8 with authentication on serves
// /metrics and /debug/vars to anyone, so the figures need no privilege:
// an admin, a user who may only write, and no credentials read them all.
func TestWatchInfluxDB1Auth(t *testing.T) {
	addr := startInfluxAuth(t)
	for _, tc := range []struct{ name, url string }{
		{"admin", "influx1://admin:s3cret@%s?db=shared"},
		{"writer", "influx1://writer:w-pass@%s?db=shared"},
		{"anonymous", "influx1://%s?db=shared&create=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openSink(t, fmt.Sprintf(tc.url, addr), sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
			f := sinktest.TargetFigures(t, s)
			if _, ok := f.Storage["shard"]; !ok || f.Memory["heap_inuse"] <= 0 || !f.HasCPU || len(f.Unavailable) > 0 {
				t.Errorf("figures: %+v", f)
			}
		})
	}
}

// TestWatchVictoriaMetrics: another product's /metrics gives memory and
// CPU time; soakd reads no storage figure of it.
func TestWatchVictoriaMetrics(t *testing.T) {
	addr := testserver.VictoriaMetrics(t).Addr
	s := openSink(t, "influx1://"+addr+"?product=victoriametrics", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	f := sinktest.TargetFigures(t, s)
	if f.Memory["heap_inuse"] <= 0 || !f.HasCPU {
		t.Errorf("memory %v, CPU %v (%t)", f.Memory, f.CPUSeconds, f.HasCPU)
	}
	if len(f.Storage) != 0 || !strings.Contains(f.Unavailable["storage"], "victoriametrics") {
		t.Errorf("storage %v, unavailable %q", f.Storage, f.Unavailable["storage"])
	}
}
