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
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// loadQueryData writes source's query data set into target through the
// engine.
func loadQueryData(t *testing.T, target, source string) {
	t.Helper()
	_, done := runEngine(t, sinktest.QueryData(source, target))
	res := <-done
	if res.err != nil {
		t.Fatalf("loading %s: %v", source, res.err)
	}
}

func openQuerySink(t *testing.T, raw, source string) *Sink {
	t.Helper()
	s := openSink(t, raw, sinktest.QueryOptions(t, source))
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestQueries runs every query type against freshly written data in
// InfluxDB 1.8, through both APIs, and checks what comes back
// (sinktest.Queries), high-cpu-1 only host_1's rows, and that the
// engine's path (Write) counts as many rows. (internal/crosscheck compares
// every answer with the SQL one.)
func TestQueries(t *testing.T) {
	srv := testserver.Influx(t)
	for _, source := range []string{"devops", "iot"} {
		t.Run(source, func(t *testing.T) {
			db := source + "_q"
			loadQueryData(t, "influx1://"+srv.Addr+"?db="+db, source)
			for _, tc := range []struct{ api, target string }{
				{"v1", "influx1://" + srv.Addr + "?db=" + db},
				{"v2", "influx://" + srv.Addr + "?bucket=" + db + "/autogen"},
			} {
				t.Run(tc.api, func(t *testing.T) {
					target := tc.target
					s := openQuerySink(t, target, source)
					sinktest.Queries(t, s, source, sinktest.QueryCase{Slack: time.Minute,
						Check: func(t *testing.T, q *sources.Query, res *sinks.QueryResult, _ sources.DataRange) {
							checkShape(t, q, res)
							// The engine's path counts the same rows.
							b := &sources.Batch{Queries: []sources.Query{sinktest.Query(q.Type)}}
							if _, err := s.Write(t.Context(), b); err != nil || b.Queries[0].Rows != q.Rows {
								t.Errorf("%s: Write: %v, %d rows; QueryRows %d", q.Type, err, b.Queries[0].Rows, q.Rows)
							}
						}})
				})
			}
		})
	}
}

// TestQueryWrite runs query batches through Write, as the engine does
// (sinktest.QueryWrite).
func TestQueryWrite(t *testing.T) {
	srv := testserver.Influx(t)
	target := "influx1://" + srv.Addr + "?db=qwrite"
	srv.InfluxExec(t, "", "CREATE DATABASE qwrite") // a query workload creates nothing
	s := openQuerySink(t, target, "devops")
	sinktest.QueryWrite(t, s, func(t *testing.T) {
		env := sinktest.QueryData("devops", target)
		env["SOAKD_W_SCALE"], env["SOAKD_W_END"] = "5", "+2h"
		_, done := runEngine(t, env)
		if res := <-done; res.err != nil {
			t.Fatal(res.err)
		}
	})
}

// TestQueryMissingDatabase: a query workload whose db= names a database
// the server lacks (a typo, or no writer yet) creates none, and every
// query fails with class empty, naming the database and db=; once a
// writer has created it, the next query on no data yet answers no rows
// and no error, as before.
func TestQueryMissingDatabase(t *testing.T) {
	srv := testserver.Influx(t)
	ctx := t.Context()
	s := openQuerySink(t, "influx1://"+srv.Addr+"?db=nosuchdb", "devops")
	if _, body := srv.InfluxQuery(t, "", "SHOW DATABASES", nil); strings.Contains(string(body), "nosuchdb") {
		t.Fatalf("the query workload created its database: %s", body)
	}
	for _, typ := range []sources.QueryType{sources.Lastpoint, sources.HighCPUAll} {
		b := &sources.Batch{Queries: []sources.Query{sinktest.Query(typ)}}
		_, err := s.Write(ctx, b)
		if sinks.ClassOf(err) != sinks.Empty || err == nil || !strings.Contains(err.Error(), `database "nosuchdb" does not exist`) ||
			!strings.Contains(err.Error(), "target URL's db=") {
			t.Errorf("%s on a missing database: %v (class %s); want class empty naming the database and db=", typ, err, sinks.ClassOf(err))
		}
	}
	// The summary says so beside the figures, and why.
	if n := s.Notes(); len(n) != 1 || !strings.Contains(n[0], `no data found to query in database "nosuchdb" (the target URL's db=) during the whole run`) ||
		!strings.Contains(n[0], `database "nosuchdb" does not exist`) {
		t.Errorf("notes for the summary: %q", n)
	}
	// A writer creates it: the next query finds it, without waiting for
	// the range's next read.
	srv.InfluxExec(t, "", "CREATE DATABASE nosuchdb")
	b := &sources.Batch{Queries: []sources.Query{sinktest.Query(sources.Lastpoint)}}
	if _, err := s.Write(ctx, b); err != nil || b.Queries[0].Rows != 0 {
		t.Errorf("lastpoint on an empty database: %v, %d rows; want no error, 0 rows", err, b.Queries[0].Rows)
	}
	// Still nothing found, but no longer for a missing database.
	if n := s.Notes(); len(n) != 1 || !strings.Contains(n[0], "no data found to query") || strings.Contains(n[0], "does not exist") {
		t.Errorf("notes for the summary of an empty database: %q", n)
	}
}

// checkShape makes InfluxDB's own checks of the answer res to q, beyond
// sinktest.Queries': the high-cpu queries name each row's host, and
// high-cpu-1 answers only host_1's rows.
func checkShape(t *testing.T, q *sources.Query, res *sinks.QueryResult) {
	t.Helper()
	if (q.Type == sources.HighCPU1 || q.Type == sources.HighCPUAll) && len(res.Rows) > 0 {
		hc := slices.Index(res.Columns, "hostname")
		if hc < 0 {
			t.Fatalf("%s: no column hostname in %v", q.Type, res.Columns)
		}
		for _, r := range res.Rows {
			if h := r[hc]; q.Type == sources.HighCPU1 && h != "host_1" {
				t.Fatalf("%s: host %v", q.Type, h)
			}
		}
	}
	if testing.Verbose() {
		t.Logf("%s: %d rows %v", q.Type, len(res.Rows), res.Columns)
	}
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
		ts := sinktest.QueryStart.UnixNano()
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
	b := &sources.Batch{Queries: []sources.Query{sinktest.Query(sources.Lastpoint), sinktest.Query(sources.Lastpoint), sinktest.Query(sources.Lastpoint)}}
	if _, err := s.Write(t.Context(), b); err != nil {
		t.Fatalf("three queries of 150 ms with timeout=400ms: %v", err)
	}
	delay.Store(int64(time.Minute))
	b = &sources.Batch{Queries: []sources.Query{sinktest.Query(sources.Lastpoint)}}
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

// A query workload over a data set with CHURN finds the data's whole
// range (past device 0's replacement) and rows for every query naming
// hosts.
func TestChurnedQueries(t *testing.T) {
	srv := testserver.Influx(t)
	target := "influx1://" + srv.Addr + "?db=devops_churn_q"
	_, done := runEngine(t, sinktest.ChurnQueryData(target, sinktest.QueryStart, 13*time.Hour))
	if res := <-done; res.err != nil {
		t.Fatalf("loading: %v", res.err)
	}
	s := openSink(t, target, sinktest.ChurnQueryOptions(t))
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	sinktest.ChurnQueries(t, s, sinktest.QueryStart, 13*time.Hour, sinktest.QueryCase{Slack: time.Minute})
}
