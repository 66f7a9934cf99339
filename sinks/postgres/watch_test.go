package postgres

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// sizes reads one number through a connection of the test's own.
func sizeOf(t *testing.T, c *pgx.Conn, q string) float64 {
	t.Helper()
	var v float64
	if err := c.QueryRow(context.Background(), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

func near(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// TestWatchTableStorage: the table figure is pg_table_size of the sink's
// own tables (a name that needs quoting included, another table left
// out), grows with the rows written, and the WAL figure counts from the
// first reading.
func TestWatchTableStorage(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	db := newDB(t, srv, "watch")
	c := connect(t, db)
	if _, err := c.Exec(ctx, "CREATE TABLE other AS SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 50000) g"); err != nil {
		t.Fatal(err)
	}
	cpu, trucks := cpuSchema("cpu", 50), mixedSchema("Trucks", 9)
	s := openSink(t, db, nil, cpu, trucks)
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	before := sinktest.TargetFigures(t, s)
	for _, fig := range []string{"memory", "cpu"} {
		if !strings.Contains(before.Unavailable[fig], "SOAKD_<W>_WATCH_PROCESS") {
			t.Errorf("unavailable %s: %q", fig, before.Unavailable[fig])
		}
	}
	for _, kind := range []string{"table", "index", "database", "wal"} {
		if _, ok := before.Storage[kind]; !ok {
			t.Errorf("no %s storage: %+v", kind, before)
		}
	}
	if before.Storage["wal"] != 0 {
		t.Errorf("wal = %v at the first reading, want 0", before.Storage["wal"])
	}
	if other := sizeOf(t, c, "SELECT pg_table_size('other')::float8"); before.Storage["table"] >= other {
		t.Errorf("table = %.0f before any row: another table's %.0f bytes counted?", before.Storage["table"], other)
	}

	b := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
	fill(b.Tables[0], 50, 0, 20000, testBase, false)
	fill(b.Tables[1], 9, 0, 2000, testBase, true)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	after := sinktest.TargetFigures(t, s)
	table := sizeOf(t, c, `SELECT (pg_table_size('cpu') + pg_table_size('"Trucks"'))::float8`)
	index := sizeOf(t, c, `SELECT (pg_indexes_size('cpu') + pg_indexes_size('"Trucks"'))::float8`)
	if grew := after.Storage["table"] - before.Storage["table"]; grew < 1e6 {
		t.Errorf("table storage grew by %.0f bytes for 22000 rows", grew)
	}
	if !near(after.Storage["table"], table, 0.02) {
		t.Errorf("table = %.0f, pg_table_size read alone says %.0f", after.Storage["table"], table)
	}
	if !near(after.Storage["index"], index, 0.02) || index == 0 {
		t.Errorf("index = %.0f, pg_indexes_size read alone says %.0f", after.Storage["index"], index)
	}
	if after.Storage["wal"] < 1e6 {
		t.Errorf("wal = %.0f bytes after 22000 rows", after.Storage["wal"])
	}
	if after.Storage["database"] <= before.Storage["database"] {
		t.Errorf("database size did not grow: %.0f -> %.0f", before.Storage["database"], after.Storage["database"])
	}
}

// TestWatchTimescaleDB: a hypertable's storage is its chunks' (the parent
// holds no rows), and once chunks are compressed the compressed figure
// is reported. Compression is a Timescale-License feature: a TimescaleDB
// built without tsl/ (APACHE_ONLY, as install-timescaledb.sh builds it)
// refuses it, and the compressed case is skipped there.
func TestWatchTimescaleDB(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	ctx := t.Context()
	db := newDB(t, srv, "watchts")
	c := connect(t, db)
	cpu := cpuSchema("cpu", 3)
	s := openSink(t, withParams(db, "dialect", "timescaledb", "chunk_interval", "1h"), nil, cpu)
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	b := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(b.Tables[0], 3, 0, 3*360*5, testBase, false) // 5 chunks
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	f := sinktest.TargetFigures(t, s)
	chunks := sizeOf(t, c, `SELECT sum(pg_table_size(ch))::float8 FROM show_chunks('cpu') ch`)
	if parent := sizeOf(t, c, `SELECT pg_table_size('cpu')::float8`); parent >= chunks/10 {
		t.Fatalf("the hypertable's parent takes %.0f bytes, its chunks %.0f: nothing to tell apart", parent, chunks)
	}
	if !near(f.Storage["table"], chunks, 0.05) {
		t.Errorf("table = %.0f, the chunks' pg_table_size says %.0f", f.Storage["table"], chunks)
	}
	if _, ok := f.Storage["compressed"]; ok {
		t.Errorf("compressed figure without compression on: %+v", f.Storage)
	}

	t.Run("compressed", func(t *testing.T) {
		if _, err := c.Exec(ctx, `ALTER TABLE cpu SET (timescaledb.compress, timescaledb.compress_segmentby = 'hostname')`); err != nil {
			if strings.Contains(err.Error(), "license") {
				// The Apache-2.0 build has no compression.
				t.Skipf("this TimescaleDB cannot compress: %v", err)
			}
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `SELECT compress_chunk(ch) FROM show_chunks('cpu') ch`); err != nil {
			t.Fatal(err)
		}
		f := sinktest.TargetFigures(t, s)
		// Read apart, chunk by chunk (the sink sums the hypertable's):
		// the figures are the chunks' after and before compression, and
		// compressing made them smaller.
		after := sizeOf(t, c, `SELECT sum(after_compression_total_bytes)::float8 FROM chunk_compression_stats('cpu')`)
		before := sizeOf(t, c, `SELECT sum(before_compression_total_bytes)::float8 FROM chunk_compression_stats('cpu')`)
		if f.Storage["compressed"] != after || f.Storage["uncompressed"] != before || !(after > 0 && after < before) {
			t.Errorf("after compress_chunk: compressed %.0f, uncompressed %.0f; chunk_compression_stats says %.0f and %.0f",
				f.Storage["compressed"], f.Storage["uncompressed"], after, before)
		}
	})
}

// TestWatchRefused: a role that may not call pg_current_wal_insert_lsn gets the
// other figures, the WAL named unavailable, and no error.
func TestWatchRefused(t *testing.T) {
	srv := testserver.Postgres(t)
	db := newDB(t, srv, "watchrefused")
	testserver.PGExec(t, db,
		"CREATE ROLE soak LOGIN",
		"GRANT ALL ON SCHEMA public TO soak",
		"REVOKE EXECUTE ON FUNCTION pg_current_wal_insert_lsn() FROM PUBLIC")
	s := openSink(t, strings.Replace(db, "postgres@", "soak@", 1), nil, cpuSchema("cpu", 3))
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := sinktest.TargetFigures(t, s)
	if why := f.Unavailable["storage.wal"]; !strings.Contains(why, "permission denied") {
		t.Errorf("unavailable wal: %q", why)
	}
	if _, ok := f.Storage["table"]; !ok {
		t.Errorf("no table figure: %+v", f)
	}
}

func TestWatchServerDown(t *testing.T) {
	srv := testserver.Postgres(t)
	s := openSink(t, srv.URL, nil, cpuSchema("cpu", 3))
	sinktest.TargetFiguresServerDown(t, s, srv.Proc.Stop)
}

func TestWatchParseLSN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"0/0": 0, "16/B374D848": 0x16_B374D848, "FFFFFFFF/FFFFFFFF": math.MaxUint64} {
		if got, err := parseLSN(in); err != nil || got != want {
			t.Errorf("parseLSN(%q) = %x, %v; want %x", in, got, err, want)
		}
	}
	for _, in := range []string{"", "16", "x/1", "1/100000000"} {
		if _, err := parseLSN(in); err == nil {
			t.Errorf("parseLSN(%q) accepted", in)
		}
	}
}
