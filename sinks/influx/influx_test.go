package influx

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Both APIs against a real InfluxDB 1.8: the database is created by
// Prepare, SELECT count(*) per measurement equals the rows written, and
// the bytes reported are the bytes sent.
func TestWriteCounts(t *testing.T) {
	srv := testserver.Influx(t)
	for _, tc := range []struct {
		name, url string
	}{
		{"v1", "influx1://%s?db=v1plain"},
		{"v1 gzip ms rp", "influx1://%s?db=v1gzip&rp=autogen&gzip=true&precision=ms"},
		{"v1 api param user", "influx://reader:pw@%s?api=v1&db=v1api&precision=s"},
		{"v2 client", "influx://%s?bucket=v2plain&org=ignored"},
		{"v2 client gzip rp token", "influx://%s?bucket=v2gzip/autogen&token=admin:pw&gzip=true&precision=us"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := fmt.Sprintf(tc.url, srv.Addr)
			schemas := []*sources.Schema{cpuSchema("cpu"), cpuSchema("mem")}
			s := openSink(t, raw, sinks.Options{Schemas: schemas, Workers: 2, BatchSize: 500})
			ctx := context.Background()
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			if err := s.Prepare(ctx); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if err := s.Prepare(ctx); err != nil {
				t.Fatalf("Prepare is not idempotent: %v", err)
			}
			db := s.cfg.DB
			if s.cfg.API == V2 {
				db, _, _ = strings.Cut(s.cfg.Bucket, "/")
			}
			// A whole second per step so that precision=s keeps rows apart.
			g := &gen{devices: 7, start: time.Now().Add(-24 * time.Hour).Truncate(time.Second), step: time.Second}
			b := sources.NewSeriesBatch(schemas)
			rows := 0
			for _, n := range []int{500, 500, 1, 333, 0} {
				g.fill(b, n)
				sent, err := s.Write(ctx, b)
				if err != nil {
					t.Fatalf("Write(%d rows): %v", n, err)
				}
				if n > 0 && sent <= 0 || n == 0 && sent != 0 {
					t.Errorf("Write(%d rows) reported %d bytes sent", n, sent)
				}
				rows += n
			}
			for _, m := range []string{"cpu", "mem"} {
				for _, f := range []string{"usage_user", "procs"} {
					if got := countField(t, srv, db, m, f); got != int64(rows) {
						t.Errorf("SELECT count(%s) FROM %s = %d, want %d", f, m, got, rows)
					}
				}
			}
			tags := influxQuery(t, srv, db, `SHOW TAG VALUES FROM "cpu" WITH KEY = "hostname"`)
			if len(tags) != 1 || len(tags[0].Values) != g.devices {
				t.Errorf("hostname tag values: %v, want %d", tags, g.devices)
			}
		})
	}
}

