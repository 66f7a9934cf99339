package crosscheck

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/influx"
	"github.com/soakd/soakd/sinks/postgres"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// querySink is what both query sinks offer the test.
type querySink interface {
	sinks.Sink
	sinks.Preparer
	sinks.Querier
}

func plugins() *config.Plugins {
	r := sinks.NewRegistry()
	kinds := []sources.Kind{sources.Series, sources.Queries}
	r.Add(sinks.Entry{Schemes: []string{"postgres"}, Kinds: kinds, Open: postgres.Open, Check: postgres.Check})
	r.Add(sinks.Entry{Schemes: []string{"influx1"}, Kinds: kinds, Open: influx.Open, Check: influx.Check})
	return &config.Plugins{Sinks: r, Builtin: map[sources.Kind]string{}, Sources: sources.NewRegistry(sources.Register(sources.Spec[iot.Config]{
		Names: iot.Names(), Kind: sources.Series,
		Validate: func(c *iot.Config, w sources.Common) error { return iot.Defaults(w.Source, *c).Validate() },
		New: func(c *iot.Config, w sources.Common) (sources.Source, error) {
			return iot.New(w.Source, *c, w.Seed, w.Shard)
		},
	}))}
}

// dataSet is how each data set is written: devops 10 hosts every 10 s for
// 13 hours; iot 40 trucks every 5 minutes for 158 hours, when about half
// the trucks, which all start full and drain alike, run low on fuel (so
// low-fuel finds some), without missing values (InfluxQL and SQL count a
// missing value differently).
var dataSet = map[string]map[string]string{
	"devops": {"SCALE": "10", "INTERVAL": "10s", "END": "+13h"},
	"iot":    {"SCALE": "40", "INTERVAL": "5m", "END": "+158h", "MISSING": "none"},
}

