package postgres

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// readRowsTSBS reads s's table in the TSBS layout, joined with the tags
// table, rendered like expectRows (integer fields, stored as doubles, as
// integers).
func readRowsTSBS(t testing.TB, conn *pgx.Conn, s *sources.Schema) []row {
	t.Helper()
	cols := []string{"(extract(epoch from d." + quote(timeColumn) + ") * 1000000)::bigint::text"}
	for _, k := range s.TagKeys {
		cols = append(cols, "tg."+quote(k)+"::text")
	}
	for _, f := range s.Fields {
		if f.Kind == sources.Int {
			cols = append(cols, "d."+quote(f.Name)+"::bigint::text")
		} else {
			cols = append(cols, "to_hex(('x' || encode(float8send(d."+quote(f.Name)+"), 'hex'))::bit(64)::bigint)")
		}
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + quote(s.Measurement) + " d JOIN tags tg ON tg.id = d.tags_id"
	rs, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("cannot read %s: %v", s.Measurement, err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		vals := make([]*string, len(cols))
		dst := make([]any, len(cols))
		for i := range vals {
			dst[i] = &vals[i]
		}
		if err := rs.Scan(dst...); err != nil {
			t.Fatalf("scan %s: %v", s.Measurement, err)
		}
		r := row{}
		for _, v := range vals {
			if v == nil {
				r.cols = append(r.cols, "NULL")
			} else {
				r.cols = append(r.cols, *v)
			}
		}
		r.key = r.cols[1+s.DeviceTag] + "@" + r.cols[0]
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("read %s: %v", s.Measurement, err)
	}
	return out
}

// dataSet generates the whole data set of source (scale devices, 30
// minutes from 2016-01-01, seed 7) as expectRows renders it, per table.
func dataSet(t *testing.T, source string, scale int, end string) (sources.Source, [][]row) {
	t.Helper()
	c := iot.DefaultConfig()
	c.Scale = scale
	if err := c.Start.UnmarshalText([]byte("2016-01-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if err := c.End.UnmarshalText([]byte(end)); err != nil {
		t.Fatal(err)
	}
	src, err := iot.New(source, c, 7, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]row, len(src.Schemas()))
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	for {
		b.Reset()
		err := st.Fill(b, 1000, 0)
		for i, tb := range b.Tables {
			want[i] = append(want[i], expectRows(tb)...)
		}
		if err != nil {
			break
		}
	}
	return src, want
}

// TestTSBSLayout writes the devops and iot data sets through the engine
// with layout=tsbs into PostgreSQL and TimescaleDB: one tags table with a
// row per device (numeric tags as numbers), every row of the data set in
// its table with the right tags_id, TSBS's indexes and only those, and on
// TimescaleDB hypertables with TSBS's 12-hour chunks.
func TestTSBSLayout(t *testing.T) {
	servers := map[string]func(testing.TB, ...testserver.PostgresOption) *testserver.Server{"postgres": testserver.Postgres, "timescaledb": testserver.TimescaleDB}
	for _, server := range []string{"postgres", "timescaledb"} {
		t.Run(server, func(t *testing.T) {
			srv := servers[server](t)
			for _, source := range []string{"devops", "iot"} {
				t.Run(source, func(t *testing.T) {
					const scale = 12
					src, want := dataSet(t, source, scale, "+30m")
					db := newDB(t, srv, source+"_tsbs")
					reg := prometheus.NewRegistry()
					res := runEngine(t.Context(), t, reg, map[string]string{
						"SOAKD_W_SOURCE": source, "SOAKD_W_SCALE": fmt.Sprint(scale), "SOAKD_W_SEED": "7",
						"SOAKD_W_START": "2016-01-01T00:00:00Z", "SOAKD_W_END": "+30m",
						"SOAKD_W_TARGET": withParams(db, "dialect", server, "layout", "tsbs"),
						"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "3", "SOAKD_W_BATCH_SIZE": "500",
					})
					if res.err != nil {
						t.Fatal(res.err)
					}
					if w := res.sum.Workloads[0]; sumErrors(w.Errors) > 0 {
						t.Errorf("errors: %v (%v)", w.Errors, w.LastError)
					}
					conn := connect(t, db)
					sc := src.Schemas()[0]
					dev := quote(sc.TagKeys[sc.DeviceTag])
					var tags, names int
					if err := conn.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT "+dev+") FROM tags").Scan(&tags, &names); err != nil {
						t.Fatal(err)
					}
					if tags != scale || names != scale {
						t.Errorf("tags table: %d rows, %d devices; want one row per device, %d", tags, names, scale)
					}
					for i, s := range src.Schemas() {
						sameRows(t, s.Measurement, readRowsTSBS(t, conn, s), want[i])
						var idx []string
						rows, err := conn.Query(t.Context(), "SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY 1", s.Measurement)
						if err != nil {
							t.Fatal(err)
						}
						if idx, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
							t.Fatal(err)
						}
						if wantIdx := []string{s.Measurement + "_tags_id_time_idx", s.Measurement + "_time_idx"}; !slices.Equal(idx, wantIdx) {
							t.Errorf("%s has indexes %v, want TSBS's %v", s.Measurement, idx, wantIdx)
						}
						if server == "timescaledb" {
							if hyper, interval, _ := hypertableInfo(t, conn, s.Measurement); !hyper || interval.Hours() != 12 {
								t.Errorf("%s: hypertable %v with %v chunks, want TSBS's 12h", s.Measurement, hyper, interval)
							}
						}
					}
					if source == "iot" {
						var typ string
						if err := conn.QueryRow(t.Context(), `SELECT data_type FROM information_schema.columns
							WHERE table_name = 'tags' AND column_name = 'load_capacity'`).Scan(&typ); err != nil || typ != "double precision" {
							t.Errorf("tags.load_capacity is %q (%v), want double precision as TSBS's float32 tags", typ, err)
						}
					}
				})
			}
		})
	}
}

