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
