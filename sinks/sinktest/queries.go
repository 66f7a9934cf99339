package sinktest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// Query suites: a query sink (sinks.Querier) over TSBS's data sets
// answers every query type with rows of the shape the query asks for, and
// runs query batches in Write as the engine does.

// The data sets the query suites read: QueryScale devices every
// QueryInterval from QueryStart, for QueryEnd(source): 13 hours of devops
// (a 12-hour window fits) and 26 hours of iot (two days touched).
const (
	QueryScale    = 10
	QueryInterval = 10 * time.Second
)

// QueryStart is when the query data sets start.
var QueryStart = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

// QueryEnd is how long source's query data set lasts.
func QueryEnd(source string) time.Duration {
	if source == "iot" {
		return 26 * time.Hour
	}
	return 13 * time.Hour
}

// QueryData is the settings of the workload named w that write source's
// query data set into target with the engine.
func QueryData(source, target string) map[string]string {
	return map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": source, "SOAKD_W_SCALE": fmt.Sprint(QueryScale), "SOAKD_W_SEED": "1",
		"SOAKD_W_START": QueryStart.Format(time.RFC3339), "SOAKD_W_END": "+" + QueryEnd(source).String(),
		"SOAKD_W_TARGET": target, "SOAKD_W_RATE": "max", "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "5000",
	}
}

// QueryOptions are the options a sink for a query workload over source's
// data set is opened with.
func QueryOptions(t *testing.T, source string) sinks.Options {
	t.Helper()
	c := iot.DefaultQueryConfig()
	c.Scale = QueryScale
	src, err := iot.NewQueries(source+"-queries", c, 1)
	if err != nil {
		t.Fatal(err)
	}
	return sinks.Options{Kind: sources.Queries, Workers: 2, Schemas: src.Schemas()}
}

// Query is a query of type typ with fixed choices: devices 1, 2, 3, ...,
// fleet East, window in the middle of the data.
func Query(typ sources.QueryType) sources.Query {
	q := sources.Query{Type: typ, Pos: 0.5, Expect: typ.Info().MustFind, Fleet: "East", LoadCapacities: []string{"2000", "5000", "1500"}}
	for q.NDevices < uint8(typ.Info().Devices) {
		q.Devices[q.NDevices] = uint32(q.NDevices + 1)
		q.NDevices++
	}
	return q
}

// QueryBuckets counts the time buckets of width b that the timestamps of
// source's data set in [start, end) fall in.
func QueryBuckets(start, end int64, b time.Duration, source string) int {
	seen := map[int64]bool{}
	for ts := QueryStart; ts.Before(QueryStart.Add(QueryEnd(source))); ts = ts.Add(QueryInterval) {
		if n := ts.UnixNano(); n >= start && n < end {
			seen[n/int64(b)] = true
		}
	}
	return len(seen)
}

// QueryCase describes a query sink to Queries.
type QueryCase struct {
	// Slack is how far before the data set's last time the newest time
	// the sink sees may be (0: exactly the last).
	Slack time.Duration
	// Columns says the answers name their columns even when they have no
	// rows (SQL): a missing column fails the test then too.
	Columns bool
	// Check, when not nil, makes the sink's own checks of the answer res
	// to q, after the suite's.
	Check func(t *testing.T, q *sources.Query, res *sinks.QueryResult, rng sources.DataRange)
}