// TestTSBSLayoutForeignTables writes into tables made by
// tsbs_load_timescaledb's own DDL, whose tags table already holds a host
// with other tag values: soakd checks the columns, keeps that host's id,
// and adds the others.
func TestTSBSLayoutForeignTables(t *testing.T) {
	srv := testserver.Postgres(t)
	db := newDB(t, srv, "tsbs_made")
	conn := connect(t, db)
	ctx := t.Context()
	for _, q := range []string{
		"CREATE TABLE tags(id SERIAL PRIMARY KEY, hostname TEXT, region TEXT, datacenter TEXT)",
		"CREATE UNIQUE INDEX uniq1 ON tags(hostname,region,datacenter)",
		"CREATE INDEX ON tags(hostname)",
		`CREATE TABLE cpu (time timestamptz, tags_id integer, usage_user DOUBLE PRECISION,usage_system DOUBLE PRECISION,usage_idle DOUBLE PRECISION,usage_nice DOUBLE PRECISION,usage_iowait DOUBLE PRECISION,usage_irq DOUBLE PRECISION,usage_softirq DOUBLE PRECISION,usage_steal DOUBLE PRECISION,usage_guest DOUBLE PRECISION,usage_guest_nice DOUBLE PRECISION, additional_tags JSONB DEFAULT NULL)`,
		`CREATE INDEX ON cpu(tags_id, "time" DESC)`,
		`CREATE INDEX ON cpu("time" DESC)`,
		"INSERT INTO tags (hostname, region, datacenter) VALUES ('host_0', 'eu-west-1', 'eu-west-1a'), ('host_0', 'us-east-1', 'us-east-1a')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cpu := cpuSchema("cpu", 5)
	s := openSink(t, withParams(db, "layout", "tsbs"), nil, cpu)
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	b := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(b.Tables[0], 5, 0, 500, testBase, true)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	var id0 int
	if err := conn.QueryRow(ctx, "SELECT DISTINCT tags_id FROM cpu c WHERE tags_id IN (SELECT id FROM tags WHERE hostname = 'host_0')").Scan(&id0); err != nil || id0 != 1 {
		t.Errorf("host_0's rows have tags_id %d (%v), want the smallest id of host_0, 1", id0, err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM tags").Scan(&n); err != nil || n != 6 {
		t.Errorf("%d tags rows (%v), want the 2 there and 4 new hosts", n, err)
	}
	if got := count(t, conn, "cpu"); got != 500 {
		t.Errorf("%d rows stored, want 500", got)
	}
}

// A tags table left by a run of another source (trucks' tags where cpu
// writes hostname, region, datacenter) is refused naming the columns it
// lacks and the way out, before soakd indexes a column it does not have.
func TestTSBSLayoutTagsOfAnotherSource(t *testing.T) {
	srv := testserver.Postgres(t)
	db := newDB(t, srv, "tsbs_other_tags")
	ctx := t.Context()
	if err := openSink(t, withParams(db, "layout", "tsbs"), nil, mixedSchema("trucks", 3)).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	err := openSink(t, withParams(db, "layout", "tsbs"), nil, cpuSchema("cpu", 3)).Prepare(ctx)
	want := `table "tags" exists but lacks columns "hostname", "region", "datacenter" (`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "use another database") {
		t.Fatalf("Prepare: %v\nwant %s... and the way out", err, want)
	}
	if c, retry := classOf(t, err); c != sinks.Rejected || retry {
		t.Errorf("class %s retry %v, want rejected, no retry", c, retry)
	}
	var n int
	if err := connect(t, db).QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname IN ('tags_hostname_idx', 'cpu')").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d of the cpu table and its tags index made (%v), want none", n, err)
	}
}

