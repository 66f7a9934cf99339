package remotewrite

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// The query data set of these tests: cpu rows of qDevices hosts (host_3
// without a region) every 10 s for three hours, with three fields whose
// values are a function of host, step and field.
const (
	qDevices = 4
	qSteps   = 3 * 360
	qStep    = 10 * time.Second
)

var qFields = []string{"usage_user", "usage_system", "usage_idle"}

func qValue(dev, step, f int) float64 { return float64((dev*37+step*13+f*71)%1000) / 10 }

func qSchema() *sources.Schema {
	sc := &sources.Schema{Measurement: "cpu", TagKeys: []string{"hostname", "region"}, Tags: hostTagger{}}
	for _, f := range qFields {
		sc.Fields = append(sc.Fields, sources.Field{Name: f, Kind: sources.Float, Decimals: 1})
	}
	return sc
}

// writeQueryData writes the data set from start through a series sink
// for each of writes, the values of writes[i] raised by 1000 × i, batch by
// batch in time order (Prometheus refuses samples an hour older than its
// newest).
func writeQueryData(t *testing.T, start time.Time, writes ...string) {
	t.Helper()
	schemas := []*sources.Schema{qSchema()}
	var ss []*Sink
	for _, w := range writes {
		ss = append(ss, openSink(t, w, sinks.Options{Schemas: schemas, Workers: 1}))
	}
	b := sources.NewSeriesBatch(schemas)
	for step := 0; step < qSteps; step += 100 {
		for i, s := range ss {
			b.Reset()
			tb := b.Tables[0]
			for k := step; k < min(step+100, qSteps); k++ {
				for d := range qDevices {
					tb.Device = append(tb.Device, uint32(d))
					tb.Time = append(tb.Time, start.Add(time.Duration(k)*qStep).UnixNano())
					for f := range qFields {
						tb.Floats[f] = append(tb.Floats[f], qValue(d, k, f)+1000*float64(i))
					}
					b.NumValues += len(qFields)
				}
			}
			tb.PadNulls()
			if _, err := s.Write(context.Background(), b); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
	}
}

// expected computes the answer to q over the data set from its rows, as
// the README defines it: the whole buckets the window touches, the
// fields' maximum over the query's hosts (mean per host for
// double-groupby-*), one row per bucket (per host) with data;
// groupby-orderby-limit the five newest minutes, newest first; lastpoint
// each host's last values.
func expected(q *sources.Query, rng sources.DataRange, start time.Time) ([]string, [][]any) {
	info := q.Type.Info()
	host := func(d int) string { return fmt.Sprintf("host_%d", d) }
	if q.Type == sources.Lastpoint {
		cols := append([]string{"hostname", "region"}, qFields...)
		var rows [][]any
		for d := range qDevices {
			var region any
			if d != 3 {
				region = string(hostTagger{}.AppendTag(nil, uint32(d), 1))
			}
			row := []any{host(d), region}
			for f := range qFields {
				row = append(row, qValue(d, qSteps-1, f))
			}
			rows = append(rows, row)
		}
		return cols, rows
	}
	ws, we := q.Window(rng)
	b := info.Bucket.Milliseconds()
	first, last := ceilMs(ws), ceilMs(we)-1
	lo, hi := floorDiv(first, b)*b, floorDiv(last, b)*b+b
	n := min(info.Metrics, len(qFields))
	perHost := q.Type == sources.DoubleGroupby1 || q.Type == sources.DoubleGroupby5 || q.Type == sources.DoubleGroupbyAll
	picked := func(d int) bool {
		if perHost || q.Type == sources.GroupbyOrderbyLimit {
			return true
		}
		return slices.Contains(q.Devices[:q.NDevices], uint32(d))
	}
	type acc struct {
		host     string
		ms       int64
		max, sum []float64
		count    int
	}
	accs := map[string]*acc{}
	for step := range qSteps {
		ms := start.Add(time.Duration(step) * qStep).UnixMilli()
		if ms < lo || ms >= hi {
			continue
		}
		bk := floorDiv(ms, b) * b
		for d := range qDevices {
			if !picked(d) {
				continue
			}
			h := ""
			if perHost {
				h = host(d)
			}
			k := fmt.Sprint(h, bk)
			a := accs[k]
			if a == nil {
				a = &acc{host: h, ms: bk, max: make([]float64, n), sum: make([]float64, n)}
				for f := range a.max {
					a.max[f] = math.Inf(-1)
				}
				accs[k] = a
			}
			for f := range n {
				v := qValue(d, step, f)
				a.max[f] = max(a.max[f], v)
				a.sum[f] += v
			}
			a.count++
		}
	}
	list := make([]*acc, 0, len(accs))
	for _, a := range accs {
		list = append(list, a)
	}
	slices.SortFunc(list, func(x, y *acc) int { return cmp.Or(cmp.Compare(x.ms, y.ms), strings.Compare(x.host, y.host)) })
	var cols []string
	if perHost {
		cols = append(cols, "hostname")
	}
	cols = append(cols, "time")
	prefix := "max_"
	if perHost {
		prefix = "mean_"
	}
	for f := range n {
		cols = append(cols, prefix+qFields[f])
	}
	var rows [][]any
	for _, a := range list {
		var row []any
		if perHost {
			row = append(row, a.host)
		}
		row = append(row, time.UnixMilli(a.ms).UTC())
		for f := range n {
			if perHost {
				row = append(row, a.sum[f]/float64(a.count))
			} else {
				row = append(row, a.max[f])
			}
		}
		rows = append(rows, row)
	}
	if q.Type == sources.GroupbyOrderbyLimit {
		rows = rows[max(len(rows)-5, 0):]
		slices.Reverse(rows)
	}
	return cols, rows
}

// sameAnswer fails t unless got has the columns and rows of want, values
// within rounding.
func sameAnswer(t *testing.T, name string, gotCols []string, got [][]any, wantCols []string, want [][]any) {
	t.Helper()
	if !slices.Equal(gotCols, wantCols) {
		t.Errorf("%s: columns %v, want %v", name, gotCols, wantCols)
		return
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d:\n got  %v\n want %v", name, len(got), len(want), got, want)
		return
	}
	for i := range want {
		for j := range want[i] {
			g, w := got[i][j], want[i][j]
			gf, ok1 := g.(float64)
			wf, ok2 := w.(float64)
			gt, ok3 := g.(time.Time)
			wt, ok4 := w.(time.Time)
			switch {
			case ok1 && ok2 && near(gf, wf):
			case ok3 && ok4 && gt.Equal(wt):
			case !ok1 && !ok3 && g == w:
			default:
				t.Errorf("%s: row %d column %s is %v, want %v\n got  %v\n want %v", name, i, wantCols[j], g, w, got[i], want[i])
				return
			}
		}
	}
}

// openQuerySink opens and prepares a query sink over qSchema's data.
func openQuerySink(t *testing.T, write string) *Sink {
	t.Helper()
	s := openSink(t, write, sinks.Options{Kind: sources.Queries, Schemas: []*sources.Schema{qSchema()}, Workers: 1})
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return s
}

// Every query type with a PromQL form answers, on Prometheus 2.42,
// VictoriaMetrics and Prometheus v3 (its data written with 2.0), what the
// data set's rows say it should: the data's range exactly, then each
// type's rows, value for value, alone (QueryRows) and in a batch (Write
// counts the same rows).
func TestQueries(t *testing.T) {
	for _, mk := range []func(*testing.T) target{
		func(t *testing.T) target { return prometheusTarget(t, 0) },
		victoriaTarget,
		func(t *testing.T) target { return prometheus3Target(t, 0) },
	} {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			// Old enough that VictoriaMetrics shows it (-search.latencyOffset).
			start := time.Now().Add(-5 * time.Hour).Truncate(time.Hour).Add(7 * time.Second).UTC()
			write := tg.write + "?label=run:queries"
			// Another run's series, of other values, which the queries
			// must leave out.
			writeQueryData(t, start, write, tg.write+"?label=run:other")
			tg.flush(t)
			s := openQuerySink(t, write)
			rng := s.DataRange()
			newest := start.Add((qSteps - 1) * qStep)
			if !rng.Known || rng.Oldest != start.UnixNano() || rng.Newest != newest.UnixNano() {
				t.Fatalf("data range %+v, want %v..%v", rng, start, newest)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Errorf("Ping: %v", err)
			}
			defer func() {
				// A row written later moves the range's end, and only it.
				ws := openSink(t, write, sinks.Options{Schemas: []*sources.Schema{qSchema()}, Workers: 1})
				b := sources.NewSeriesBatch([]*sources.Schema{qSchema()})
				tb := b.Tables[0]
				later := newest.Add(time.Minute)
				tb.Device, tb.Time = append(tb.Device, 0), append(tb.Time, later.UnixNano())
				for f := range qFields {
					tb.Floats[f] = append(tb.Floats[f], 1)
				}
				tb.PadNulls()
				if _, err := ws.Write(t.Context(), b); err != nil {
					t.Fatal(err)
				}
				tg.flush(t)
				if err := s.RefreshRange(t.Context()); err != nil {
					t.Fatal(err)
				}
				if r := s.DataRange(); r.Oldest != rng.Oldest || r.Newest != later.UnixNano() {
					t.Errorf("data range %+v after a row at %v, want %v..%v", r, later, start, later)
				}
			}()
			for _, typ := range PromQLTypes() {
				for _, pos := range []float64{0, 0.5, 0.99} {
					q := sinktest.Query(typ)
					q.Pos = pos
					name := fmt.Sprintf("%s pos=%v", typ, pos)
					res, err := s.QueryRows(t.Context(), &q)
					if err != nil {
						text, _ := s.QueryText(&q)
						t.Fatalf("%s: %v\n%s", name, err, text)
					}
					cols, rows := expected(&q, rng, start)
					sameAnswer(t, name, res.Columns, res.Rows, cols, rows)
					if q.Rows != int64(len(res.Rows)) || len(rows) == 0 {
						t.Errorf("%s: %d rows counted, %d returned, %d expected", name, q.Rows, len(res.Rows), len(rows))
					}
					b := &sources.Batch{Queries: []sources.Query{sinktest.Query(typ), sinktest.Query(typ)}}
					b.Queries[0].Pos, b.Queries[1].Pos = pos, pos
					if n, err := s.Write(t.Context(), b); err != nil || n == 0 {
						t.Fatalf("%s: Write: %d bytes, %v", name, n, err)
					}
					for _, bq := range b.Queries {
						if bq.Rows != q.Rows {
							t.Errorf("%s: Write counted %d rows, QueryRows %d", name, bq.Rows, q.Rows)
						}
					}
				}
			}
		})
	}
}