// load writes source's data set into both targets in one engine run.
func load(t *testing.T, source string, targets map[string]string) {
	t.Helper()
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "pg,influx"}
	for w, target := range targets {
		p := config.Prefix(w)
		env[p+"SOURCE"], env[p+"TARGET"], env[p+"SEED"] = source, target, "3"
		env[p+"START"], env[p+"RATE"], env[p+"BATCH_SIZE"], env[p+"WORKERS"] = "2016-01-01T00:00:00Z", "max", "5000", "2"
		for k, v := range dataSet[source] {
			env[p+k] = v
		}
	}
	p := plugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	sum, err := daemon.Run(t.Context(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range sum.Workloads {
		for c, n := range w.Errors {
			if n > 0 {
				t.Fatalf("loading %s into %s: %d %s errors: %v", source, w.Name, n, c, w.LastError)
			}
		}
	}
}

func open(t *testing.T, raw, source string) querySink {
	t.Helper()
	c := iot.DefaultQueryConfig()
	fmt.Sscan(dataSet[source]["SCALE"], &c.Scale)
	src, err := iot.NewQueries(source+"-queries", c, 3)
	if err != nil {
		t.Fatal(err)
	}
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	o := sinks.Options{Kind: sources.Queries, Workers: 1, Schemas: src.Schemas(), Logger: zap.NewNop()}
	var s sinks.Sink
	if strings.HasPrefix(raw, "postgres") {
		s, err = postgres.Open(t.Context(), u, o)
	} else {
		s, err = influx.Open(t.Context(), u, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	qs := s.(querySink)
	if err := qs.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return qs
}

// variants are the queries of type typ compared: windows early, in the
// middle and late in the data; several hosts; every fleet.
func variants(typ sources.QueryType, scale int) []sources.Query {
	var out []sources.Query
	info := typ.Info()
	for i, pos := range []float64{0.1, 0.5, 0.9} {
		for f, fleet := range []string{"East", "West", "North", "South"} {
			if !info.Fleet && f > 0 {
				break
			}
			q := sources.Query{Type: typ, Pos: pos, Fleet: fleet, LoadCapacities: []string{"2000", "5000", "1500"}}
			for q.NDevices < uint8(info.Devices) {
				q.Devices[q.NDevices] = uint32((3*i + 2*int(q.NDevices) + 1) % scale)
				q.NDevices++
			}
			out = append(out, q)
		}
		if info.Window == 0 && !info.Fleet {
			break // the same query three times
		}
	}
	return out
}

// TestSQLAndInfluxQLAgree writes the devops and iot data sets into
// PostgreSQL and InfluxDB 1.8 and runs every query type, in several
// variants, on both: the SQL and the InfluxQL answer the same rows, value
// for value (every column of the SQL answer is in the InfluxQL one).
func TestSQLAndInfluxQLAgree(t *testing.T) {
	pg, ix := testserver.Postgres(t), testserver.Influx(t)
	for _, source := range []string{"devops", "iot"} {
		t.Run(source, func(t *testing.T) {
			db := source + "_cross"
			targets := map[string]string{
				"pg":     pg.CreateDatabase(t, db),
				"influx": "influx1://" + ix.Addr + "?db=" + db,
			}
			load(t, source, targets)
			sql, iql := open(t, targets["pg"], source), open(t, targets["influx"], source)
			if a, b := sql.DataRange(), iql.DataRange(); a != b || !a.Known {
				t.Fatalf("data ranges differ: SQL %+v, InfluxQL %+v", a, b)
			}
			var scale int
			fmt.Sscan(dataSet[source]["SCALE"], &scale)
			nonEmpty := map[sources.QueryType]bool{}
			for _, typ := range sources.QueryTypes(source) {
				for _, q := range variants(typ, scale) {
					name := fmt.Sprintf("%s pos=%.1f fleet=%s devices=%v", typ, q.Pos, q.Fleet, q.Devices[:q.NDevices])
					q1, q2 := q, q
					a, err := sql.QueryRows(t.Context(), &q1)
					if err != nil {
						t.Fatalf("%s: SQL: %v", name, err)
					}
					b, err := iql.QueryRows(t.Context(), &q2)
					if err != nil {
						t.Fatalf("%s: InfluxQL: %v", name, err)
					}
					if q1.Rows != q2.Rows {
						t.Errorf("%s: SQL %d rows, InfluxQL %d", name, q1.Rows, q2.Rows)
					}
					compare(t, name, a, b)
					nonEmpty[typ] = nonEmpty[typ] || q1.Rows > 0
				}
			}
			for _, typ := range sources.QueryTypes(source) {
				if !nonEmpty[typ] {
					t.Errorf("%s: no variant found any rows: the comparison proves little", typ)
				}
			}
		})
	}
}

// compare fails t unless every row of the SQL answer a is in the InfluxQL
// answer b, on a's columns, and the other way round.
func compare(t *testing.T, name string, a, b *sinks.QueryResult) {
	t.Helper()
	if len(a.Rows) == 0 && len(b.Rows) == 0 {
		return
	}
	idx := make([]int, len(a.Columns))
	for i, c := range a.Columns {
		idx[i] = slices.Index(b.Columns, c)
		if idx[i] < 0 {
			t.Errorf("%s: column %s of the SQL answer is not in the InfluxQL one %v", name, c, b.Columns)
			return
		}
	}
	ra := render(a.Rows, nil)
	rb := render(b.Rows, idx)
	if len(ra) != len(rb) {
		t.Errorf("%s: SQL %d rows, InfluxQL %d", name, len(ra), len(rb))
		return
	}
	for i := range ra {
		if !sameRow(ra[i].vals, rb[i].vals) {
			t.Errorf("%s: row %d differs on %v:\n SQL      %v\n InfluxQL %v", name, i, a.Columns, ra[i].vals, rb[i].vals)
			return
		}
	}
}

type keyed struct {
	key  string
	vals []any
}

// render picks columns idx (all when nil) of each row and sorts the rows
// by their values, floats rounded to 6 digits.
func render(rows [][]any, idx []int) []keyed {
	out := make([]keyed, len(rows))
	for r, row := range rows {
		var vals []any
		if idx == nil {
			vals = row
		} else {
			for _, i := range idx {
				vals = append(vals, row[i])
			}
		}
		var b strings.Builder
		for _, v := range vals {
			switch v := v.(type) {
			case float64:
				fmt.Fprintf(&b, "%.6g|", v)
			case time.Time:
				b.WriteString(v.UTC().Format(time.RFC3339Nano) + "|")
			default:
				fmt.Fprintf(&b, "%v|", v)
			}
		}
		out[r] = keyed{b.String(), vals}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func sameRow(a, b []any) bool {
	for i := range a {
		x, y := a[i], b[i]
		fx, okx := x.(float64)
		fy, oky := y.(float64)
		switch {
		case okx && oky:
			if math.Abs(fx-fy) > 1e-9*math.Max(1, math.Abs(fx)) {
				return false
			}
		case okx || oky:
			return false
		default:
			tx, okx := x.(time.Time)
			ty, oky := y.(time.Time)
			if okx && oky {
				if !tx.Equal(ty) {
					return false
				}
			} else if x != y {
				return false
			}
		}
	}
	return true
}