// Queries runs every query type of source alone (QueryRows) on s, a
// prepared query sink over source's data set as QueryData writes it, and
// checks what every target must answer: the data's range; every
// statement accepted; as many rows kept as counted; rows where the query
// must find some; the group-bys one row per bucket (per host);
// groupby-orderby-limit the five newest minutes before the window's end;
// high-cpu only usage_user above 90; lastpoint one row per host at its
// newest time; low-fuel only trucks below 10% fuel;
// avg-vs-projected-fuel-consumption one row per fleet.
func Queries(t *testing.T, s sinks.Querier, source string, c QueryCase) {
	t.Helper()
	rng := s.DataRange()
	last := QueryStart.Add(QueryEnd(source) - QueryInterval)
	if !rng.Known || rng.Oldest != QueryStart.UnixNano() || rng.Newest > last.UnixNano() || rng.Newest < last.Add(-c.Slack).UnixNano() {
		t.Fatalf("data range %v..%v, want %v..%v", time.Unix(0, rng.Oldest).UTC(), time.Unix(0, rng.Newest).UTC(), QueryStart, last)
	}
	for _, typ := range sources.QueryTypes(source) {
		q := Query(typ)
		res, err := s.QueryRows(t.Context(), &q)
		if err != nil {
			text, _ := s.QueryText(&q)
			t.Fatalf("%s: %v\n%s", typ, err, text)
		}
		checkAnswer(t, &q, res, rng, source, c.Columns)
		if c.Check != nil {
			c.Check(t, &q, res, rng)
		}
	}
}

// checkAnswer makes Queries' checks of the answer res to q.
func checkAnswer(t *testing.T, q *sources.Query, res *sinks.QueryResult, rng sources.DataRange, source string, columns bool) {
	t.Helper()
	info := q.Type.Info()
	start, end := q.Window(rng)
	rows := len(res.Rows)
	if int64(rows) != q.Rows {
		t.Errorf("%s: %d rows collected, %d counted", q.Type, rows, q.Rows)
	}
	if q.MustFind(rng) && rows == 0 {
		t.Errorf("%s: no rows, though they must exist", q.Type)
	}
	col := func(names ...string) int {
		for _, name := range names {
			if i := slices.Index(res.Columns, name); i >= 0 {
				return i
			}
		}
		if rows > 0 || columns {
			t.Fatalf("%s: no column %s in %v", q.Type, strings.Join(names, " or "), res.Columns)
		}
		return -1
	}
	switch q.Type {
	case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
		sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
		sources.CPUMaxAll1, sources.CPUMaxAll8:
		if want := QueryBuckets(start, end, info.Bucket, source); rows != want {
			t.Errorf("%s: %d rows, want one per %v bucket: %d", q.Type, rows, info.Bucket, want)
		}
	case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
		if want := QueryScale * QueryBuckets(start, end, time.Hour, source); rows != want {
			t.Errorf("%s: %d rows, want one per host per hour: %d", q.Type, rows, want)
		}
	case sources.GroupbyOrderbyLimit:
		tc := col("time", "minute", "hour")
		if rows != 5 {
			t.Errorf("%s: %d rows, want 5", q.Type, rows)
		}
		for i, r := range res.Rows {
			ts := r[tc].(time.Time)
			if ts.UnixNano() >= end || (i > 0 && !ts.Before(res.Rows[i-1][tc].(time.Time))) {
				t.Errorf("%s: times not descending before the window's end: %v", q.Type, res.Rows)
				break
			}
		}
	case sources.HighCPU1, sources.HighCPUAll:
		uc := col("usage_user")
		for _, r := range res.Rows {
			if v, ok := r[uc].(float64); !ok || v <= 90 {
				t.Fatalf("%s: usage_user %v", q.Type, r[uc])
			}
		}
	case sources.Lastpoint:
		hc, tc := col("hostname"), col("time")
		hosts := map[any]bool{}
		for _, r := range res.Rows {
			hosts[r[hc]] = true
			if ts := r[tc].(time.Time); ts.UnixNano() != rng.Newest {
				t.Errorf("%s: %v's last row at %v, want %v", q.Type, r[hc], ts, time.Unix(0, rng.Newest).UTC())
			}
		}
		if rows != QueryScale || len(hosts) != QueryScale {
			t.Errorf("%s: %d rows of %d hosts, want one per host, %d", q.Type, rows, len(hosts), QueryScale)
		}
	case sources.LowFuel:
		fc := col("fuel_state")
		for _, r := range res.Rows {
			if v := r[fc].(float64); v >= 0.1 {
				t.Errorf("%s: fuel_state %v", q.Type, v)
			}
		}
	case sources.AvgVsProjectedFuelConsumption:
		if rows == 0 || rows > 4 {
			t.Errorf("%s: %d rows, want one per fleet", q.Type, rows)
		}
	}
}