// A query workload whose label= no written series carries (a typo, or
// another run's label) is told so, on Prometheus v3: every query fails
// with class empty, naming the metric and label=, and does not answer
// no rows as though the data were yet to come. A query workload on a
// target that holds nothing at all answers no rows and no error, as
// before any writer's first rows.
func TestQueryLabelsMatchNothing(t *testing.T) {
	tg := prometheus3Target(t, 0)
	ctx := t.Context()
	empty := openQuerySink(t, tg.write+"?label=run:queries")
	b := &sources.Batch{Queries: []sources.Query{sinktest.Query(sources.Lastpoint)}}
	if _, err := empty.Write(ctx, b); err != nil || b.Queries[0].Rows != 0 {
		t.Errorf("lastpoint on no data: %v, %d rows; want no error, 0 rows", err, b.Queries[0].Rows)
	}
	start := time.Now().Add(-5 * time.Hour).Truncate(time.Hour).Add(7 * time.Second).UTC()
	writeQueryData(t, start, tg.write+"?label=run:queries")
	tg.flush(t)
	s := openQuerySink(t, tg.write+"?label=run:typo")
	for _, typ := range []sources.QueryType{sources.Lastpoint, sources.SingleGroupby111} {
		b := &sources.Batch{Queries: []sources.Query{sinktest.Query(typ)}}
		_, err := s.Write(ctx, b)
		if sinks.ClassOf(err) != sinks.Empty || err == nil || !strings.Contains(err.Error(), "cpu_usage_user") ||
			!strings.Contains(err.Error(), "label=run:typo") {
			t.Errorf("%s with a label no series has: %v (class %s); want class empty naming the metric and label=", typ, err, sinks.ClassOf(err))
		}
	}
	if n := s.Notes(); len(n) != 1 || !strings.Contains(n[0], "no data found to query in the series of cpu_usage_user") || !strings.Contains(n[0], "label=run:typo") {
		t.Errorf("notes for the summary with a label no series has: %q", n)
	}
	if n := empty.Notes(); len(n) != 1 {
		t.Errorf("notes for the summary before the data came: %q", n)
	}
	if err := empty.RefreshRange(ctx); err != nil || !empty.DataRange().Known {
		t.Errorf("the right label's range: %v, %+v", err, empty.DataRange())
	}
	// Once data was found, the summary has nothing to say.
	if n := empty.Notes(); n != nil {
		t.Errorf("notes for the summary once the data was found: %q", n)
	}
}