// The bytes a write reports are exactly the request body InfluxDB
// received, compressed when gzip is on. A proxy in front of a real influxd
// keeps each write's body as it came off the wire: uncompressed it is the
// line protocol the test writes out by hand; with gzip it is a gzip stream
// (Content-Encoding says so) that decompresses to that same text, and the
// count is its compressed length. influxd accepts every body.
func TestWriteBytes(t *testing.T) {
	srv := testserver.Influx(t)
	addr, writes := recordWrites(t, srv)

	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	(&gen{devices: 10, start: start, step: time.Second}).fill(b, 1000)
	// The same rows by hand: row i is device i%10 at start+(i/10) s, its
	// floats i/100 (at most 2 decimals), procs i; precision ns.
	var want bytes.Buffer
	for i := range 1000 {
		v := strconv.FormatFloat(float64(i)/100, 'f', -1, 64)
		fmt.Fprintf(&want, "cpu,hostname=host_%d,region=%s usage_user=%s,usage_system=%s,procs=%di %d\n",
			i%10, [...]string{"eu-west-1", "us-east-1", "ap-south-1"}[i%10%3], v, v, i,
			start.Add(time.Duration(i/10)*time.Second).UnixNano())
	}
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		gzip bool
	}{
		{"influx1://%s?db=bytes", false},
		{"influx1://%s?db=bytes&gzip=true", true},
		{"influx://%s?bucket=bytes", false},
		{"influx://%s?bucket=bytes&gzip=true", true},
	} {
		raw := fmt.Sprintf(tc.url, addr)
		s := openSink(t, raw, sinks.Options{Schemas: schemas})
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		writes() // forget the earlier sinks' writes
		n, err := s.Write(ctx, b)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		bodies := writes()
		if len(bodies) != 1 {
			t.Fatalf("%s: one Write made %d write requests, want 1", raw, len(bodies))
		}
		wb := bodies[0]
		if n != len(wb.body) || wb.contentLength != int64(len(wb.body)) {
			t.Errorf("%s: Write reported %d bytes sent; the body InfluxDB received is %d bytes (Content-Length %d)",
				raw, n, len(wb.body), wb.contentLength)
		}
		text := wb.body
		if tc.gzip {
			if wb.encoding != "gzip" || !bytes.HasPrefix(wb.body, []byte{0x1f, 0x8b}) {
				t.Fatalf("%s: body is not gzip: Content-Encoding %q, starts % x", raw, wb.encoding, wb.body[:min(4, len(wb.body))])
			}
			zr, err := gzip.NewReader(bytes.NewReader(wb.body))
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if text, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: body is not a whole gzip stream: %v", raw, err)
			}
			if len(wb.body) >= len(text) {
				t.Errorf("%s: %d bytes of gzip for %d bytes of line protocol", raw, len(wb.body), len(text))
			}
		} else if wb.encoding != "" {
			t.Errorf("%s: Content-Encoding %q without gzip", raw, wb.encoding)
		}
		if !bytes.Equal(text, want.Bytes()) {
			t.Errorf("%s: body (%d bytes of line protocol) is not the rows written (%d bytes)\ngot  %.200q\nwant %.200q",
				raw, len(text), want.Len(), text, want.Bytes())
		}
	}
	if n := countField(t, srv, "bytes", "cpu", "procs"); n != 1000 {
		t.Errorf("InfluxDB holds %d rows, want 1000", n)
	}
}

// wireBody is a write request's body as a proxy received it.
type wireBody struct {
	body          []byte
	encoding      string // Content-Encoding
	contentLength int64
}

// recordWrites starts a proxy in front of srv that keeps the body of each
// write request as it came off the wire. It returns the proxy's host:port
// and a function that returns the bodies kept since its last call.
func recordWrites(t *testing.T, srv *testserver.Server) (string, func() []wireBody) {
	t.Helper()
	var mu sync.Mutex
	var got []wireBody
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/write") {
			mu.Lock()
			got = append(got, wireBody{b, r.Header.Get("Content-Encoding"), r.ContentLength})
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return strings.TrimPrefix(proxy.URL, "http://"), func() []wireBody {
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
}

// To InfluxDB the sink sends each line's tags sorted by key, the order
// InfluxDB keeps them in (else it sorts them itself, line by line); to
// other products in the schema's order. A proxy in front of a real influxd
// keeps the bodies: TSBS's cpu tags in TSBS's order (hostname, region,
// datacenter, ...) go out as the lines written here by hand, and influxd
// stores the same series from the sorted and the unsorted bodies.
func TestWriteSortsTags(t *testing.T) {
	srv := testserver.Influx(t)
	addr, writes := recordWrites(t, srv)
	keys := []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"}
	tg := testTagger{
		{"host_0", "eu-central-1", "eu-central-1a", "6", "Ubuntu15.10", "x86", "SF", "19", "1", "test"},
		{"host_1", "us-west-1", "us-west-1a", "41", "Ubuntu15.10", "x64", "NYC", "9", "1", "staging"},
	}
	schemas := []*sources.Schema{{Measurement: "cpu", TagKeys: keys, Tags: tg,
		Fields: []sources.Field{{Name: "usage_user", Kind: sources.Int}}}}
	b := sources.NewSeriesBatch(schemas)
	start := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	(&gen{devices: 2, start: start, step: 10 * time.Second}).fill(b, 4)
	ts := func(i int) int64 { return start.Add(time.Duration(i/2) * 10 * time.Second).UnixNano() }
	sorted, asIs := "", ""
	for i := range 4 {
		v := tg[i%2]
		sorted += fmt.Sprintf("cpu,arch=%s,datacenter=%s,hostname=%s,os=%s,rack=%s,region=%s,service=%s,service_environment=%s,service_version=%s,team=%s usage_user=%di %d\n",
			v[5], v[2], v[0], v[4], v[3], v[1], v[7], v[9], v[8], v[6], i, ts(i))
		asIs += fmt.Sprintf("cpu,hostname=%s,region=%s,datacenter=%s,rack=%s,os=%s,arch=%s,team=%s,service=%s,service_version=%s,service_environment=%s usage_user=%di %d\n",
			v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], i, ts(i))
	}
	ctx := context.Background()
	var stored []string
	for _, tc := range []struct{ url, db, want string }{
		{"influx1://%s?db=sorted1", "sorted1", sorted},
		{"influx://%s?bucket=sorted2", "sorted2", sorted},
		{"influx1://%s?db=sorted3&gzip=true", "sorted3", sorted},
		// Not InfluxDB by name, but influxd takes its writes all the same.
		{"influx1://%s?db=asis&product=victoriametrics", "asis", asIs},
	} {
		raw := fmt.Sprintf(tc.url, addr)
		s := openSink(t, raw, sinks.Options{Schemas: schemas})
		influxQuery(t, srv, "", "CREATE DATABASE "+quoteIdent(tc.db))
		writes()
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		bodies := writes()
		if len(bodies) != 1 {
			t.Fatalf("%s: one Write made %d write requests, want 1", raw, len(bodies))
		}
		text := bodies[0].body
		if bodies[0].encoding == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(text))
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if text, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
		}
		if string(text) != tc.want {
			t.Errorf("%s: body\n%s\nwant\n%s", raw, text, tc.want)
		}
		var keys []string
		for _, ser := range influxQuery(t, srv, tc.db, "SHOW SERIES") {
			for _, v := range ser.Values {
				keys = append(keys, v[0].(string))
			}
		}
		if n := countField(t, srv, tc.db, "cpu", "usage_user"); n != 4 || len(keys) != 2 {
			t.Errorf("%s: InfluxDB holds %d rows of %d series %q, want 4 of 2", raw, n, len(keys), keys)
		}
		if stored == nil {
			stored = keys
		} else if !slices.Equal(keys, stored) {
			t.Errorf("%s: InfluxDB holds series %q; from the first body %q", raw, keys, stored)
		}
	}
}

