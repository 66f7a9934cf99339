package postgres

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// The data sets the query tests read: 10 devices every 10 s from
// 2016-01-01, 13 hours of devops (a 12-hour window fits) and 26 hours of
// iot (two days touched).
const (
	qScale    = 10
	qStart    = "2016-01-01T00:00:00Z"
	qInterval = 10 * time.Second
)

func qEnd(source string) time.Duration {
	if source == "iot" {
		return 26 * time.Hour
	}
	return 13 * time.Hour
}

var qT0 = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

// loadQueryData writes source's query data set into db with the engine.
func loadQueryData(t *testing.T, db, source string, params ...string) {
	t.Helper()
	res := runEngine(t.Context(), t, prometheus.NewRegistry(), map[string]string{
		"SOAKD_W_SOURCE": source, "SOAKD_W_SCALE": fmt.Sprint(qScale), "SOAKD_W_SEED": "1",
		"SOAKD_W_START": qStart, "SOAKD_W_END": "+" + qEnd(source).String(),
		"SOAKD_W_TARGET": withParams(db, params...), "SOAKD_W_RATE": "max",
		"SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "5000",
	})
	if res.err != nil || sumErrors(res.sum.Workloads[0].Errors) > 0 {
		t.Fatalf("loading %s: %v %v", source, res.err, res.sum.Workloads[0].Errors)
	}
}