// The query text is what is sent: a range query for the group-bys, with
// the bucket as step and window; an instant query for lastpoint.
func TestQueryText(t *testing.T) {
	s := openSink(t, "prom+http://127.0.0.1:1/api/v1/write?label=run:x", sinks.Options{Kind: sources.Queries, Schemas: []*sources.Schema{qSchema()}})
	q := sinktest.Query(sources.SingleGroupby181)
	text, err := s.QueryText(&q)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/api/v1/query_range?", "step=60.000", "max_over_time%28cpu_usage_user%7Brun%3D%22x%22%2Chostname%3D~%22host_1%7Chost_2"} {
		if !strings.Contains(text, want) {
			t.Errorf("single-groupby-1-8-1: %s lacks %s", text, want)
		}
	}
	q = sinktest.Query(sources.Lastpoint)
	if text, _ = s.QueryText(&q); !strings.HasPrefix(text, "/api/v1/query?") || !strings.Contains(text, "time=") {
		t.Errorf("lastpoint: %s, want an instant query", text)
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "/api/v1/query") {
		t.Errorf("Ping of a closed port: %v, want the query endpoint's failure", err)
	}
	q = sinktest.Query(sources.HighCPUAll)
	if _, err := s.QueryText(&q); err == nil || !strings.Contains(err.Error(), "high-cpu-all has no PromQL form") {
		t.Errorf("high-cpu-all: %v", err)
	}
}