// Names and tag values with spaces, commas, equals signs, backslashes and
// other awkward content read back from InfluxDB as written (in the
// canonical form the encoder documents), through both APIs.
func TestEscapingRoundTrip(t *testing.T) {
	srv := testserver.Influx(t)
	values := []string{
		"plain", "with space", "comma,here", "equals=sign", "a=b,c=d e", `back\slash`, `two\\back`,
		`back\ space`, `back\,comma`, `back\=eq`, `\lead`, `trail\`, `"quoted"`, "ünïcödé 🚀",
		"#hash", " lead", "trail ", "=", ",", " ", "tab\there", "new\nline", `'single'`,
	}
	canon := func(s string) string {
		s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
		return strings.TrimRight(s, `\`)
	}
	for _, api := range []string{"influx1://%s?db=esc1", "influx://%s?bucket=esc2"} {
		t.Run(api[:8], func(t *testing.T) {
			tg := make(testTagger, len(values))
			for i, v := range values {
				tg[i] = []string{v}
			}
			meas := []string{"my measurement", "m,with=commas", `back\slash m`, "unicode µ"}
			var schemas []*sources.Schema
			for _, m := range meas {
				schemas = append(schemas, &sources.Schema{Measurement: m, TagKeys: []string{"tag key, =x"}, Tags: tg,
					Fields: []sources.Field{{Name: "field name,=x", Kind: sources.Float}}})
			}
			s := openSink(t, fmt.Sprintf(api, srv.Addr), sinks.Options{Schemas: schemas})
			ctx := context.Background()
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			db := s.cfg.DB + s.cfg.Bucket
			b := sources.NewSeriesBatch(schemas)
			g := &gen{devices: len(values), start: time.Now().Add(-time.Hour), step: time.Millisecond}
			g.fill(b, len(values))
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			got := influxQuery(t, srv, db, "SHOW MEASUREMENTS")
			var names []string
			for _, v := range got[0].Values {
				names = append(names, v[0].(string))
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(meas))
			if !slices.Equal(names, want) {
				t.Errorf("measurements %q, want %q", names, want)
			}
			for _, m := range meas {
				ss := influxQuery(t, srv, db, fmt.Sprintf("SHOW TAG VALUES FROM %s WITH KEY = %s", quoteIdent(m), quoteIdent("tag key, =x")))
				var tagVals []string
				for _, v := range ss[0].Values {
					tagVals = append(tagVals, v[1].(string))
				}
				var wantVals []string
				for _, v := range values {
					if c := canon(v); c != "" && !slices.Contains(wantVals, c) {
						wantVals = append(wantVals, c)
					}
				}
				slices.Sort(tagVals)
				slices.Sort(wantVals)
				if !slices.Equal(tagVals, wantVals) {
					t.Errorf("%s: tag values\n%q\nwant\n%q", m, tagVals, wantVals)
				}
				// Every row is there, with its field: nothing was silently dropped.
				if n := countField(t, srv, db, m, "field name,=x"); n != int64(len(values)) {
					t.Errorf("%s: count %d, want %d", m, n, len(values))
				}
			}
		})
	}
}

// A limitation of InfluxDB 1.x's line splitter, not of the encoder (whose
// output InfluxData's reference decoder reads correctly): it pairs
// backslashes left to right, so a tag value holding a backslash before an
// escaped space and equals sign, then a double quote, hides the end of the
// line. The server rejects the batch; it is reported as rejected with the
// server's message, never lost silently.
func TestInfluxDB1SplitterLimitation(t *testing.T) {
	srv := testserver.Influx(t)
	tg := testTagger{{`x\ \="`}, {"fine"}}
	schemas := []*sources.Schema{{Measurement: "m", TagKeys: []string{"k"}, Tags: tg,
		Fields: []sources.Field{{Name: "f", Kind: sources.Float}}}}
	s := openSink(t, fmt.Sprintf("influx1://%s?db=split", srv.Addr), sinks.Options{Schemas: schemas})
	ctx := context.Background()
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 2, start: time.Now().Add(-time.Hour), step: time.Second}).fill(b, 2)
	_, err := s.Write(ctx, b)
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "unable to parse") {
		t.Fatalf("Write = %v, want rejected: unable to parse", err)
	}
}

