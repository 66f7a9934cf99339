package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func source(t testing.TB, name string, scale int, span string) sources.Source {
	t.Helper()
	c := iot.DefaultConfig()
	c.Scale = scale
	c.Columns = 4
	if err := c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if err := c.End.UnmarshalText([]byte("+" + span)); err != nil {
		t.Fatal(err)
	}
	src, err := iot.New(name, c, 1, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// run writes every row of src through a sink opened on raw with workers
// concurrent writers and returns the bytes Write reported.
func run(t *testing.T, src sources.Source, raw string, workers int) int64 {
	t.Helper()
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), u, sinks.Options{Kind: sources.Series, Schemas: src.Schemas(), Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		st, err := src.Stream(w, workers)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := sources.NewSeriesBatch(src.Schemas())
			for {
				b.Reset()
				ferr := st.Fill(b, 500, 0)
				n, err := s.Write(context.Background(), b)
				mu.Lock()
				total += int64(n)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if errors.Is(ferr, sources.ErrDone) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	return total
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestInfluxFile(t *testing.T) {
	t.Parallel()
	src := source(t, "devops", 10, "1h")
	path := filepath.Join(t.TempDir(), "cpu.influx")
	n := run(t, src, "file://"+path, 3)
	ls := lines(t, path)
	if len(ls) != 3600 {
		t.Fatalf("%d lines, want 3600", len(ls))
	}
	st, _ := os.Stat(path)
	if st.Size() != n {
		t.Fatalf("file has %d bytes, Write reported %d", st.Size(), n)
	}
	if !strings.HasPrefix(ls[0], "cpu,hostname=host_") || !strings.Contains(ls[0], " usage_user=") {
		t.Fatalf("unexpected line %q", ls[0])
	}
}

func TestCSVOneFilePerMeasurement(t *testing.T) {
	t.Parallel()
	src := source(t, "devops-full", 4, "10m")
	path := filepath.Join(t.TempDir(), "out.csv")
	run(t, src, "file://"+path+"?format=csv", 2)
	for _, s := range src.Schemas() {
		ls := lines(t, TableFile(path, s.Measurement))
		if len(ls) != 1+4*60 {
			t.Fatalf("%s: %d lines, want header + 240", s.Measurement, len(ls))
		}
		if want := string(CSV.Header(s)); ls[0]+"\n" != want {
			t.Fatalf("%s header %q, want %q", s.Measurement, ls[0], want)
		}
		cols := 1 + len(s.TagKeys) + len(s.Fields)
		for _, l := range ls[1:] {
			if got := strings.Count(l, ",") + 1; got != cols {
				t.Fatalf("%s row %q has %d columns, want %d", s.Measurement, l, got, cols)
			}
		}
	}
}

func TestURLs(t *testing.T) {
	t.Parallel()
	for raw, wantErr := range map[string]string{
		"file:///tmp/x":                     "",
		"-":                                 "",
		"file:///tmp/x?format=csv&append=1": "",
		"file:///tmp/x?format=xml":          "format",
		"file:///tmp/x?precision=h":         "precision",
		"file:///tmp/x?gzip=1":              "unknown parameter",
		"file:///tmp/x?append=maybe":        "append",
		"file://":                           "no path",
		// A directory: a format of one file per measurement wrote
		// hidden files in it (DIR/.cpu, ...).
		"file:///tmp/?format=csv": "/tmp/ is a directory: name a file in it, e.g. file:///tmp/data.csv",
		"file:///tmp":             "/tmp is a directory",
		"file:///tmp/x/..":        "is a directory",
	} {
		u, err := sinks.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(u, sources.Series)
		if (err == nil) != (wantErr == "") || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("%s: %v, want error containing %q", raw, err, wantErr)
		}
	}
	u, _ := sinks.Parse("-")
	if Check(u, sources.KV) == nil {
		t.Error("KV workloads accepted")
	}
	src := source(t, "iot", 2, "1m")
	if _, err := Open(context.Background(), mustURL(t, "-?format=csv"), sinks.Options{Kind: sources.Series, Schemas: src.Schemas()}); err == nil {
		t.Error("csv of two measurements on standard output accepted")
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	if strings.HasPrefix(raw, "-?") {
		raw = "file://-" + raw[1:]
	}
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestStdoutAndAppend(t *testing.T) {
	var buf bytes.Buffer
	old := Stdout
	Stdout = &buf
	defer func() { Stdout = old }()
	run(t, source(t, "massive", 3, "1m"), "-", 1)
	if got := strings.Count(buf.String(), "\n"); got != 18 {
		t.Fatalf("%d lines on stdout, want 18", got)
	}
	path := filepath.Join(t.TempDir(), "m.csv")
	run(t, source(t, "massive", 3, "1m"), "file://"+path+"?format=csv", 1)
	run(t, source(t, "massive", 3, "1m"), "file://"+path+"?format=csv&append=true", 1)
	if ls := lines(t, path); len(ls) != 1+36 {
		t.Fatalf("appended CSV has %d lines, want one header and 36 rows", len(ls))
	}
}

func TestEscaping(t *testing.T) {
	t.Parallel()
	tags := tagList{"a,b\"c", "", "t\tab\\"}
	s := &sources.Schema{Measurement: "m", TagKeys: []string{"x", "y", "z"}, Tags: tags,
		Fields: []sources.Field{{Name: "f", Kind: sources.Float, Decimals: 1}, {Name: "i", Kind: sources.Int}}}
	tb := sources.NewTable(s)
	tb.Device = append(tb.Device, 0)
	tb.Time = append(tb.Time, 1_767_225_600_500_000_000)
	tb.Floats[0] = append(tb.Floats[0], 2.5)
	tb.Ints[1] = append(tb.Ints[1], 0)
	tb.SetNull(1, 0)
	csv, _ := NewEncoder(CSV, 0).AppendRow(nil, tb, 0)
	if want := "2026-01-01T00:00:00.5Z,\"a,b\"\"c\",,t\tab\\,2.5,\n"; string(csv) != want {
		t.Errorf("csv %q, want %q", csv, want)
	}
	cp, _ := NewEncoder(PGCopy, 0).AppendRow(nil, tb, 0)
	if want := "2026-01-01T00:00:00.5Z\ta,b\"c\t\\N\tt\\tab\\\\\t2.5\t\\N\n"; string(cp) != want {
		t.Errorf("pgcopy %q, want %q", cp, want)
	}
}

type tagList []string

func (l tagList) AppendTag(dst []byte, _ uint32, tag int) []byte { return append(dst, l[tag]...) }

// TestPGCopyLoadsIntoPostgres checks that COPY ... FROM STDIN accepts the
// pgcopy files of every measurement, nulls and empty tags included.
func TestPGCopyLoadsIntoPostgres(t *testing.T) {
	srv := testserver.Postgres(t)
	psql := filepath.Join(testserver.PostgresBinDir(), "psql")
	c := iot.DefaultConfig()
	c.Scale = 50
	_ = c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z"))
	_ = c.End.UnmarshalText([]byte("+10m"))
	_ = c.Missing.UnmarshalText([]byte("0.2"))
	src, err := iot.New("iot", c, 1, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trucks.pgcopy")
	run(t, src, "file://"+path+"?format=pgcopy", 2)
	sql := func(stdin string, args ...string) string {
		cmd := exec.Command(psql, append([]string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
			"-p", fmt.Sprint(srv.Port), "-U", "postgres"}, args...)...)
		if stdin != "" {
			f, err := os.Open(stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = bufio.NewReader(f)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, s := range src.Schemas() {
		ddl := "CREATE TABLE " + s.Measurement + " (time timestamptz"
		for _, k := range s.TagKeys {
			ddl += ", " + k + " text"
		}
		for _, f := range s.Fields {
			typ := "double precision"
			if f.Kind == sources.Int {
				typ = "bigint"
			}
			ddl += ", " + f.Name + " " + typ
		}
		sql("", "-c", ddl+")")
		sql(TableFile(path, s.Measurement), "-c", "COPY "+s.Measurement+" FROM STDIN")
		if got := sql("", "-c", "SELECT count(*) FROM "+s.Measurement); got != "3000" {
			t.Fatalf("%s: %s rows in PostgreSQL, want 3000", s.Measurement, got)
		}
	}
	if nulls := sql("", "-c", "SELECT count(*) FROM readings WHERE latitude IS NULL"); nulls == "0" {
		t.Fatal("no NULL latitude loaded although MISSING=0.2")
	}
}

// BenchmarkEncoders measures CSV and COPY encoding; b.N counts rows.
func BenchmarkEncoders(b *testing.B) {
	src := source(b, "devops", 4000, "24h")
	st, _ := src.Stream(0, 1)
	batch := sources.NewSeriesBatch(src.Schemas())
	_ = st.Fill(batch, 5000, 0)
	for _, f := range []Format{Influx, CSV, PGCopy} {
		b.Run(f.String(), func(b *testing.B) {
			enc := NewEncoder(f, 0)
			tb := batch.Tables[0]
			var buf []byte
			for i := 0; i < tb.Len(); i++ { // warm the tag cache and size buf
				buf, _ = enc.AppendRow(buf, tb, i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += tb.Len() {
				buf = buf[:0]
				for i := 0; i < tb.Len(); i++ {
					buf, _ = enc.AppendRow(buf, tb, i)
				}
			}
		})
	}
}