// QueryWrite runs query batches through Write on s, a prepared query sink
// over an empty target of the devops tables, as the engine does: before
// any data nothing is expected (lastpoint answers no rows and no error);
// load then writes 5 hosts (0..4) of 2 hours of devops from QueryStart
// (QueryData's settings with SCALE=5, END=+2h); once the range is read
// each query's rows are counted (5 hosts for lastpoint, 60 minutes for
// single-groupby-1-1-1); a query that must find rows but finds none (a
// host the data set does not have) fails with class empty, after the
// queries before it in the batch were answered, and says which query and
// window; an iot query on devops tables is rejected.
func QueryWrite(t *testing.T, s sinks.Sink, load func(t *testing.T)) {
	t.Helper()
	qs, ok := s.(sinks.Querier)
	if !ok {
		t.Fatalf("%T is not a sinks.Querier", s)
	}
	ctx := t.Context()
	if qs.DataRange().Known {
		t.Fatal("a data range before any data")
	}
	b := &sources.Batch{Queries: []sources.Query{Query(sources.Lastpoint)}}
	if _, err := s.Write(ctx, b); err != nil || b.Queries[0].Rows != 0 {
		t.Fatalf("lastpoint on no data: %v, %d rows; want no error, 0 rows", err, b.Queries[0].Rows)
	}
	load(t)
	if err := qs.RefreshRange(ctx); err != nil || !qs.DataRange().Known {
		t.Fatalf("RefreshRange: %v, %+v", err, qs.DataRange())
	}
	sg := Query(sources.SingleGroupby111)
	sg.Devices[0] = 3
	b.Queries = []sources.Query{Query(sources.Lastpoint), sg}
	n, err := s.Write(ctx, b)
	if err != nil || b.Queries[0].Rows != 5 || b.Queries[1].Rows != 60 || n == 0 {
		t.Fatalf("Write: %v, %d bytes, rows %d and %d; want 5 hosts, 60 minutes", err, n, b.Queries[0].Rows, b.Queries[1].Rows)
	}
	sg.Devices[0] = 8 // not in the data
	b.Queries = []sources.Query{Query(sources.Lastpoint), sg, Query(sources.Lastpoint)}
	_, err = s.Write(ctx, b)
	if sinks.ClassOf(err) != sinks.Empty || sinks.Stored(err) != 1 || b.Queries[0].Rows != 5 {
		t.Fatalf("Write: %v (class %s, %d answered), first query %d rows; want class empty after 1 query of 5 rows",
			err, sinks.ClassOf(err), sinks.Stored(err), b.Queries[0].Rows)
	}
	if !strings.Contains(err.Error(), "single-groupby-1-1-1 returned no rows in [2016-01-01T00:") {
		t.Errorf("error %q does not say which query and window", err)
	}
	// A query the data set cannot answer is rejected.
	b.Queries = []sources.Query{Query(sources.LastLoc)}
	if _, err := s.Write(ctx, b); sinks.ClassOf(err) != sinks.Rejected {
		t.Errorf("an iot query on devops tables: %v, want rejected", err)
	}
}

// QueryChurn is the CHURN of ChurnQueryData's data set: two of the ten
// devices replaced every 10 minutes, so each slot gets a new device
// every 50 minutes.
const QueryChurn = "20%/10m"

// ChurnQueryData is the settings of the workload named w that writes a
// devops data set with CHURN (QueryChurn) into target with the engine:
// QueryScale devices every QueryInterval from start, for span, from one
// worker (so that rows reach the target in time order).
func ChurnQueryData(target string, start time.Time, span time.Duration) map[string]string {
	env := QueryData("devops", target)
	env["SOAKD_W_START"] = start.Format(time.RFC3339)
	env["SOAKD_W_END"] = "+" + span.String()
	env["SOAKD_W_WORKERS"] = "1"
	env["SOAKD_W_BATCH_SIZE"] = "500"
	env["SOAKD_W_CHURN"] = QueryChurn
	return env
}

