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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/testserver"
)

func gen(t *testing.T, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	return genEnv(t, nil, args...)
}

// genEnv runs generate with the environment env and fails the test unless
// it exits 0.
func genEnv(t *testing.T, env map[string]string, args ...string) (stdout []byte, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), args, env, testSources(), &out, &errb); code != 0 {
		t.Fatalf("generate %v: exit %d\n%s", args, code, errb.String())
	}
	return out.Bytes(), errb.String()
}

// Every problem is reported at once and exits 2, each naming its
// variable as soakd run does, and nothing is written.
func TestBadSettingsExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{nil, []string{"--out-of-order", "lots"}, []string{"SOAKD_GEN_OUT_OF_ORDER: "}},
		{nil, []string{"--scale", "0"}, []string{"SOAKD_GEN_SCALE: 0 is out of range"}},
		{map[string]string{"SOAKD_GEN_SCALE": "0"}, nil, []string{"SOAKD_GEN_SCALE: 0 is out of range"}},
		{nil, []string{"--source", "weather"}, []string{`SOAKD_GEN_SOURCE: unknown source "weather" (known: devops, devops-full, iot, massive, seq)`}},
		{nil, []string{"--start", "2016-01-03T00:00:00Z"}, []string{"SOAKD_GEN_END: "}},
		{nil, []string{"--format", "parquet"}, []string{"SOAKD_GEN_FORMAT: "}},
		{nil, []string{"--precision", "h"}, []string{"SOAKD_GEN_PRECISION: "}},
		{nil, []string{"--workers", "-1"}, []string{"SOAKD_GEN_WORKERS: "}},
		// a run's bound: beyond it, memory ran out (--workers 5e6)
		{nil, []string{"--workers", "100001", "--scale", "1", "--end", "+10s"}, []string{"SOAKD_GEN_WORKERS: 100001 is out of range: want 0 (one per core) to 100000"}},
		{nil, []string{"--progress", "sometimes"}, []string{"SOAKD_GEN_PROGRESS: "}},
		{nil, []string{"--quiet=maybe"}, []string{"SOAKD_GEN_QUIET: "}},
		{nil, []string{"--shard", "3/2"}, []string{"SOAKD_GEN_SHARD: "}},
		{nil, []string{"--interval", "10s", "--offline", "0.1:1s"}, []string{"SOAKD_GEN_OFFLINE: "}},
		{nil, []string{"--precision", "s", "--interval", "500ms", "--end", "+2s"}, []string{"SOAKD_GEN_INTERVAL: 500ms is finer than the times format influx keeps at precision s (1s)"}},
		{nil, []string{"--precision", "ms", "--interval", "100us", "--end", "+2ms"}, []string{"SOAKD_GEN_INTERVAL: "}},
		{nil, []string{"--no-such-flag", "1"}, []string{"unknown flag --no-such-flag"}},
		{nil, []string{"--rate", "5"}, []string{"unknown flag --rate"}}, // a run's setting, not a data set's
		{nil, []string{"--source", "seq", "--scale", "5"}, []string{"unknown flag --scale", "SOAKD_GEN_ROWS: "}},
		{nil, []string{"--source", "iot", "--format", "csv"}, []string{"SOAKD_GEN_OUT: format csv writes one file per measurement"}},
		{nil, []string{"--source", "kv"}, []string{"SOAKD_GEN_SOURCE: kv makes key-value operations, not rows"}},
		{nil, []string{"--clock", "wall"}, []string{"SOAKD_GEN_CLOCK: "}},
		{nil, []string{"extra"}, []string{"unexpected argument"}},
		{nil, []string{"--scale"}, []string{"flag --scale needs a value"}},
		// all at once, each once
		{map[string]string{"SOAKD_GEN_MISSING": "most"}, []string{"--scale", "-1", "--format", "xml", "--shard", "x", "--seed", "y", "--bogus", "1"},
			[]string{"SOAKD_GEN_SCALE: ", "SOAKD_GEN_FORMAT: ", "SOAKD_GEN_SHARD: ", "SOAKD_GEN_SEED: ", "SOAKD_GEN_MISSING: ", "unknown flag --bogus"}},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, tc.env, testSources(), &out, &errb)
		if code != 2 {
			t.Errorf("%v %v: exit %d, want 2; stderr:\n%s", tc.env, tc.args, code, errb.String())
		}
		for _, want := range tc.want {
			if n := strings.Count(errb.String(), want); n != 1 {
				t.Errorf("%v %v: stderr names %q %d times, want once:\n%s", tc.env, tc.args, want, n, errb.String())
			}
		}
		if out.Len() != 0 {
			t.Errorf("%v %v: wrote %d bytes of data", tc.env, tc.args, out.Len())
		}
	}
}