// Rejections carry the server's message and are logged once per distinct
// error; a partial write reports how many points were not stored.
func TestRejected(t *testing.T) {
	srv := testserver.Influx(t)
	ctx := context.Background()
	core, logs := observer.New(zap.WarnLevel)
	log := zap.New(core)

	// create=false and no database: refused at prepare (TestMissingDatabase);
	// written to anyway (as when the database is dropped mid-run): 404.
	schemas := []*sources.Schema{cpuSchema("cpu")}
	s := openSink(t, fmt.Sprintf("influx1://%s?db=missing&create=false", srv.Addr), sinks.Options{Schemas: schemas, Logger: log})
	if err := s.Prepare(ctx); sinks.ClassOf(err) != sinks.Rejected {
		t.Fatalf("Prepare with create=false and no database = %v, want rejected", err)
	}
	b := sources.NewSeriesBatch(schemas)
	g := &gen{devices: 3, start: time.Now().Add(-time.Hour), step: time.Second}
	for range 5 {
		g.fill(b, 10)
		_, err := s.Write(ctx, b)
		var se *StatusError
		if sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || se.StatusCode != 404 || !strings.Contains(se.Message, `database not found: "missing"`) {
			t.Fatalf("Write to a missing database = %v, want rejected 404 with the server's message", err)
		}
		if retry, _ := sinks.Retryable(err); retry {
			t.Error("a rejected write is marked retryable")
		}
	}
	if logs.Len() != 1 {
		t.Errorf("%d log entries for 5 identical rejections, want 1: %v", logs.Len(), logs.All())
	}

	// Field type conflict: "procs" exists as an integer, then comes as a
	// float. InfluxDB stores the rest of the batch and drops those points.
	intSchema := []*sources.Schema{cpuSchema("conflict")}
	floatSchema := []*sources.Schema{cpuSchema("conflict")}
	floatSchema[0].Fields[2].Kind = sources.Float
	s1 := openSink(t, fmt.Sprintf("influx1://%s?db=partial", srv.Addr), sinks.Options{Schemas: intSchema, Logger: log})
	s2 := openSink(t, fmt.Sprintf("influx1://%s?db=partial", srv.Addr), sinks.Options{Schemas: floatSchema, Logger: log})
	if err := s1.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	b1 := sources.NewSeriesBatch(intSchema)
	g1 := &gen{devices: 4, start: time.Now().Add(-time.Hour), step: time.Second}
	g1.fill(b1, 8)
	if _, err := s1.Write(ctx, b1); err != nil {
		t.Fatal(err)
	}
	b2 := sources.NewSeriesBatch(floatSchema)
	g1.fill(b2, 8)
	_, err := s2.Write(ctx, b2)
	var se *StatusError
	if sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || !se.Partial {
		t.Fatalf("conflicting write = %v, want a rejected partial write", err)
	}
	if se.Points != 8 || se.Dropped != 8 || se.Stored() != 0 {
		t.Errorf("partial write: points %d dropped %d stored %d, want 8 8 0 (%v)", se.Points, se.Dropped, se.Stored(), err)
	}
	if !strings.Contains(err.Error(), "8 of 8 points not stored") || !strings.Contains(err.Error(), "field type conflict") {
		t.Errorf("message %q", err)
	}
	if n := countField(t, srv, "partial", "conflict", "usage_user"); n != 8 {
		t.Errorf("count after the partial write: %d, want 8 (the first batch only)", n)
	}
	if logs.FilterMessageSnippet("write failed").Len() != 2 {
		t.Errorf("want one log entry per distinct error: %v", logs.All())
	}
	for _, e := range logs.All() {
		if e.ContextMap()["error"] == nil {
			t.Errorf("log entry without the server's message: %v", e.ContextMap())
		}
	}
}

