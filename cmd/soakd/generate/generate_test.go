package generate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

func gen(t *testing.T, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("generate %v: exit %d\n%s", args, code, errb.String())
	}
	return out.Bytes(), errb.String()
}

func TestBadFlagsExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out-of-order", "lots"}, "out-of-order"},
		{[]string{"--scale", "0"}, "--scale"},
		{[]string{"--source", "weather"}, "--source"},
		{[]string{"--end", ""}, "--end"},
		{[]string{"--format", "parquet"}, "--format"},
		{[]string{"--shard", "3/2"}, "--shard"},
		{[]string{"--interval", "10s", "--offline", "0.1:1s"}, "--offline"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--source", "iot", "--format", "csv"}, "--out"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tc.args, code, errb.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote %d bytes of data", tc.args, out.Len())
		}
	}
	var errb bytes.Buffer
	if code := Main(context.Background(), []string{"-h"}, io.Discard, &errb); code != 0 || !strings.Contains(errb.String(), "--out-of-order") && !strings.Contains(errb.String(), "-out-of-order") {
		t.Errorf("-h: exit %d\n%s", code, errb.String())
	}
}

func TestDeterministicAcrossRunsAndWorkers(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--source", "devops", "--scale", "50", "--end", "2016-01-01T02:00:00Z"},
		{"--source", "devops-full", "--scale", "9", "--end", "2016-01-01T01:00:00Z", "--out-of-order", "0.1:1m", "--offline", "0.1:5m", "--missing", "0.05"},
		{"--source", "iot", "--scale", "30", "--end", "+1h", "--format", "csv", "--out", "-"},
		// a round larger than a chunk: chunks of device ranges
		{"--source", "massive", "--scale", "30000", "--columns", "5", "--end", "+20s", "--format", "pgcopy", "--offline", "0.2:10s"},
	} {
		if args[len(args)-1] == "-" { // csv of iot needs --out: use the devops-like single table instead
			args = []string{"--source", "massive", "--scale", "30", "--columns", "3", "--end", "+1h", "--format", "csv"}
		}
		var sums []string
		for _, w := range []string{"1", "2", "5", "2"} {
			out, _ := gen(t, append([]string{"--workers", w, "--quiet"}, args...)...)
			sums = append(sums, fmt.Sprintf("%x", sha256.Sum256(out)))
		}
		for _, s := range sums[1:] {
			if s != sums[0] {
				t.Fatalf("%v: outputs differ between runs or worker counts: %v", args, sums)
			}
		}
	}
}