// --clock wall alone is refused naming CLOCK only: START is the data
// file's default then, not the user's, and blaming it sent users to a
// setting they never set. A START the user gave is named too.
func TestClockWallBlamesOnlyClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		wantStart bool
	}{
		{[]string{"--clock", "wall"}, false},
		{[]string{"--clock", "wall", "--start", "2020-01-01T00:00:00Z"}, true},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, nil, testSources(), &out, &errb)
		if code != 2 || strings.Count(errb.String(), "SOAKD_GEN_CLOCK: ") != 1 ||
			strings.Contains(errb.String(), "SOAKD_GEN_START: ") != tc.wantStart {
			t.Errorf("%v: exit %d, want 2 naming CLOCK (and START: %v):\n%s", tc.args, code, tc.wantStart, errb.String())
		}
	}
}

// A setting is the same as a variable SOAKD_GEN_X and as a flag --x;
// flags win; variables of no setting are named in a warning.
func TestSettingsFromEnvAndFlags(t *testing.T) {
	t.Parallel()
	if config.Prefix(Workload) != prefix {
		t.Fatalf("prefix %s is not workload %s's, %s", prefix, Workload, config.Prefix(Workload))
	}
	byFlags, _ := gen(t, "--scale", "4", "--end", "+1m", "--format", "csv", "--quiet")
	byEnv, stderr := genEnv(t, map[string]string{
		"SOAKD_GEN_SCALE": "4", "SOAKD_GEN_END": "+1m", "SOAKD_GEN_FORMAT": "csv", "SOAKD_GEN_QUIET": "true",
	})
	if !bytes.Equal(byFlags, byEnv) || stderr != "" {
		t.Fatalf("SOAKD_GEN_* gave other bytes than the flags (%d vs %d), stderr %q", len(byEnv), len(byFlags), stderr)
	}
	if n := bytes.Count(byEnv, []byte("\n")); n != 1+4*6 || !bytes.HasPrefix(byEnv, []byte("time,hostname,")) {
		t.Fatalf("csv of 4 hosts over 1m: %d lines, header %q", n, byEnv[:min(40, len(byEnv))])
	}
	flagsWin, _ := genEnv(t, map[string]string{"SOAKD_GEN_SCALE": "9", "SOAKD_GEN_FORMAT": "pgcopy"},
		"--scale", "4", "--end", "+1m", "--format", "csv", "--quiet=true")
	if !bytes.Equal(flagsWin, byFlags) {
		t.Fatal("flags do not win over SOAKD_GEN_* variables")
	}
	_, stderr = genEnv(t, map[string]string{"SOAKD_GEN_RATE": "5", "SOAKD_IOT_RATE": "5", "SOAKD_ALLOW_UNKNOWN": "1"}, "--scale", "1", "--end", "+1m", "--quiet")
	if !strings.Contains(stderr, "SOAKD_GEN_RATE") || strings.Contains(stderr, "SOAKD_IOT_RATE") {
		t.Fatalf("want a warning naming SOAKD_GEN_RATE alone, got %q", stderr)
	}
}

// Without START and END, or with them empty, the data set is TSBS's day
// from 2016-01-01 (the iot sources' file defaults).
func TestFileDefaults(t *testing.T) {
	t.Parallel()
	def, _ := gen(t, "--scale", "1", "--quiet")
	empty, _ := gen(t, "--scale", "1", "--start", "", "--end", "", "--quiet")
	if !bytes.Equal(def, empty) {
		t.Fatal("empty START and END are not the defaults")
	}
	lines := strings.Split(strings.TrimSuffix(string(def), "\n"), "\n")
	if len(lines) != 8640 || !strings.HasSuffix(lines[0], " 1451606400000000000") || !strings.HasSuffix(lines[len(lines)-1], " 1451692790000000000") {
		t.Fatalf("%d lines from %q to %q; want 8640 from 2016-01-01T00:00:00Z to 23:59:50", len(lines), lines[0], lines[len(lines)-1])
	}
}