// openQuerySink opens the sink for a query workload over source's data
// set and prepares it.
func openQuerySink(t *testing.T, raw, source string) *Sink {
	t.Helper()
	c := iot.DefaultQueryConfig()
	c.Scale = qScale
	src, err := iot.NewQueries(source+"-queries", c, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(mustURL(t, raw), sinks.Options{Kind: sources.Queries, Workers: 2, Schemas: src.Schemas(), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// testQuery is a query of type typ with fixed choices: devices 1, 2, 3,
// ..., fleet East, window in the middle of the data.
func testQuery(typ sources.QueryType) sources.Query {
	q := sources.Query{Type: typ, Pos: 0.5, Expect: typ.Info().MustFind, Fleet: "East", LoadCapacities: []string{"2000", "5000", "1500"}}
	for q.NDevices < uint8(typ.Info().Devices) {
		q.Devices[q.NDevices] = uint32(q.NDevices + 1)
		q.NDevices++
	}
	return q
}

// buckets counts the time buckets of width b that the data's timestamps
// in [start, end) fall in.
func buckets(start, end int64, b time.Duration, dataEnd time.Duration) int {
	seen := map[int64]bool{}
	for ts := qT0; ts.Before(qT0.Add(dataEnd)); ts = ts.Add(qInterval) {
		if n := ts.UnixNano(); n >= start && n < end {
			seen[n/int64(b)] = true
		}
	}
	return len(seen)
}

func col(t *testing.T, r *sinks.QueryResult, name string) int {
	t.Helper()
	i := slices.Index(r.Columns, name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, r.Columns)
	}
	return i
}

// TestQueries runs every query type against freshly written data on
// PostgreSQL and TimescaleDB, in both layouts, and checks the shape of
// what comes back: lastpoint one row per host at its newest time,
// high-cpu only usage_user above 90 (and only the host asked for), the
// group-bys one row per bucket (per host), last-loc one row per truck of
// the fleet, low-fuel and high-load only trucks below and above their
// thresholds. The two layouts return as many rows for every query.
func TestQueries(t *testing.T) {
	servers := map[string]func(testing.TB, ...testserver.PostgresOption) *testserver.Server{"postgres": testserver.Postgres, "timescaledb": testserver.TimescaleDB}
	for _, server := range []string{"postgres", "timescaledb"} {
		t.Run(server, func(t *testing.T) {
			srv := servers[server](t)
			for _, source := range []string{"devops", "iot"} {
				t.Run(source, func(t *testing.T) {
					counts := map[string][]int64{}
					for _, layout := range []string{"soakd", "tsbs"} {
						t.Run(layout, func(t *testing.T) {
							db := newDB(t, srv, source+"_q_"+layout)
							params := []string{"dialect", server, "layout", layout}
							loadQueryData(t, db, source, params...)
							s := openQuerySink(t, withParams(db, params...), source)
							rng := s.DataRange()
							last := qT0.Add(qEnd(source) - qInterval)
							if !rng.Known || rng.Oldest != qT0.UnixNano() || rng.Newest != last.UnixNano() {
								t.Fatalf("data range %v..%v, want %v..%v", time.Unix(0, rng.Oldest).UTC(), time.Unix(0, rng.Newest).UTC(), qT0, last)
							}
							for _, typ := range sources.QueryTypes(source) {
								q := testQuery(typ)
								res, err := s.QueryRows(t.Context(), &q)
								if err != nil {
									sql, _ := s.QueryText(&q)
									t.Fatalf("%s: %v\n%s", typ, err, sql)
								}
								counts[typ.String()] = append(counts[typ.String()], q.Rows)
								checkShape(t, s, &q, res, rng, source, layout)
							}
						})
					}
					for typ, n := range counts {
						if len(n) == 2 && n[0] != n[1] {
							t.Errorf("%s: %d rows in the soakd layout, %d in TSBS's", typ, n[0], n[1])
						}
					}
				})
			}
		})
	}
}

// trucksIn lists the trucks of the iot data set (seed 1) whose fleet tag
// is fleet.
func trucksIn(t *testing.T, fleet string) []string {
	t.Helper()
	src, err := iot.New("iot", iot.DefaultConfig(), 1, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	sc := src.Schemas()[0]
	var out []string
	for d := range uint32(qScale) {
		if string(sc.Tags.AppendTag(nil, d, 1)) == fleet {
			out = append(out, string(sc.Tags.AppendTag(nil, d, 0)))
		}
	}
	return out
}

func checkShape(t *testing.T, s *Sink, q *sources.Query, res *sinks.QueryResult, rng sources.DataRange, source, layout string) {
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
	timeCol := func() int {
		for _, c := range []string{"time", "minute", "hour"} {
			if i := slices.Index(res.Columns, c); i >= 0 {
				return i
			}
		}
		t.Fatalf("%s: no time column in %v", q.Type, res.Columns)
		return -1
	}
	switch q.Type {
	case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
		sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
		sources.CPUMaxAll1, sources.CPUMaxAll8:
		if want := buckets(start, end, info.Bucket, qEnd(source)); rows != want {
			t.Errorf("%s: %d rows, want one per %v bucket: %d", q.Type, rows, info.Bucket, want)
		}
		if len(res.Columns) != 1+info.Metrics {
			t.Errorf("%s: columns %v, want time and %d metrics", q.Type, res.Columns, info.Metrics)
		}
		tc := timeCol()
		for i, r := range res.Rows {
			ts := r[tc].(time.Time)
			if ts.UnixNano()%int64(info.Bucket) != 0 || (i > 0 && !ts.After(res.Rows[i-1][tc].(time.Time))) {
				t.Errorf("%s: bucket times not aligned or not ascending: %v", q.Type, ts)
				break
			}
		}
	case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
		if want := qScale * buckets(start, end, time.Hour, qEnd(source)); rows != want {
			t.Errorf("%s: %d rows, want one per host per hour: %d", q.Type, rows, want)
		}
		for m := range info.Metrics {
			col(t, res, "mean_"+s.q.cpu.schema.Fields[m].Name)
		}
	case sources.GroupbyOrderbyLimit:
		tc := timeCol()
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
		uc := col(t, res, "usage_user")
		for _, r := range res.Rows {
			if v, ok := r[uc].(float64); !ok || v <= 90 {
				t.Fatalf("%s: usage_user %v", q.Type, r[uc])
			}
		}
		if q.Type == sources.HighCPU1 && rows > 0 {
			hc := col(t, res, "tags_id")
			if layout == "soakd" {
				hc = col(t, res, "hostname")
				if h := res.Rows[0][hc]; h != "host_1" {
					t.Errorf("%s: host %v, want host_1", q.Type, h)
				}
			}
			for _, r := range res.Rows {
				if r[hc] != res.Rows[0][hc] {
					t.Fatalf("%s: rows of several hosts", q.Type)
				}
			}
		}
		if q.Type == sources.HighCPUAll && rows == 0 {
			t.Errorf("%s: no usage_user above 90 in 12 hours of 10 hosts", q.Type)
		}
	case sources.Lastpoint:
		hc := col(t, res, "hostname")
		tc := col(t, res, "time")
		hosts := map[any]bool{}
		for _, r := range res.Rows {
			hosts[r[hc]] = true
			if ts := r[tc].(time.Time); ts.UnixNano() != rng.Newest {
				t.Errorf("%s: %v's last row at %v, want %v", q.Type, r[hc], ts, time.Unix(0, rng.Newest).UTC())
			}
		}
		if rows != qScale || len(hosts) != qScale {
			t.Errorf("%s: %d rows of %d hosts, want one per host, %d", q.Type, rows, len(hosts), qScale)
		}
	case sources.LastLoc:
		want := trucksIn(t, q.Fleet)
		var got []string
		for _, r := range res.Rows {
			got = append(got, r[col(t, res, "name")].(string))
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: trucks %v, want the fleet's %v", q.Type, got, want)
		}
	case sources.LowFuel:
		fc := col(t, res, "fuel_state")
		for _, r := range res.Rows {
			if v := r[fc].(float64); v >= 0.1 {
				t.Errorf("%s: fuel_state %v", q.Type, v)
			}
		}
	case sources.HighLoad:
		lc, cc := col(t, res, "current_load"), col(t, res, "load_capacity")
		for _, r := range res.Rows {
			capacity := r[cc]
			if s, ok := capacity.(string); ok {
				var f float64
				fmt.Sscan(s, &f)
				capacity = f
			}
			if v := r[lc].(float64) / capacity.(float64); v <= 0.9 {
				t.Errorf("%s: load %v of capacity %v", q.Type, r[lc], capacity)
			}
		}
	case sources.AvgVsProjectedFuelConsumption:
		if rows == 0 || rows > 4 {
			t.Errorf("%s: %d rows, want one per fleet", q.Type, rows)
		}
		pc := col(t, res, "projected_fuel_consumption")
		for _, r := range res.Rows {
			if v := r[pc].(float64); v < 12 || v > 19 || math.IsNaN(v) {
				t.Errorf("%s: projected consumption %v, want between the models' 12 and 19", q.Type, v)
			}
		}
	case sources.AvgDailyDrivingDuration:
		if rows == 0 || rows > qScale {
			t.Errorf("%s: %d rows, want at most one per truck", q.Type, rows)
		}
	case sources.DailyActivity, sources.BreakdownFrequency, sources.StationaryTrucks, sources.LongDrivingSessions:
		// Any number of rows: the data decides.
	default:
		t.Errorf("%s: no shape check", q.Type)
	}
	if testing.Verbose() {
		t.Logf("%s (%s layout): %d rows %v", q.Type, layout, rows, res.Columns)
	}
	_ = strings.TrimSpace
}

// TestQueryWrite runs query batches through Write, as the engine does:
// before any data nothing is expected, once data is there each query's
// rows are counted, and a query that must find rows but finds none (a
// host the data set does not have) fails with class empty, after the
// queries before it in the batch were answered.
func TestQueryWrite(t *testing.T) {
	srv := testserver.Postgres(t)
	db := newDB(t, srv, "qwrite")
	ctx := t.Context()
	s := openQuerySink(t, db, "devops")
	if s.DataRange().Known {
		t.Fatal("a data range before any data")
	}
	b := &sources.Batch{Queries: []sources.Query{testQuery(sources.Lastpoint)}}
	if _, err := s.Write(ctx, b); err != nil || b.Queries[0].Rows != 0 {
		t.Fatalf("lastpoint on no data: %v, %d rows; want no error, 0 rows", err, b.Queries[0].Rows)
	}
	// 5 hosts (0..4) of the 10 the query source knows.
	res := runEngine(ctx, t, prometheus.NewRegistry(), map[string]string{
		"SOAKD_W_SOURCE": "devops", "SOAKD_W_SCALE": "5", "SOAKD_W_SEED": "1",
		"SOAKD_W_START": qStart, "SOAKD_W_END": "+2h", "SOAKD_W_TARGET": db, "SOAKD_W_RATE": "max",
	})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if err := s.RefreshRange(ctx); err != nil || !s.DataRange().Known {
		t.Fatalf("RefreshRange: %v, %+v", err, s.DataRange())
	}
	sg := testQuery(sources.SingleGroupby111)
	sg.Devices[0] = 3
	b.Queries = []sources.Query{testQuery(sources.Lastpoint), sg}
	n, err := s.Write(ctx, b)
	if err != nil || b.Queries[0].Rows != 5 || b.Queries[1].Rows != 60 || n == 0 {
		t.Fatalf("Write: %v, %d bytes, rows %d and %d; want 5 hosts, 60 minutes", err, n, b.Queries[0].Rows, b.Queries[1].Rows)
	}
	sg.Devices[0] = 8 // not in the data
	b.Queries = []sources.Query{testQuery(sources.Lastpoint), sg, testQuery(sources.Lastpoint)}
	_, err = s.Write(ctx, b)
	if sinks.ClassOf(err) != sinks.Empty || sinks.Stored(err) != 1 || b.Queries[0].Rows != 5 {
		t.Fatalf("Write: %v (class %s, %d answered), first query %d rows; want class empty after 1 query of 5 rows",
			err, sinks.ClassOf(err), sinks.Stored(err), b.Queries[0].Rows)
	}
	if !strings.Contains(err.Error(), "single-groupby-1-1-1 returned no rows in [2016-01-01T00:") {
		t.Errorf("error %q does not say which query and window", err)
	}
	// A query the data set cannot answer is rejected.
	b.Queries = []sources.Query{testQuery(sources.LastLoc)}
	if _, err := s.Write(ctx, b); sinks.ClassOf(err) != sinks.Rejected {
		t.Errorf("an iot query on devops tables: %v, want rejected", err)
	}
}

// TestQueryBucketModes runs every query with each way of bucketing time
// the server has (time_bucket on TimescaleDB, date_bin on PostgreSQL 14+,
// epoch arithmetic on older servers) and compares the answers: the
// buckets are aligned alike.
func TestQueryBucketModes(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	for _, source := range []string{"devops", "iot"} {
		t.Run(source, func(t *testing.T) {
			db := newDB(t, srv, source+"_modes")
			loadQueryData(t, db, source, "dialect", "timescaledb")
			s := openQuerySink(t, withParams(db, "dialect", "timescaledb"), source)
			if s.q.mode != bucketTimeBucket {
				t.Fatalf("bucket mode %d on TimescaleDB, want time_bucket", s.q.mode)
			}
			for _, typ := range sources.QueryTypes(source) {
				if typ.Info().Bucket == 0 {
					continue
				}
				var want string
				for _, mode := range []bucketMode{bucketTimeBucket, bucketDateBin, bucketEpoch} {
					s.q.mode = mode
					q := testQuery(typ)
					res, err := s.QueryRows(t.Context(), &q)
					if err != nil {
						t.Fatalf("%s, mode %d: %v", typ, mode, err)
					}
					got := fmt.Sprint(sortedRows(res))
					if mode == bucketTimeBucket {
						want = got
					} else if got != want {
						t.Errorf("%s: mode %d answers\n%.300s\nwhere time_bucket answers\n%.300s", typ, mode, got, want)
					}
				}
			}
		})
	}
}

// sortedRows renders a result's rows as sorted strings, floats to 9
// significant digits.
func sortedRows(r *sinks.QueryResult) []string {
	var out []string
	for _, row := range r.Rows {
		var b strings.Builder
		for _, v := range row {
			switch v := v.(type) {
			case float64:
				fmt.Fprintf(&b, "%.9g|", v)
			case time.Time:
				b.WriteString(v.UTC().Format(time.RFC3339Nano) + "|")
			default:
				fmt.Fprintf(&b, "%v|", v)
			}
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

// TestQuerySQLGolden pins the SQL of every query type, in each layout,
// with time_bucket, and with epoch arithmetic for servers older than
// PostgreSQL 14 (not run live).
func TestQuerySQLGolden(t *testing.T) {
	t.Parallel()
	rng := sources.DataRange{Oldest: qT0.UnixNano(), Newest: qT0.Add(26*time.Hour - qInterval).UnixNano(), Known: true}
	for _, tc := range []struct {
		name   string
		layout Layout
		mode   bucketMode
	}{
		{"soakd", SoakdLayout, bucketTimeBucket},
		{"tsbs", TSBSLayout, bucketTimeBucket},
		{"soakd_epoch", SoakdLayout, bucketEpoch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, source := range []string{"devops", "iot"} {
				c := iot.DefaultQueryConfig()
				c.Scale = qScale
				src, err := iot.NewQueries(source+"-queries", c, 1)
				if err != nil {
					t.Fatal(err)
				}
				var plans []*plan
				for i, sc := range src.Schemas() {
					p, err := newPlan(i, Config{Dialect: TimescaleDB, Layout: tc.layout, Method: Copy}, sc)
					if err != nil {
						t.Fatal(err)
					}
					plans = append(plans, p)
				}
				s := &Sink{cfg: Config{Layout: tc.layout}}
				q, err := newQuerier(s, plans)
				if err != nil {
					t.Fatal(err)
				}
				q.mode = tc.mode
				for _, typ := range sources.QueryTypes(source) {
					qq := testQuery(typ)
					var sql strings.Builder
					if err := q.render(&sql, &qq, rng); err != nil {
						t.Fatal(err)
					}
					b.WriteString("-- " + typ.String() + "\n" + sql.String() + ";\n")
				}
			}
			file := "testdata/queries_" + tc.name + ".golden"
			got := b.String()
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -run TestQuerySQLGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("SQL differs from %s (check, then go test -run TestQuerySQLGolden -update):\n%s", file, got)
			}
		})
	}
}
