package influx

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

const (
	qScale    = 10
	qInterval = 10 * time.Second
)

var qT0 = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

func qEnd(source string) time.Duration {
	if source == "iot" {
		return 26 * time.Hour
	}
	return 13 * time.Hour
}

// loadQueryData writes source's data set (10 devices from 2016-01-01,
// 13 h of devops, 26 h of iot) into db through the engine.
func loadQueryData(t *testing.T, target, source string) {
	t.Helper()
	_, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": source, "SOAKD_W_SCALE": fmt.Sprint(qScale), "SOAKD_W_SEED": "1",
		"SOAKD_W_START": "2016-01-01T00:00:00Z", "SOAKD_W_END": "+" + qEnd(source).String(),
		"SOAKD_W_TARGET": target, "SOAKD_W_RATE": "max", "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "5000",
	})
	res := <-done
	if res.err != nil {
		t.Fatalf("loading %s: %v", source, res.err)
	}
}

func openQuerySink(t *testing.T, raw, source string) *Sink {
	t.Helper()
	c := iot.DefaultQueryConfig()
	c.Scale = qScale
	src, err := iot.NewQueries(source+"-queries", c, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := openSink(t, raw, sinks.Options{Kind: sources.Queries, Workers: 2, Schemas: src.Schemas()})
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func testQuery(typ sources.QueryType) sources.Query {
	q := sources.Query{Type: typ, Pos: 0.5, Expect: typ.Info().MustFind, Fleet: "East", LoadCapacities: []string{"2000", "5000", "1500"}}
	for q.NDevices < uint8(typ.Info().Devices) {
		q.Devices[q.NDevices] = uint32(q.NDevices + 1)
		q.NDevices++
	}
	return q
}

// TestQueries runs every query type against freshly written data in
// InfluxDB 1.8, through both APIs, and checks what comes back: every
// statement accepted, lastpoint one row per host at its newest time,
// high-cpu only usage_user above 90, the group-bys one row per bucket (per
// host), groupby-orderby-limit the five newest minutes before the end.
// (internal/crosscheck compares every answer with the SQL one.)
func TestQueries(t *testing.T) {
	srv := testserver.Influx(t)
	for _, source := range []string{"devops", "iot"} {
		t.Run(source, func(t *testing.T) {
			db := source + "_q"
			loadQueryData(t, "influx1://"+srv.Addr+"?db="+db, source)
			for _, target := range []string{"influx1://" + srv.Addr + "?db=" + db, "influx://" + srv.Addr + "?bucket=" + db + "/autogen"} {
				s := openQuerySink(t, target, source)
				rng := s.DataRange()
				last := qT0.Add(qEnd(source) - qInterval)
				if !rng.Known || rng.Oldest != qT0.UnixNano() || rng.Newest > last.UnixNano() || rng.Newest < last.Add(-time.Minute).UnixNano() {
					t.Fatalf("%s: data range %v..%v, want %v..%v", target, time.Unix(0, rng.Oldest).UTC(), time.Unix(0, rng.Newest).UTC(), qT0, last)
				}
				for _, typ := range sources.QueryTypes(source) {
					q := testQuery(typ)
					res, err := s.QueryRows(t.Context(), &q)
					if err != nil {
						text, _ := s.QueryText(&q)
						t.Fatalf("%s: %v\n%s", typ, err, text)
					}
					checkShape(t, &q, res, rng, source)
					// The engine's path counts the same rows.
					b := &sources.Batch{Queries: []sources.Query{testQuery(typ)}}
					if _, err := s.Write(t.Context(), b); err != nil || b.Queries[0].Rows != q.Rows {
						t.Errorf("%s: Write: %v, %d rows; QueryRows %d", typ, err, b.Queries[0].Rows, q.Rows)
					}
				}
			}
		})
	}
}

func buckets(start, end int64, b time.Duration, dataEnd time.Duration) int {
	seen := map[int64]bool{}
	for ts := qT0; ts.Before(qT0.Add(dataEnd)); ts = ts.Add(qInterval) {
		if n := ts.UnixNano(); n >= start && n < end {
			seen[n/int64(b)] = true
		}
	}
	return len(seen)
}

func checkShape(t *testing.T, q *sources.Query, res *sinks.QueryResult, rng sources.DataRange, source string) {
	t.Helper()
	info := q.Type.Info()
	start, end := q.Window(rng)
	rows := len(res.Rows)
	if int64(rows) != q.Rows {
		t.Errorf("%s: %d rows kept, %d counted", q.Type, rows, q.Rows)
	}
	if q.MustFind(rng) && rows == 0 {
		t.Errorf("%s: no rows, though they must exist", q.Type)
	}
	idx := func(name string) int {
		i := slices.Index(res.Columns, name)
		if i < 0 && rows > 0 {
			t.Fatalf("%s: no column %s in %v", q.Type, name, res.Columns)
		}
		return i
	}
	switch q.Type {
	case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
		sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
		sources.CPUMaxAll1, sources.CPUMaxAll8:
		if want := buckets(start, end, info.Bucket, qEnd(source)); rows != want {
			t.Errorf("%s: %d rows, want one per %v bucket: %d", q.Type, rows, info.Bucket, want)
		}
	case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
		if want := qScale * buckets(start, end, time.Hour, qEnd(source)); rows != want {
			t.Errorf("%s: %d rows, want one per host per hour: %d", q.Type, rows, want)
		}
	case sources.GroupbyOrderbyLimit:
		tc := idx("time")
		for i, r := range res.Rows {
			if ts := r[tc].(time.Time); ts.UnixNano() >= end || (i > 0 && !ts.Before(res.Rows[i-1][tc].(time.Time))) {
				t.Errorf("%s: times not descending before the end: %v", q.Type, res.Rows)
			}
		}
		if rows != 5 {
			t.Errorf("%s: %d rows, want 5", q.Type, rows)
		}
	case sources.HighCPU1, sources.HighCPUAll:
		uc := idx("usage_user")
		for _, r := range res.Rows {
			if v, ok := r[uc].(float64); !ok || v <= 90 {
				t.Fatalf("%s: usage_user %v", q.Type, r[uc])
			}
			if h := r[idx("hostname")]; q.Type == sources.HighCPU1 && h != "host_1" {
				t.Fatalf("%s: host %v", q.Type, h)
			}
		}
	case sources.Lastpoint:
		hosts := map[any]bool{}
		for _, r := range res.Rows {
			hosts[r[idx("hostname")]] = true
			if ts := r[idx("time")].(time.Time); ts.UnixNano() != rng.Newest {
				t.Errorf("%s: last row at %v, want %v", q.Type, ts, time.Unix(0, rng.Newest).UTC())
			}
		}
		if rows != qScale || len(hosts) != qScale {
			t.Errorf("%s: %d rows of %d hosts, want %d", q.Type, rows, len(hosts), qScale)
		}
	case sources.LowFuel:
		for _, r := range res.Rows {
			if v := r[idx("fuel_state")].(float64); v >= 0.1 {
				t.Errorf("%s: fuel_state %v", q.Type, v)
			}
		}
	case sources.AvgVsProjectedFuelConsumption:
		if rows == 0 || rows > 4 {
			t.Errorf("%s: %d rows, want one per fleet", q.Type, rows)
		}
	}
	if testing.Verbose() {
		t.Logf("%s: %d rows %v", q.Type, rows, res.Columns)
	}
	_ = strings.TrimSpace
}

// Queries need InfluxDB's /query: other v1 products are refused at
// config time, and a sink opened for queries needs TSBS's measurements.
func TestCheckQueries(t *testing.T) {
	for raw, ok := range map[string]bool{
		"influx1://h:8086?db=x":                         true,
		"influx://h:8086?bucket=x/autogen":              true,
		"influx1://h:8086?product=victoriametrics":      false,
		"influx1://h:8086?db=x&product=cnosdb":          false,
		"influx1://h:8086?db=x&product=influxdb&gzip=1": true,
	} {
		err := Check(mustParse(t, raw), sources.Queries)
		if (err == nil) != ok {
			t.Errorf("Check(%s, queries) = %v", raw, err)
		}
		if err != nil && !strings.Contains(err.Error(), "is not InfluxDB") {
			t.Errorf("Check(%s): %v", raw, err)
		}
		if err := Check(mustParse(t, raw), sources.Series); err != nil {
			t.Errorf("Check(%s, series) = %v", raw, err)
		}
	}
	_, err := Open(t.Context(), mustParse(t, "influx1://h:8086?db=x"), sinks.Options{Kind: sources.Queries, Schemas: []*sources.Schema{cpuSchema("mem")}})
	if err == nil || !strings.Contains(err.Error(), "TSBS's measurements") {
		t.Errorf("Open over a mem table: %v", err)
	}
}

// ?timeout= bounds each query of a batch, not the batch: against a server
// that takes 150 ms per query, a batch of three queries with timeout=400ms
// succeeds (450 ms in all), and a query that takes longer than the bound
// fails as a timeout. The range lookups are answered at once.
func TestQueryTimeoutPerQuery(t *testing.T) {
	t.Parallel()
	var delay atomic.Int64
	delay.Store(int64(150 * time.Millisecond))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/query" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		q := r.FormValue("q")
		ts := qT0.UnixNano()
		if strings.Contains(q, "first(") { // the data's range: two statements
			fmt.Fprintf(w, `{"results":[{"series":[{"name":"cpu","columns":["time","first"],"values":[[%d,1]]}]},`+
				`{"series":[{"name":"cpu","columns":["time","last"],"values":[[%d,1]]}]}]}`, ts, ts+int64(time.Hour))
			return
		}
		select {
		case <-time.After(time.Duration(delay.Load())):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, `{"results":[{"series":[{"name":"cpu","columns":["time","hostname"],"values":[[%d,"host_1"]]}]}]}`, ts)
	}))
	defer srv.Close()
	raw := "influx1://" + strings.TrimPrefix(srv.URL, "http://") + "?db=x&create=false&timeout=400ms"
	s := openQuerySink(t, raw, "devops")
	b := &sources.Batch{Queries: []sources.Query{testQuery(sources.Lastpoint), testQuery(sources.Lastpoint), testQuery(sources.Lastpoint)}}
	if _, err := s.Write(t.Context(), b); err != nil {
		t.Fatalf("three queries of 150 ms with timeout=400ms: %v", err)
	}
	delay.Store(int64(time.Minute))
	b = &sources.Batch{Queries: []sources.Query{testQuery(sources.Lastpoint)}}
	start := time.Now()
	_, err := s.Write(t.Context(), b)
	if sinks.ClassOf(err) != sinks.Timeout {
		t.Errorf("a query of 1 min with timeout=400ms: %v, want class timeout", err)
	}
	// Compared with the query's own minute, not with 400 ms plus a margin
	// a loaded machine can exceed.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the query ended after %v, want about 400ms (not the server's 1 min)", d)
	}
}