// The bytes of these data sets were written by soakd generate before it
// read its settings from the source list; they must not change for the
// same settings. Update a sum only for an intended change of the data.
func TestOutputUnchanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		sum  string
	}{
		{[]string{"--scale", "1"}, "c705b87fd0aeb03ab1ee2e2346ae713c3b7b68151f73ea0a3874585e9b445b72"},
		{[]string{"--source", "iot", "--scale", "2", "--start", "2015-12-31T23:00:00Z"}, "ac321da820e47aeb7451df3bc5128eeb3e194792d13b5bdee5eb1ba7587212d9"},
		{[]string{"--source", "devops", "--scale", "50", "--end", "2016-01-01T02:00:00Z"}, "75d7ee16c95dd8db7e4807d21f0ce9c93f1c49599e4aa652a2b4cc17c5a0cfb8"},
		{[]string{"--source", "devops-full", "--scale", "9", "--end", "+1h", "--out-of-order", "0.1:1m", "--offline", "0.1:5m", "--missing", "0.05"}, "8e7aa367e7153df8105d75a93ce449086eea6a9725256c2c26c4841f9421e58f"},
		{[]string{"--source", "massive", "--scale", "30000", "--columns", "5", "--end", "+20s", "--format", "pgcopy", "--offline", "0.2:10s"}, "86f059fb6b591967be4d6c5ef7a01fbf610745fddfd2bd774937ce738fea63c4"},
		{[]string{"--source", "massive", "--scale", "30", "--columns", "3", "--end", "+1h", "--format", "csv", "--column-type", "float"}, "2d68ff3c6c341db808f086cafb561bc6a199b4cf9bf025d7cf848e9c9ab99e0c"},
		{[]string{"--scale", "7", "--start", "2026-01-01T00:00:00Z", "--end", "+2h", "--interval", "1m", "--precision", "s", "--seed", "42", "--shard", "1/3"}, "03850834b19d5a3b49065fc402213cabc96fa9bb54d9881d4f7ac99d3943753c"},
	} {
		out, _ := gen(t, append(tc.args, "--quiet")...)
		if sum := fmt.Sprintf("%x", sha256.Sum256(out)); sum != tc.sum {
			t.Errorf("%v: sha256 %s, want %s", tc.args, sum, tc.sum)
		}
		// A file is written with writev straight from the workers'
		// pieces, not through a buffer: the same bytes, with one worker
		// (whose devices' ranges join into one) or several.
		for _, w := range []string{"1", "3"} {
			path := filepath.Join(t.TempDir(), "out")
			gen(t, append(tc.args, "--quiet", "--workers", w, "--out", path)...)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sum := fmt.Sprintf("%x", sha256.Sum256(b)); sum != tc.sum {
				t.Errorf("%v --workers %s --out FILE: sha256 %s, want %s", tc.args, w, sum, tc.sum)
			}
		}
	}
}

// Standard output as a pipe whose reader is slower than the generator:
// the pipe fills, so writev writes part of what it is given, or nothing
// (EAGAIN) and waits for room, and the rest is written after; the reader
// gets the same bytes as a file does.
func TestSlowPipeGetsTheSameBytes(t *testing.T) {
	t.Parallel()
	args := []string{"--source", "devops", "--scale", "50", "--end", "2016-01-01T02:00:00Z", "--quiet"}
	const want = "75d7ee16c95dd8db7e4807d21f0ce9c93f1c49599e4aa652a2b4cc17c5a0cfb8" // TestOutputUnchanged's
	for _, w := range []string{"1", "3"} {
		r, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		type read struct {
			sum string
			err error
		}
		done := make(chan read, 1)
		go func() {
			h := sha256.New()
			buf := make([]byte, 4096)
			var got read
			for i := 0; ; i++ {
				n, err := r.Read(buf)
				h.Write(buf[:n])
				if err == io.EOF {
					break
				} else if err != nil {
					got.err = err
					break
				}
				if i%16 == 0 {
					time.Sleep(time.Millisecond) // let the pipe fill
				}
			}
			got.sum = fmt.Sprintf("%x", h.Sum(nil))
			done <- got
		}()
		var errb bytes.Buffer
		code := Main(context.Background(), append(args, "--workers", w), nil, testSources(), pw, &errb)
		pw.Close()
		got := <-done
		r.Close()
		if code != 0 || got.err != nil {
			t.Fatalf("--workers %s: exit %d, read error %v\n%s", w, code, got.err, errb.String())
		}
		if got.sum != want {
			t.Errorf("--workers %s through a slow pipe: sha256 %s, want %s", w, got.sum, want)
		}
	}
}

