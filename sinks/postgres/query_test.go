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
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// loadQueryData writes source's query data set into db with the engine.
func loadQueryData(t *testing.T, db, source string, params ...string) {
	t.Helper()
	res := runEngine(t.Context(), t, prometheus.NewRegistry(), sinktest.QueryData(source, withParams(db, params...)))
	if res.err != nil || sumErrors(res.sum.Workloads[0].Errors) > 0 {
		t.Fatalf("loading %s: %v %v", source, res.err, res.sum.Workloads[0].Errors)
	}
}

// openQuerySink opens the sink for a query workload over source's data
// set and prepares it.
func openQuerySink(t *testing.T, raw, source string) *Sink {
	t.Helper()
	o := sinktest.QueryOptions(t, source)
	o.Logger = zaptest.NewLogger(t)
	s, err := New(mustURL(t, raw), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
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
							sinktest.Queries(t, s, source, sinktest.QueryCase{Columns: true,
								Check: func(t *testing.T, q *sources.Query, res *sinks.QueryResult, rng sources.DataRange) {
									counts[q.Type.String()] = append(counts[q.Type.String()], q.Rows)
									checkShape(t, s, q, res, layout)
								}})
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
	for d := range uint32(sinktest.QueryScale) {
		if string(sc.Tags.AppendTag(nil, d, 1)) == fleet {
			out = append(out, string(sc.Tags.AppendTag(nil, d, 0)))
		}
	}
	return out
}

// checkShape makes the checks of the answer res to q that are SQL's own,
// beyond sinktest.Queries': the single group-bys time and one column per
// metric, buckets aligned and ascending; the double ones a mean_ column
// per metric; high-cpu-1 only the host asked for; last-loc one row per
// truck of the fleet; high-load only trucks above 90% of their capacity;
// avg-vs-projected-fuel-consumption the models' consumption;
// avg-daily-driving-duration at most one row per truck. Every query type
// has a check.
func checkShape(t *testing.T, s *Sink, q *sources.Query, res *sinks.QueryResult, layout string) {
	t.Helper()
	info := q.Type.Info()
	rows := len(res.Rows)
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
		for m := range info.Metrics {
			col(t, res, "mean_"+s.q.cpu.schema.Fields[m].Name)
		}
	case sources.GroupbyOrderbyLimit, sources.Lastpoint, sources.LowFuel:
		// sinktest.Queries' checks are all.
	case sources.HighCPU1, sources.HighCPUAll:
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
		pc := col(t, res, "projected_fuel_consumption")
		for _, r := range res.Rows {
			if v := r[pc].(float64); v < 12 || v > 19 || math.IsNaN(v) {
				t.Errorf("%s: projected consumption %v, want between the models' 12 and 19", q.Type, v)
			}
		}
	case sources.AvgDailyDrivingDuration:
		if rows == 0 || rows > sinktest.QueryScale {
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
}

// TestQueryWrite runs query batches through Write, as the engine does
// (sinktest.QueryWrite).
func TestQueryWrite(t *testing.T) {
	srv := testserver.Postgres(t)
	db := newDB(t, srv, "qwrite")
	s := openQuerySink(t, db, "devops")
	sinktest.QueryWrite(t, s, func(t *testing.T) {
		env := sinktest.QueryData("devops", db)
		env["SOAKD_W_SCALE"], env["SOAKD_W_END"] = "5", "+2h"
		delete(env, "SOAKD_W_WORKERS")
		delete(env, "SOAKD_W_BATCH_SIZE")
		if res := runEngine(t.Context(), t, prometheus.NewRegistry(), env); res.err != nil {
			t.Fatal(res.err)
		}
	})
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
					q := sinktest.Query(typ)
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
	rng := sources.DataRange{Oldest: sinktest.QueryStart.UnixNano(), Newest: sinktest.QueryStart.Add(26*time.Hour - sinktest.QueryInterval).UnixNano(), Known: true}
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
				c.Scale = sinktest.QueryScale
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
				q, err := newQuerier(s, plans, nil)
				if err != nil {
					t.Fatal(err)
				}
				q.mode = tc.mode
				for _, typ := range sources.QueryTypes(source) {
					qq := sinktest.Query(typ)
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

// A query workload over a data set with CHURN finds the data's whole
// range and rows for every query naming hosts, in both layouts.
func TestChurnedQueries(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	for _, layout := range []string{"soakd", "tsbs"} {
		t.Run(layout, func(t *testing.T) {
			db := newDB(t, srv, "devops_churn_q_"+layout)
			params := []string{"dialect", "timescaledb", "layout", layout}
			res := runEngine(t.Context(), t, prometheus.NewRegistry(), sinktest.ChurnQueryData(withParams(db, params...), sinktest.QueryStart, 13*time.Hour))
			if res.err != nil || sumErrors(res.sum.Workloads[0].Errors) > 0 {
				t.Fatalf("loading: %v %v", res.err, res.sum.Workloads[0].Errors)
			}
			o := sinktest.ChurnQueryOptions(t)
			o.Logger = zaptest.NewLogger(t)
			s, err := New(mustURL(t, withParams(db, params...)), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			if err := s.Prepare(t.Context()); err != nil {
				t.Fatal(err)
			}
			sinktest.ChurnQueries(t, s, sinktest.QueryStart, 13*time.Hour, sinktest.QueryCase{})
		})
	}
}