// churnQueries is the query source over ChurnQueryData's devops data
// set, running the types that name hosts and must find rows.
func churnQueries(t *testing.T) *iot.Queries {
	t.Helper()
	c := iot.DefaultQueryConfig()
	c.Scale = QueryScale
	if err := c.Churn.UnmarshalText([]byte(QueryChurn)); err != nil {
		t.Fatal(err)
	}
	if err := c.Queries.UnmarshalText([]byte("single-groupby-1-1-1,single-groupby-5-8-1,single-groupby-1-1-12,cpu-max-all-8")); err != nil {
		t.Fatal(err)
	}
	src, err := iot.NewQueries("devops-queries", c, 5)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// ChurnQueryOptions are the options a sink for a query workload over
// ChurnQueryData's devops data set is opened with, as the engine opens
// it: with the data set's churn schedule.
func ChurnQueryOptions(t *testing.T) sinks.Options {
	t.Helper()
	src := churnQueries(t)
	return sinks.Options{Kind: sources.Queries, Workers: 2, Schemas: src.Schemas(), Churn: src.QueryChurn()}
}

// ChurnQueries runs queries of a churned query workload on s, a prepared
// query sink opened with ChurnQueryOptions over the devops data set as
// ChurnQueryData(start, span) writes it, and checks that the sink sees
// all the data (device 0 is replaced after 10 minutes, its successors
// hold the newest data) and that every query, which names hosts, finds
// rows; and that the same queries naming the first devices, as a
// workload that ignored CHURN would, find none in some windows.
func ChurnQueries(t *testing.T, s sinks.Sink, start time.Time, span time.Duration, c QueryCase) {
	t.Helper()
	qs, ok := s.(sinks.Querier)
	if !ok {
		t.Fatalf("%T is not a sinks.Querier", s)
	}
	ctx := t.Context()
	if err := qs.RefreshRange(ctx); err != nil {
		t.Fatal(err)
	}
	rng := qs.DataRange()
	last := start.Add(span - QueryInterval)
	if !rng.Known || rng.Oldest != start.UnixNano() || rng.Newest > last.UnixNano() || rng.Newest < last.Add(-c.Slack).UnixNano() {
		t.Fatalf("data range %v..%v, want %v..%v", time.Unix(0, rng.Oldest).UTC(), time.Unix(0, rng.Newest).UTC(), start, last)
	}
	st, err := churnQueries(t).Stream(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := &sources.Batch{}
	_ = st.Fill(b, 100, 0)
	all := slices.Clone(b.Queries)
	replacements, emptyIgnoringChurn := 0, 0
	for _, q := range all {
		b.Queries = []sources.Query{q}
		if _, err := s.Write(ctx, b); err != nil || b.Queries[0].Rows == 0 {
			text, _ := qs.QueryText(&q)
			t.Fatalf("%s: %v, %d rows\n%s", q.Type, err, b.Queries[0].Rows, text)
		}
		rq := q.Resolved(rng)
		for _, d := range rq.Devices[:rq.NDevices] {
			if d >= QueryScale {
				replacements++
			}
		}
		q.Churn = nil
		b.Queries = []sources.Query{q}
		if _, err := s.Write(ctx, b); sinks.ClassOf(err) == sinks.Empty || (err == nil && b.Queries[0].Rows == 0) {
			emptyIgnoringChurn++
		} else if err != nil {
			t.Fatalf("%s without churn: %v", q.Type, err)
		}
	}
	if replacements == 0 || emptyIgnoringChurn == 0 {
		t.Errorf("%d replacement devices named, %d of %d queries empty when naming the first devices: the test does not exercise churn",
			replacements, emptyIgnoringChurn, len(all))
	}
}