// Files of one table each are written with writev too, after the header
// OpenOutputs buffered: each file starts with its header, and holds the
// same lines whatever the number of workers.
func TestCSVFilesHeaderFirst(t *testing.T) {
	t.Parallel()
	var first map[string][]byte
	for _, w := range []string{"1", "3"} {
		dir := t.TempDir()
		gen(t, "--source", "iot", "--scale", "20", "--end", "+2h", "--offline", "0.2:10m", "--format", "csv",
			"--out", filepath.Join(dir, "t.csv"), "--workers", w, "--quiet")
		files := map[string][]byte{}
		for _, m := range []string{"readings", "diagnostics"} {
			b, err := os.ReadFile(filepath.Join(dir, "t."+m+".csv"))
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := bytes.Cut(b, []byte("\n"))
			if !bytes.HasPrefix(head, []byte("time,name,")) || bytes.Count(b, []byte("time,")) != 1 {
				t.Fatalf("--workers %s: t.%s.csv starts %q, or holds its header more than once", w, m, head)
			}
			files[m] = b
		}
		if first == nil {
			first = files
			continue
		}
		for m, b := range files {
			if !bytes.Equal(b, first[m]) {
				t.Errorf("t.%s.csv differs between 1 and 3 workers", m)
			}
		}
	}
}

// A failed write ends generate with exit 1 and the error, naming the file.
func TestWriteErrorExits1(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	var errb bytes.Buffer
	code := Main(context.Background(), []string{"--scale", "100", "--end", "+1h", "--out", "/dev/full", "--quiet"}, nil, testSources(), io.Discard, &errb)
	if code != 1 || !strings.Contains(errb.String(), "cannot write /dev/full: write /dev/full: no space left on device") {
		t.Fatalf("exit %d, stderr %q; want 1 and the write error", code, errb.String())
	}
}

// A source generate has no code for (seq) is written from one stream,
// with its own settings as flags and variables.
func TestSourceFromTheList(t *testing.T) {
	t.Parallel()
	out, stderr := genEnv(t, map[string]string{"SOAKD_GEN_ROWS": "2500"}, "--source", "seq", "--devices", "3")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2500 || !strings.Contains(stderr, "generated 2500 rows, 2500 values") {
		t.Fatalf("%d lines, summary %q; want 2500 rows", len(lines), stderr)
	}
	for i, l := range lines { // round by round, devices ascending: n numbers the rows
		if want := fmt.Sprintf("seq,device=d%d n=%di %d", i%3, i, 1767225600000000000+int64(i/3)*1e9); l != want {
			t.Fatalf("line %d: %q, want %q", i, l, want)
		}
	}
	csv, _ := gen(t, "--source", "seq", "--rows", "4", "--devices", "2", "--interval", "1m", "--format", "csv", "--workers", "3", "--quiet")
	if want := "time,device,n\n2026-01-01T00:00:00Z,d0,0\n2026-01-01T00:00:00Z,d1,1\n2026-01-01T00:01:00Z,d0,2\n2026-01-01T00:01:00Z,d1,3\n"; string(csv) != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", csv, want)
	}
	var parts []string
	for i := range 2 {
		p, _ := gen(t, "--source", "seq", "--rows", "2500", "--devices", "3", "--shard", fmt.Sprintf("%d/2", i), "--quiet")
		parts = append(parts, strings.Split(strings.TrimSuffix(string(p), "\n"), "\n")...)
	}
	slices.Sort(parts)
	slices.Sort(lines)
	if !slices.Equal(parts, lines) {
		t.Fatalf("the 2 shards hold %d lines, the whole data set %d, or they differ", len(parts), len(lines))
	}
}