// layout=tsbs needs tables that share their tags.
func TestTSBSLayoutSchemas(t *testing.T) {
	_, err := New(mustURL(t, "postgres://h/db?layout=tsbs"), optionsFor(cpuSchema("cpu", 2), mixedSchema("trucks", 2)))
	if err == nil || !strings.Contains(err.Error(), "every table must have the same tags") {
		t.Errorf("New: %v, want the differing tags reported", err)
	}
	tagsTable := cpuSchema("tags", 2)
	_, err = New(mustURL(t, "postgres://h/db?layout=tsbs"), optionsFor(tagsTable))
	if err == nil || !strings.Contains(err.Error(), "cannot have that name") {
		t.Errorf("New: %v, want the table named tags refused", err)
	}
	// A row of the massive source's largest COLUMNS does not fit in a
	// page with TSBS's NULL additional_tags: refused before any write.
	_, err = New(mustURL(t, "postgres://h/db?layout=tsbs"), optionsFor(massiveSchema(2, 1000, sources.Float)))
	if err == nil || !strings.Contains(err.Error(), "a row of massive's 1000 fields takes 8168 bytes, more than the 8160 of a PostgreSQL page") ||
		!strings.Contains(err.Error(), "COLUMNS; 999 fit") {
		t.Errorf("New: %v, want the row too wide for a page refused, naming COLUMNS", err)
	}
	s, err := New(mustURL(t, "postgres://h/db?layout=tsbs"), optionsFor(massiveSchema(2, 999, sources.Float)))
	if err != nil {
		t.Errorf("New with 999 fields: %v", err)
	} else {
		s.Close(t.Context())
	}
	u, _ := url.Parse("postgres://h/db?layout=tsbs&dedup=true")
	if err := Check(u, sources.Series); err == nil {
		t.Error("dedup with layout=tsbs accepted")
	}
	_ = sinks.Options{}
}

// The tags id caches stay bounded whatever the devices a run brings
// (CHURN): a writer's copy starts afresh at maxWriterTagIDs, the shared
// one at maxTagIDs, and both keep answering for the ids put since.
func TestTagIDCachesBounded(t *testing.T) {
	w := &writer{tagIDs: map[uint32]int32{}}
	var shared tagIDs
	for d := uint32(0); d < 3*maxTagIDs; d++ {
		w.trimTags()
		if w.tagIDs == nil {
			w.tagIDs = map[uint32]int32{}
		}
		w.tagIDs[d] = int32(d)
		shared.put(d, int32(d))
		if len(w.tagIDs) > maxWriterTagIDs || len(shared.ids) > maxTagIDs {
			t.Fatalf("after %d devices: a writer holds %d ids, the sink %d", d+1, len(w.tagIDs), len(shared.ids))
		}
	}
	last := uint32(3*maxTagIDs - 1)
	if id, ok := shared.get(last); !ok || id != int32(last) {
		t.Errorf("the shared cache lost the last id put: %d, %v", id, ok)
	}
	if w.tagIDs[last] != int32(last) {
		t.Errorf("the writer lost the last id put")
	}
}
