package influx

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// vmExport returns every sample VictoriaMetrics holds for series matching
// match, after flushing its buffers.
func vmExport(t *testing.T, addr, match string) (samples map[string]int, labels []map[string]string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	if resp, err := hc.Get("http://" + addr + "/internal/force_flush"); err == nil {
		resp.Body.Close()
	}
	resp, err := hc.PostForm("http://"+addr+"/api/v1/export", url.Values{"match[]": {match}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	samples = map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Metric map[string]string `json:"metric"`
			Values []float64         `json:"values"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		samples[line.Metric["__name__"]] += len(line.Values)
		labels = append(labels, line.Metric)
	}
	return samples, labels
}

// The v1 path against a second real product: VictoriaMetrics' /write with
// ?product=victoriametrics (no database to create, db becomes a label).
// Every row arrives once per field; tags with spaces, commas and equals
// signs arrive intact.
func TestVictoriaMetrics(t *testing.T) {
	addr := testserver.VictoriaMetrics(t).Addr
	tg := testTagger{{"plain"}, {"with space"}, {"comma,here"}, {"equals=sign"}, {"a=b,c d"}}
	schemas := []*sources.Schema{{Measurement: "cpu", TagKeys: []string{"host"}, Tags: tg,
		Fields: []sources.Field{{Name: "usage", Kind: sources.Float, Decimals: 2}, {Name: "procs", Kind: sources.Int}}}}
	for _, gz := range []string{"false", "true"} {
		s := openSink(t, fmt.Sprintf("influx1://%s?product=victoriametrics&db=vm%s&gzip=%s&precision=ms", addr, gz, gz),
			sinks.Options{Schemas: schemas, Workers: 2})
		ctx := context.Background()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if err := s.Prepare(ctx); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		if s.cfg.Idempotent {
			t.Error("VictoriaMetrics keeps duplicate samples: retries must not be marked safe by default")
		}
		b := sources.NewSeriesBatch(schemas)
		g := &gen{devices: len(tg), start: time.Now().Add(-time.Hour).Truncate(time.Millisecond), step: time.Second}
		const batches, rows = 4, 250
		for range batches {
			g.fill(b, rows)
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		samples, labels := vmExport(t, addr, fmt.Sprintf(`{__name__=~"cpu_.*",db="vm%s"}`, gz))
		for _, name := range []string{"cpu_usage", "cpu_procs"} {
			if samples[name] != batches*rows {
				t.Errorf("gzip=%s: %d samples of %s, want %d", gz, samples[name], name, batches*rows)
			}
		}
		var hosts []string
		for _, l := range labels {
			if !slices.Contains(hosts, l["host"]) {
				hosts = append(hosts, l["host"])
			}
		}
		slices.Sort(hosts)
		var want []string
		for _, v := range tg {
			want = append(want, v[0])
		}
		slices.Sort(want)
		if !slices.Equal(hosts, want) {
			t.Errorf("host labels %q, want %q", hosts, want)
		}
	}
	// A rejected line comes back as a rejected write with VM's message.
	bad := []*sources.Schema{{Measurement: "bad", TagKeys: []string{"k"}, Tags: testTagger{{`x\,y`}},
		Fields: []sources.Field{{Name: "f", Kind: sources.Float}}}}
	s := openSink(t, fmt.Sprintf("influx1://%s?product=victoriametrics", addr), sinks.Options{Schemas: bad})
	b := sources.NewSeriesBatch(bad)
	(&gen{devices: 1, start: time.Now(), step: time.Second}).fill(b, 1)
	_, err := s.Write(context.Background(), b)
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "influx line") {
		t.Errorf("VictoriaMetrics reads \\\\ as an escaped backslash, so it rejects x\\,y: got %v", err)
	}
}

// VictoriaMetrics answers rows stamped outside its retention (here, a
// month ahead: the test server keeps 100 years back) 204 and does not
// store them: TargetFigures gives its count of such values (discarded),
// which rises by exactly the values of those rows and not by those of
// rows it stores. Bug caught: a store that held nothing of an
// acknowledged run (a START long ago, a simulated clock run ahead) and
// said so nowhere.
func TestVictoriaMetricsDiscarded(t *testing.T) {
	addr := testserver.VictoriaMetrics(t).Addr
	schemas := []*sources.Schema{cpuSchema("ahead")} // three fields
	s := openSink(t, fmt.Sprintf("influx1://%s?product=victoriametrics", addr), sinks.Options{Schemas: schemas})
	ctx := context.Background()
	discarded := func() float64 {
		t.Helper()
		f, err := s.TargetFigures(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := f.Stats[sinks.StatDiscarded]
		if !ok {
			t.Fatalf("no discarded figure: %v", f.Stats)
		}
		return v
	}
	before := discarded()
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 10, start: time.Now().Add(30 * 24 * time.Hour), step: time.Second}).fill(b, 100)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatalf("write of rows a month ahead: %v (VictoriaMetrics answers them as written)", err)
	}
	(&gen{devices: 10, start: time.Now().Add(-time.Minute), step: time.Second}).fill(b, 100)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	const want = 100 * 3
	var got float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = discarded() - before; got >= want {
			break
		}
	}
	if got != want {
		t.Errorf("discarded rose by %v, want the %d values of the rows ahead", got, want)
	}
	f, err := s.TargetFigures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Stats[sinks.StatDiscarded+".big_timestamp"]; r != want {
		t.Errorf("discarded for big_timestamp: %v, want %d (by reason: %v)", r, want, f.Stats)
	}
}

// Read back through InfluxQL from a server that takes InfluxDB's writes
// but does not answer InfluxQL as InfluxDB does (VictoriaMetrics, the
// URL without product=): the error says so and names product=. Bug
// caught: "2 statements got 1 results".
func TestReadBackFromAnotherProductSaysSo(t *testing.T) {
	addr := testserver.VictoriaMetrics(t).Addr
	schemas := []*sources.Schema{cpuSchema("cpu"), cpuSchema("mem")}
	s := openSink(t, fmt.Sprintf("influx1://%s?db=x", addr), sinks.Options{Schemas: schemas})
	qs := []sinks.SeriesQuery{{Schema: schemas[0], Device: 0, From: 0, To: time.Now().UnixNano()}, {Schema: schemas[1], Device: 0, From: 0, To: time.Now().UnixNano()}}
	out := []*sources.Table{sources.NewTable(schemas[0]), sources.NewTable(schemas[1])}
	err := s.ReadSeries(context.Background(), qs, out)
	if err == nil || !strings.Contains(err.Error(), "does not answer InfluxQL as InfluxDB does") || !strings.Contains(err.Error(), "product=") {
		t.Fatalf("ReadSeries from VictoriaMetrics as InfluxDB: %v, want an error saying the server does not answer InfluxQL, naming product=", err)
	}
}