// --help lists every setting of the source named, as soakd config lists a
// run's, with its variable, flag and default, on standard output.
func TestHelpListsSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"--help"}, []string{"The settings with --source devops:", "SOAKD_GEN_SCALE  --scale  100", "--out-of-order", "--column-type", "--clock",
			"SOAKD_GEN_START  --start  2016-01-01T00:00:00Z", "--source  devops", "--seed", "--shard", "--format  influx", "--quiet", "--workers", "--progress", "--precision", "--out "},
			[]string{"--rows", "--rate", "--target", "--gen-"}},
		{[]string{"--source", "seq", "-h"}, []string{"The settings with --source seq:", "SOAKD_GEN_ROWS  --rows  0", "--devices", "--interval", "--format"}, []string{"SOAKD_GEN_SCALE  "}},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, map[string]string{"SOAKD_GEN_SEED": "77"}, testSources(), &out, &errb)
		if code != 0 || errb.Len() != 0 {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, errb.String())
		}
		text := regexp.MustCompile(` {2,}`).ReplaceAllString(out.String(), "  ")
		for _, w := range append(tc.want, "SOAKD_GEN_SEED  --seed  1  77") {
			if !strings.Contains(text, w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(text, w) {
				t.Errorf("%v: help has %q:\n%s", tc.args, w, out.String())
			}
		}
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
		// CHURN: a replaced device sends what it holds in the round its
		// successor starts, in the same slot of the canonical order
		{"--source", "devops", "--scale", "20", "--end", "+1h", "--churn", "25%/5m", "--out-of-order", "0.1:1m", "--offline", "0.1:5m"},
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
	if code := Main(context.Background(), args, nil, testSources(), &out, &errb); code != 0 {
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
		{[]string{"--source", "seq", "--rows", "1000", "--devices", "7"}, []string{"seq"}}, // one stream, not iot's rounds
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
		testserver.Unavailable(t, "no tsbs_load_influx binary (scripts/install-test-deps.sh builds it)")
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
	code := Main(ctx, []string{"--source", "devops", "--scale", "4000", "--quiet"}, nil, testSources(), w, &errb)
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

// The summary on stderr names every file written: csv of several
// tables is one file per table, not OUT.
func TestSummaryNamesTheFiles(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out.csv")
	_, stderr := genEnv(t, nil, "--source", "devops-full", "--format", "csv", "--scale", "1", "--end", "+1m", "--out", out, "--progress", "off")
	files, err := filepath.Glob(strings.TrimSuffix(out, ".csv") + ".*.csv")
	if err != nil || len(files) < 2 {
		t.Fatalf("files %v, %v", files, err)
	}
	for _, f := range files {
		if !strings.Contains(stderr, f) {
			t.Errorf("the summary does not name %s:\n%s", f, stderr)
		}
	}
	if strings.Contains(stderr, out+"\n") || strings.Contains(stderr, out+",") {
		t.Errorf("the summary names %s, which was not written:\n%s", out, stderr)
	}
}

// The bytes the summary gives are the bytes written, the CSV files'
// headers included (they were left out: 130 said, 144 written).
func TestSummaryBytesAreTheOutputs(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--source", "iot", "--scale", "5", "--end", "+10m", "--format", "csv"},
		{"--source", "devops", "--scale", "5", "--end", "+10m", "--format", "csv"},
		{"--source", "devops", "--scale", "5", "--end", "+10m", "--format", "influx"},
	} {
		dir := t.TempDir()
		_, stderr := gen(t, append(args, "--out", filepath.Join(dir, "out"))...)
		var said int64
		if i := strings.Index(stderr, " bytes in "); i < 0 {
			t.Fatalf("%v: no bytes in the summary %q", args, stderr)
		} else if _, err := fmt.Sscan(stderr[strings.LastIndex(stderr[:i], " ")+1:i], &said); err != nil {
			t.Fatalf("%v: summary %q: %v", args, stderr, err)
		}
		var written int64
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			written += fi.Size()
		}
		if said != written || written == 0 {
			t.Errorf("%v: the summary says %d bytes, the files hold %d", args, said, written)
		}
	}
}

// An OUT that is a directory is refused naming SOAKD_GEN_OUT, exit 2,
// with a file name in it to give instead, and nothing is written. Bug
// caught: csv and pgcopy of several measurements wrote hidden files
// DIR/.cpu, DIR/.diskio, ... and exited 0; one table failed at opening.
func TestOutDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ source, format, out string }{
		{"devops-full", "pgcopy", "/"}, {"devops", "csv", "/"}, {"devops", "pgcopy", ""}, {"devops", "influx", "/."},
	} {
		dir := t.TempDir()
		out := dir + tc.out
		var errb bytes.Buffer
		code := Main(context.Background(), []string{"--source", tc.source, "--format", tc.format, "--scale", "1", "--end", "+1m", "--out", out, "--quiet"},
			nil, testSources(), io.Discard, &errb)
		if code != 2 || !strings.Contains(errb.String(), "SOAKD_GEN_OUT: "+out+" is a directory: give a file name in it too, e.g. --out "+filepath.Join(dir, "data.")) {
			t.Errorf("%+v: exit %d, stderr %q; want 2 and OUT refused as a directory", tc, code, errb.String())
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("%+v: wrote %v", tc, ents)
		}
	}
}