// The types without a PromQL form are refused, named, at configuration.
func TestCheckQueries(t *testing.T) {
	if err := CheckQueries(nil, PromQLTypes()); err != nil {
		t.Errorf("PromQL types refused: %v", err)
	}
	err := CheckQueries(nil, []sources.QueryType{sources.Lastpoint, sources.HighCPU1, sources.LastLoc})
	if err == nil || !strings.Contains(err.Error(), "high-cpu-1, last-loc have no PromQL form") {
		t.Errorf("high-cpu-1 and last-loc: %v", err)
	}
}

// bisect ends on a span of at most the precision holding the point where
// the predicate turns true, and stops at the predicate's first error.
func TestBisect(t *testing.T) {
	for _, at := range []int64{1, 1234, 9999, 10000} {
		calls := 0
		lo, hi, err := bisect(0, 10000, 10, func(x int64) (bool, error) { calls++; return x >= at, nil })
		if err != nil || hi-lo > 10 || lo >= at || hi < at || calls > 11 {
			t.Errorf("turning at %d: (%d, %d], %v after %d calls", at, lo, hi, err, calls)
		}
	}
	boom := fmt.Errorf("down")
	if _, _, err := bisect(0, 10000, 10, func(int64) (bool, error) { return false, boom }); err != boom {
		t.Errorf("error: %v, want %v", err, boom)
	}
}
