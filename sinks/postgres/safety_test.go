package postgres

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestOwnTablesOnly shows that the sink touches only its own tables: a
// foreign table with the same name as one of soakd's in another schema,
// and an unrelated table next to soakd's, keep their rows through
// Prepare, writes, Reset (soakd sweep's TRUNCATE) and Close, with
// schema=, with table_prefix= and with neither.
func TestOwnTablesOnly(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	cases := []struct {
		name   string
		params []string
		own    string // soakd's table, as SQL
	}{
		{"schema", []string{"schema", "soak test"}, `"soak test".cpu`},
		{"table_prefix", []string{"table_prefix", "soakd_"}, `public.soakd_cpu`},
		{"schema_and_prefix", []string{"schema", "soakd", "table_prefix", "run1_"}, `soakd.run1_cpu`},
		{"default", nil, `public.cpu`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := newDB(t, srv, "own_"+tc.name)
			c := connect(t, db)
			foreign := []string{"CREATE TABLE public.orders (id int)", "INSERT INTO public.orders SELECT generate_series(1, 10)"}
			if tc.own != "public.cpu" {
				// A table named like soakd's, not soakd's.
				foreign = append(foreign, "CREATE TABLE public.cpu (id int)", "INSERT INTO public.cpu SELECT generate_series(1, 7)")
			}
			for _, q := range foreign {
				if _, err := c.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			cpu := cpuSchema("cpu", 4)
			s := openSink(t, withParams(db, tc.params...), nil, cpu)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			b := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(b.Tables[0], 4, 0, 50, testBase, false)
			ownCount := func() int64 {
				var n int64
				if err := c.QueryRow(ctx, "SELECT count(*) FROM "+tc.own).Scan(&n); err != nil {
					t.Fatalf("count %s: %v", tc.own, err)
				}
				return n
			}
			foreignIntact := func(t *testing.T, when string) {
				t.Helper()
				if n := count(t, c, "orders"); n != 10 {
					t.Errorf("%s: the foreign table orders holds %d rows, want its 10", when, n)
				}
				if tc.own != "public.cpu" {
					if n := count(t, c, "cpu"); n != 7 {
						t.Errorf("%s: the foreign table public.cpu holds %d rows, want its 7", when, n)
					}
				}
			}
			sinktest.Reset(t, s, sinktest.ResetCase{
				Write: func(t *testing.T) {
					if _, err := s.Write(ctx, b); err != nil {
						t.Fatal(err)
					}
					if n := ownCount(); n != 50 {
						t.Fatalf("%s holds %d rows, want 50", tc.own, n)
					}
				},
				Count:   func(*testing.T) int { return int(ownCount()) },
				Foreign: foreignIntact,
			})
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			foreignIntact(t, "after Close")
			if n := ownCount(); n != 50 {
				t.Errorf("%s holds %d rows after Close, want 50 (Close deletes nothing)", tc.own, n)
			}
		})
	}
}

func TestSchemaParams(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"postgres://h/db?schema=", "schema"},
		{"postgres://h/db?schema=pg_catalog", "reserved"},
		{"postgres://h/db?schema=information_schema", "catalog views"},
		{"postgres://h/db?schema=_timescaledb_internal", "TimescaleDB's own"},
		{"postgres://h/db?schema=a%00b", `"a\x00b": holds a control character`},
		{"postgres://h/db?table_prefix=x%0A", `"x\n": holds a control character`},
		{"postgres://h/db?schema=_timescaledb_catalog", "TimescaleDB's own"},
		{"postgres://h/db?schema=timescaledb_information", "TimescaleDB's own"},
		{"postgres://h/db?schema=" + strings.Repeat("s", 64), "schema"},
		{"postgres://h/db?dialect=kwdb&schema=x", "ts_database"},
		{"postgres://h/db?table_prefix=", "table_prefix"},
		{"postgres://h/db?table_prefix=" + strings.Repeat("p", 33), "table_prefix"},
	} {
		_, _, err := ParseURL(mustURL(t, tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %s", tc.raw, err, tc.want)
		}
	}
	c, _, err := ParseURL(mustURL(t, "postgres://h/db?schema=soakd&table_prefix=x_"))
	if err != nil || c.Schema != "soakd" || c.TablePrefix != "x_" {
		t.Errorf("got %+v, %v", c, err)
	}
	p, err := newPlan(0, c, cpuSchema("cpu", 1))
	if err != nil {
		t.Fatal(err)
	}
	if p.table != `"soakd"."x_cpu"` {
		t.Errorf("table %s", p.table)
	}
	long := cpuSchema(strings.Repeat("m", 62), 1)
	if _, err := newPlan(0, c, long); err == nil || !strings.Contains(err.Error(), "63-byte") {
		t.Errorf("a prefixed name over 63 bytes: %v", err)
	}
}

// With dedup=true a row another unique index refuses is an error, not a
// row skipped as a duplicate: the conflict soakd skips is named, (device,
// time). Every insert method: a batch of 4 devices × 5 times into a table
// with a unique index on time alone. Bug caught: ON CONFLICT DO NOTHING
// without a target acknowledged the batch of 20 and stored 5.
func TestDedupSkipsOnlyItsOwnConflict(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run(method, func(t *testing.T) {
			db := newDB(t, srv, "dedup_own_"+method)
			cpu := cpuSchema("cpu", 4)
			s := openSink(t, withParams(db, "dedup", "true", "insert", method), nil, cpu)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			c := connect(t, db)
			if _, err := c.Exec(ctx, "CREATE UNIQUE INDEX cpu_time_only ON cpu (time)"); err != nil {
				t.Fatal(err)
			}
			b := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(b.Tables[0], 4, 0, 20, testBase, false)
			_, err := s.Write(ctx, b)
			n := count(t, c, "cpu")
			if err == nil {
				t.Fatalf("a batch of 20 rows acknowledged, %d stored: rows the other index refused were skipped as duplicates", n)
			}
			if !strings.Contains(err.Error(), "cpu_time_only") && !strings.Contains(err.Error(), "23505") {
				t.Errorf("error %v does not name the index or the unique violation", err)
			}
			if n != 0 {
				t.Errorf("%d rows stored of a batch that failed", n)
			}
		})
	}
}