// lineCounter counts lines and keeps the first one.
type lineCounter struct {
	lines int
	first []byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	if c.lines == 0 && len(c.first) < 4096 {
		c.first = append(c.first, p[:min(len(p), 4096)]...)
	}
	c.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

func TestRowCountsAndSummary(t *testing.T) {
	t.Parallel()
	var out lineCounter
	var errb bytes.Buffer
	args := []string{"--source", "devops", "--scale", "100", "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-02T00:00:00Z", "--interval", "10s"}
	if code := Main(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.lines != 864000 {
		t.Fatalf("%d lines, want 864000", out.lines)
	}
	if !strings.Contains(errb.String(), "generated 864000 rows, 8640000 values") {
		t.Fatalf("summary %q", errb.String())
	}
	first := string(out.first[:bytes.IndexByte(out.first, '\n')])
	if !strings.HasPrefix(first, "cpu,hostname=host_0,") || !strings.HasSuffix(first, " 1767225600000000000") {
		t.Fatalf("first line %q", first)
	}
}

func TestCSVFilePerMeasurementAndProgress(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "trucks.csv")
	stdout, stderr := gen(t, "--source", "iot", "--scale", "10", "--end", "+1h", "--format", "csv", "--out", out, "--progress", "on")
	if len(stdout) != 0 {
		t.Fatalf("%d bytes on stdout with --out", len(stdout))
	}
	if !strings.Contains(stderr, "generating iot") {
		t.Fatalf("no progress bar with --progress on: %q", stderr)
	}
	for _, m := range []string{"readings", "diagnostics"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(out), "trucks."+m+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n != 1+10*360 {
			t.Fatalf("%s: %d lines, want header + 3600", m, n)
		}
		if !bytes.HasPrefix(b, []byte("time,name,fleet,")) {
			t.Fatalf("%s: header %q", m, b[:40])
		}
	}
}

// TestInfluxLoads loads generated files into a real InfluxDB 1.8 and
// checks that it stored every value.
func TestInfluxLoads(t *testing.T) {
	srv := testserver.Influx(t)
	query := func(q string) [][]any {
		t.Helper()
		resp, err := http.PostForm(srv.URL+"/query", url.Values{"q": {q}, "db": {"soakd"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Error   string
			Results []struct {
				Error  string
				Series []struct {
					Columns []string
					Values  [][]any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if len(r.Results) == 0 || r.Results[0].Error != "" {
			t.Fatalf("%s: %+v", q, r)
		}
		if len(r.Results[0].Series) == 0 {
			return nil
		}
		return r.Results[0].Series[0].Values
	}
	query("CREATE DATABASE soakd")
	for _, tc := range []struct {
		args   []string
		tables []string
	}{
		{[]string{"--source", "devops", "--scale", "20", "--end", "+1h"}, []string{"cpu"}},
		{[]string{"--source", "devops-full", "--scale", "3", "--end", "+30m", "--start", "2016-02-01T00:00:00Z"}, []string{"cpu", "diskio", "disk", "kernel", "mem", "net", "nginx", "postgresl", "redis"}},
		{[]string{"--source", "iot", "--scale", "20", "--end", "+1h", "--offline", "0.1:5m", "--start", "2016-03-01T00:00:00Z"}, []string{"readings", "diagnostics"}},
	} {
		out, stderr := gen(t, tc.args...)
		resp, err := http.Post(srv.URL+"/write?db=soakd", "text/plain", bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%v: InfluxDB answered %s: %s", tc.args, resp.Status, body)
		}
		var values float64
		for _, m := range tc.tables {
			for _, row := range query(`SELECT count(*) FROM "` + m + `" WHERE time >= 0`) {
				for _, v := range row[1:] {
					if f, ok := v.(float64); ok {
						values += f
					}
				}
			}
		}
		var rows, want int64
		if _, err := fmt.Sscanf(stderr, "generated %d rows, %d values", &rows, &want); err != nil {
			t.Fatalf("summary %q: %v", stderr, err)
		}
		if int64(values) != want {
			t.Fatalf("%v: InfluxDB holds %.0f values, generated %d", tc.args, values, want)
		}
		query("DROP SERIES FROM /.*/")
	}
}

// TestTSBSLoaderAcceptsOutput feeds a generated file to tsbs_load_influx.
func TestTSBSLoaderAcceptsOutput(t *testing.T) {
	loader := testserver.FindBinary("tsbs_load_influx", testserver.GoBinDirs()...)
	if loader == "" {
		testserver.Unavailable(t, "no tsbs_load_influx binary (shared/peers/install.sh tsbs)")
	}
	srv := testserver.Influx(t)
	out, _ := gen(t, "--source", "devops", "--scale", "10", "--end", "+1h")
	path := filepath.Join(t.TempDir(), "cpu.influx")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(loader, "--urls="+srv.URL, "--db-name=tsbs", "--workers=2", "--batch-size=1000", "--file="+path)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tsbs_load_influx: %v\n%s", err, log)
	}
	if !strings.Contains(string(log), "loaded 3600 rows") {
		t.Fatalf("tsbs_load_influx did not load 3600 rows:\n%s", log)
	}
}

func TestCancelStopsCleanly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var errb bytes.Buffer
	w := &cancelAfter{n: 1 << 20, cancel: cancel}
	code := Main(ctx, []string{"--source", "devops", "--scale", "4000", "--quiet"}, w, &errb)
	if code != 1 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want 1 and interrupted", code, errb.String())
	}
}

// cancelAfter cancels once n bytes were written.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.n -= len(p)
	if c.n <= 0 {
		c.cancel()
	}
	return len(p), nil
}

func TestShardFilesMakeTheWhole(t *testing.T) {
	t.Parallel()
	args := []string{"--source", "devops-full", "--scale", "7", "--end", "+30m", "--offline", "0.2:1m", "--out-of-order", "0.1:30s", "--quiet"}
	lines := func(b []byte) []string {
		l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(l)
		return l
	}
	whole, _ := gen(t, args...)
	var parts []string
	for i := 0; i < 3; i++ {
		out, _ := gen(t, append(args, "--shard", fmt.Sprintf("%d/3", i))...)
		parts = append(parts, lines(out)...)
	}
	slices.Sort(parts)
	if w := lines(whole); !slices.Equal(w, parts) {
		t.Fatalf("the 3 shards hold %d lines, the whole data set %d, or they differ", len(parts), len(w))
	}
}