// Ping follows the server; a stopped server is a connection error, and
// the database is created on whichever write API is used.
func TestPingAndDown(t *testing.T) {
	srv := testserver.Influx(t)
	ctx := context.Background()
	schemas := []*sources.Schema{cpuSchema("cpu")}
	for _, raw := range []string{"influx1://%s?db=ping", "influx://%s?bucket=ping"} {
		s := openSink(t, fmt.Sprintf(raw, srv.Addr), sinks.Options{Schemas: schemas})
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	srv.StopKeep()
	for _, raw := range []string{"influx1://%s?db=ping&timeout=2s", "influx://%s?bucket=ping&timeout=2s"} {
		s := openSink(t, fmt.Sprintf(raw, srv.Addr), sinks.Options{Schemas: schemas})
		if err := s.Ping(ctx); sinks.ClassOf(err) != sinks.Connection {
			t.Errorf("Ping of a stopped server = %v, want a connection error", err)
		}
		if err := s.Prepare(ctx); sinks.ClassOf(err) != sinks.Connection {
			t.Errorf("Prepare against a stopped server = %v, want a connection error (the engine retries those)", err)
		}
		b := sources.NewSeriesBatch(schemas)
		(&gen{devices: 1, start: time.Now(), step: time.Second}).fill(b, 1)
		_, err := s.Write(ctx, b)
		if retry, _ := sinks.Retryable(err); sinks.ClassOf(err) != sinks.Connection || !retry {
			t.Errorf("Write to a stopped server = %v, want a retryable connection error", err)
		}
	}
	srv.Resume(t)
}

// A worker's first write allocates its encoding buffer once, at about the
// size the batch takes, instead of growing it by appending (which for a
// 10,000-row TSBS batch of 3.6 MB allocates and copies several times
// that): what the first Write of a fresh sink allocates stays within 1.5
// times the line protocol it sends (with gzip, plus the compressor's
// state and output), into a real InfluxDB 1.8.
func TestFirstWriteAllocatesOnce(t *testing.T) {
	srv := testserver.Influx(t)
	schemas, batch := benchBatch(10000)
	for _, gz := range []bool{false, true} {
		raw := fmt.Sprintf("influx1://%s?db=first&gzip=%v", srv.Addr, gz)
		s := openSink(t, raw, sinks.Options{Schemas: schemas, Workers: 1})
		ctx := context.Background()
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := s.Write(ctx, batch); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		runtime.ReadMemStats(&after)
		st := s.states.Get()
		lineBytes, zipBytes := len(st.buf), st.zbuf.Len()
		s.states.Put(st)
		allocated := after.TotalAlloc - before.TotalAlloc
		limit := uint64(lineBytes) * 3 / 2
		if gz {
			limit += 2*uint64(zipBytes) + 2<<20 // the compressor's state: 1-2 MiB (more under -race)
		}
		t.Logf("%s: first write allocated %d bytes for %d bytes of line protocol (%d gzipped)", raw, allocated, lineBytes, zipBytes)
		if allocated > limit {
			t.Errorf("%s: the first write allocated %d bytes for %d bytes of line protocol (%d gzipped), want at most %d",
				raw, allocated, lineBytes, zipBytes, limit)
		}
	}
	if n := countField(t, srv, "first", "cpu", "usage_user"); n != 10000 {
		t.Errorf("InfluxDB holds %d rows, want 10000 (the same points twice)", n)
	}
}
