package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// newDB creates a database on srv and returns srv's URL pointing at it,
// so that subtests sharing a server do not share tables.
func newDB(t *testing.T, srv *testserver.Server, name string) string {
	t.Helper()
	c := connect(t, srv.URL)
	if _, err := c.Exec(context.Background(), "CREATE DATABASE "+quote(name)); err != nil {
		t.Fatalf("cannot create database %s: %v", name, err)
	}
	return strings.Replace(srv.URL, "/postgres?", "/"+name+"?", 1)
}

func connect(t *testing.T, raw string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatalf("cannot connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func openSink(t *testing.T, raw string, log *zap.Logger, schemas ...*sources.Schema) *Sink {
	t.Helper()
	if log == nil {
		log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	s, err := New(mustURL(t, raw), sinks.Options{Kind: sources.Series, Workers: 4, Schemas: schemas, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func count(t *testing.T, c *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM "+quote(table)).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func classOf(t *testing.T, err error) (sinks.Class, bool) {
	t.Helper()
	var se *sinks.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *sinks.Error", err, err)
	}
	return se.Class, se.Retry
}

// TestWriteReadBack writes multi-table and single-table batches with every
// insert method, with and without dedup, and compares every stored value
// with what was written; Prepare runs twice to show it is idempotent.
func TestWriteReadBack(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	for _, method := range []string{"copy", "insert", "unnest"} {
		for _, dedup := range []bool{false, true} {
			name := fmt.Sprintf("%s_dedup_%v", method, dedup)
			t.Run(name, func(t *testing.T) {
				db := newDB(t, srv, name)
				cpu, trucks := cpuSchema("cpu", 50), mixedSchema("Trucks", 9)
				s := openSink(t, withParams(db, "insert", method, "dedup", fmt.Sprint(dedup)), nil, cpu, trucks)
				for i := range 2 {
					if err := s.Prepare(ctx); err != nil {
						t.Fatalf("Prepare #%d: %v", i+1, err)
					}
				}
				b1 := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
				fill(b1.Tables[0], 50, 0, 9000, testBase, false) // INSERT: 2 x 4096 rows + 512 + 256 + 128 + 8
				fill(b1.Tables[1], 9, 0, 300, testBase, true)
				b2 := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
				fill(b2.Tables[0], 50, 9000, 1, testBase, false)
				b3 := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
				fill(b3.Tables[1], 9, 300, 4097, testBase, true) // a full 4096-row INSERT and one more
				for i, b := range []*sources.Batch{b1, b2, b3} {
					n, err := s.Write(ctx, b)
					if err != nil {
						t.Fatalf("write %d: %v", i+1, err)
					}
					if n <= 0 {
						t.Errorf("write %d reported %d bytes", i+1, n)
					}
				}
				c := connect(t, db)
				wantCPU := append(expectRows(b1.Tables[0]), expectRows(b2.Tables[0])...)
				wantTrucks := append(expectRows(b1.Tables[1]), expectRows(b3.Tables[1])...)
				sameRows(t, "cpu", readRows(t, c, cpu), wantCPU)
				sameRows(t, "Trucks", readRows(t, c, trucks), wantTrucks)

				// Re-sending: stored once with dedup, twice without.
				if _, err := s.Write(ctx, b1); err != nil {
					t.Fatalf("re-send: %v", err)
				}
				if _, err := s.Write(ctx, b3); err != nil {
					t.Fatalf("re-send: %v", err)
				}
				if dedup {
					sameRows(t, "cpu after re-send", readRows(t, c, cpu), wantCPU)
					sameRows(t, "Trucks after re-send", readRows(t, c, trucks), wantTrucks)
				} else if got, want := count(t, c, "cpu"), int64(len(wantCPU)+b1.Tables[0].Len()); got != want {
					t.Errorf("without dedup, re-sent rows are stored again: %d rows, want %d", got, want)
				}
			})
		}
	}
}

// TestPrepare covers concurrent creation, create=false, tables made by
// someone else, and a dedup run against a table made without dedup.
func TestPrepare(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()

	t.Run("concurrent", func(t *testing.T) {
		db := newDB(t, srv, "concurrent")
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			s := openSink(t, db, nil, cpuSchema("cpu", 3), mixedSchema("trucks", 3))
			wg.Go(func() { errs[i] = s.Prepare(ctx) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Prepare %d: %v", i, err)
			}
		}
		var idx int
		c := connect(t, db)
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'cpu' AND indexname = 'cpu_hostname_time_idx'`).Scan(&idx); err != nil || idx != 1 {
			t.Errorf("device/time index: %d (%v), want 1", idx, err)
		}
	})

	t.Run("create=false", func(t *testing.T) {
		db := newDB(t, srv, "nocreate")
		s := openSink(t, withParams(db, "create", "false"), nil, cpuSchema("cpu", 3))
		err := s.Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("Prepare: %v, want table does not exist", err)
		}
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("class %s retry %v, want rejected, no retry", c, retry)
		}
		c := connect(t, db)
		if _, err := c.Exec(ctx, "SELECT 1 FROM cpu"); err == nil {
			t.Error("create=false created the table")
		}
	})

	t.Run("foreign table", func(t *testing.T) {
		db := newDB(t, srv, "foreign")
		c := connect(t, db)
		// The shape tsbs_load_timescaledb gives its cpu table.
		if _, err := c.Exec(ctx, `CREATE TABLE cpu (time timestamptz, tags_id integer, hostname text, usage_user double precision)`); err != nil {
			t.Fatal(err)
		}
		s := openSink(t, db, nil, cpuSchema("cpu", 3))
		err := s.Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), `lacks columns "region", "datacenter", "usage_system"`) {
			t.Fatalf("Prepare: %v, want the missing columns listed", err)
		}
	})

	t.Run("foreign table of other types", func(t *testing.T) {
		// Every column soakd writes is there, one of another type:
		// binary COPY of a float8 into a bigint is taken without a word
		// and stores garbage, so it must be refused at Prepare, before
		// soakd indexes the table.
		db := newDB(t, srv, "othertypes")
		c := connect(t, db)
		cpu := cpuSchema("cpu", 3)
		if err := openSink(t, db, nil, cpu).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `DROP INDEX cpu_hostname_time_idx; ALTER TABLE cpu ALTER COLUMN usage_user TYPE bigint`); err != nil {
			t.Fatal(err)
		}
		err := openSink(t, db, nil, cpu).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), `"usage_user" is bigint, not double precision`) {
			t.Fatalf("Prepare: %v, want the column of another type named", err)
		}
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("class %s retry %v, want rejected, no retry", c, retry)
		}
		var idx int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'cpu'`).Scan(&idx); err != nil || idx != 0 {
			t.Errorf("indexes on the refused table: %d (%v), want none made", idx, err)
		}
		err = openSink(t, withParams(db, "create", "false"), nil, cpu).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), `"usage_user" is bigint`) {
			t.Errorf("Prepare with create=false: %v, want the column of another type named", err)
		}
	})

	t.Run("table of the massive source's other COLUMNS", func(t *testing.T) {
		// A run of COLUMNS=10 left its table; one of COLUMNS=1000 lacks
		// 990 columns, and one of COLUMN_TYPE=float finds each of another
		// type: the error names a few, how many in all, and the way out,
		// not each of them (30 KB, in the log and the summary).
		db := newDB(t, srv, "massivecols")
		massive := func(columns int, kind sources.FieldKind) *sources.Schema { return massiveSchema(2, columns, kind) }
		if err := openSink(t, db, nil, massive(10, sources.Int)).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		err := openSink(t, db, nil, massive(1000, sources.Int)).Prepare(ctx)
		want := `table "massive" exists but lacks columns "c10", "c11", "c12", "c13", "c14", "c15", "c16", "c17" and 982 more (990 in all) (`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "schema= or table_prefix=") || len(err.Error()) > 500 {
			t.Errorf("Prepare: %v\nwant %s..., the way out, in 500 bytes at most", err, want)
		}
		c := connect(t, db)
		if _, err := c.Exec(ctx, "DROP TABLE massive"); err != nil {
			t.Fatal(err)
		}
		if err := openSink(t, db, nil, massive(1000, sources.Int)).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		err = openSink(t, db, nil, massive(1000, sources.Float)).Prepare(ctx)
		want = `"c7" is bigint, not double precision and 992 more (1000 in all) (`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "COLUMN_TYPE") || len(err.Error()) > 700 {
			t.Errorf("Prepare: %v\nwant ...%s, naming COLUMN_TYPE, in 700 bytes at most", err, want)
		}
	})

	t.Run("a view of the table's name", func(t *testing.T) {
		// A view named as soakd's table, with every column soakd writes:
		// refused as a view, naming the way out, not with CREATE INDEX's
		// "cannot create index on relation". With create=false soakd
		// makes nothing, and writes through an updatable view.
		db := newDB(t, srv, "aview")
		c := connect(t, db)
		if err := openSink(t, db, nil, cpuSchema("cpu_rows", 3)).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `CREATE VIEW cpu AS SELECT * FROM cpu_rows`); err != nil {
			t.Fatal(err)
		}
		err := openSink(t, db, nil, cpuSchema("cpu", 3)).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), `"cpu" is a view, not a table`) || !strings.Contains(err.Error(), "schema= or table_prefix=") {
			t.Errorf("Prepare: %v, want the view named as one, and the way out", err)
		}
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("class %s retry %v, want rejected, no retry", c, retry)
		}
		if err := openSink(t, withParams(db, "create", "false"), nil, cpuSchema("cpu", 3)).Prepare(ctx); err != nil {
			t.Errorf("Prepare with create=false: %v, want the view taken as it is", err)
		}
	})

	t.Run("dedup on a table without key", func(t *testing.T) {
		db := newDB(t, srv, "nokey")
		if err := openSink(t, db, nil, cpuSchema("cpu", 3)).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		err := openSink(t, withParams(db, "dedup", "true"), nil, cpuSchema("cpu", 3)).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), "created without dedup") {
			t.Fatalf("Prepare: %v, want a missing unique key reported", err)
		}
	})

	t.Run("timescaledb without the extension", func(t *testing.T) {
		db := newDB(t, srv, "tsdb")
		core, logs := observer.New(zap.WarnLevel)
		cpu := cpuSchema("cpu", 3)
		s := openSink(t, withParams(db, "dialect", "timescaledb", "chunk_interval", "6h"), zap.New(core), cpu)
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if logs.FilterMessageSnippet("timescaledb").Len() != 1 {
			t.Errorf("want one warning about the missing extension, got %v", logs.All())
		}
		b := sources.NewSeriesBatch([]*sources.Schema{cpu})
		fill(b.Tables[0], 3, 0, 100, testBase, false)
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "cpu", readRows(t, connect(t, db), cpu), expectRows(b.Tables[0]))
	})
}

// TestRowTooBig writes rows of the massive source's largest COLUMNS
// (1000 bigint fields): without a NULL they fit in a page and are
// stored; a row with a NULL takes a bitmap too and does not fit, and the
// error says what to change (COLUMNS, MISSING), and nothing is stored.
func TestRowTooBig(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run(method, func(t *testing.T) {
			db := newDB(t, srv, "toobig_"+method)
			wide := massiveSchema(3, 1000, sources.Int)
			s := openSink(t, withParams(db, "insert", method), nil, wide)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			c := connect(t, db)
			full := sources.NewSeriesBatch([]*sources.Schema{wide})
			fill(full.Tables[0], 3, 0, 30, testBase, false)
			if _, err := s.Write(ctx, full); err != nil {
				t.Fatalf("rows without a NULL: %v", err)
			}
			if n := count(t, c, "massive"); n != 30 {
				t.Fatalf("%d rows stored, want the 30 written", n)
			}
			nulls := sources.NewSeriesBatch([]*sources.Schema{wide})
			fill(nulls.Tables[0], 3, 30, 30, testBase, false)
			nulls.Tables[0].Null[7] = make([]bool, 30) // one NULL a row, as MISSING=0.001 makes
			for i := range nulls.Tables[0].Null[7] {
				nulls.Tables[0].Null[7][i] = true
			}
			_, err := s.Write(ctx, nulls)
			if err == nil || !strings.Contains(err.Error(), "row is too big") || !strings.Contains(err.Error(), "a row of 1000 fields") ||
				!strings.Contains(err.Error(), "COLUMNS") || !strings.Contains(err.Error(), "MISSING") {
				t.Fatalf("rows with NULLs: %v, want the row too big explained naming COLUMNS and MISSING", err)
			}
			if c, retry := classOf(t, err); c != sinks.Rejected || retry {
				t.Errorf("class %s retry %v, want rejected, no retry", c, retry)
			}
			if n := count(t, c, "massive"); n != 30 {
				t.Errorf("%d rows stored after the refused batch, want the 30 acknowledged", n)
			}
		})
	}
}

// TestErrorClasses provokes each kind of failure against a live server.
func TestErrorClasses(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	cpu := cpuSchema("cpu", 3)
	batch := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(batch.Tables[0], 3, 0, 30, testBase, false)

	t.Run("unknown database", func(t *testing.T) {
		s := openSink(t, strings.Replace(srv.URL, "/postgres?", "/nosuchdb?", 1), nil, cpu)
		_, err := s.Write(ctx, batch)
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("write: %v: class %s retry %v, want rejected", err, c, retry)
		}
		if err := s.Ping(ctx); err == nil {
			t.Error("Ping succeeded")
		}
	})

	t.Run("nobody listening", func(t *testing.T) {
		port := testserver.ClosedPort(t)
		s := openSink(t, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil, cpu)
		for i := range 3 {
			_, err := s.Write(ctx, batch)
			if c, retry := classOf(t, err); c != sinks.Connection || !retry {
				t.Errorf("write %d: %v: class %s retry %v, want connection, retry", i, err, c, retry)
			}
		}
		if err := s.Ping(ctx); err == nil || sinks.ClassOf(err) != sinks.Connection {
			t.Errorf("Ping: %v, want a connection error", err)
		}
		if err := s.Prepare(ctx); sinks.ClassOf(err) != sinks.Connection {
			t.Errorf("Prepare: %v, want a connection error", err)
		}
	})

	t.Run("rejected data", func(t *testing.T) {
		db := newDB(t, srv, "rejected")
		c := connect(t, db)
		// Right names and types, but a constraint every row breaks.
		if _, err := c.Exec(ctx, `CREATE TABLE cpu (time timestamptz, hostname text, region text, datacenter text,
			usage_user float8 CHECK (usage_user > 1e9), usage_system float8, usage_idle float8, usage_nice float8, usage_iowait float8,
			usage_irq float8, usage_softirq float8, usage_steal float8, usage_guest float8, usage_guest_nice float8)`); err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{"copy", "insert", "unnest"} {
			s := openSink(t, withParams(db, "create", "false", "insert", method), nil, cpu)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := s.Write(ctx, batch)
			if c, retry := classOf(t, err); c != sinks.Rejected || retry {
				t.Errorf("%s: %v: class %s retry %v, want rejected, no retry", method, err, c, retry)
			}
			// The connection is alive: the writer's buffers are kept.
			if n := len(s.writers); n != 1 {
				t.Errorf("%s: %d writers kept after a rejected write, want 1", method, n)
			}
			// The sink keeps working for other writes: Ping answers.
			if err := s.Ping(ctx); err != nil {
				t.Errorf("%s: Ping after a rejected write: %v", method, err)
			}
		}
		if n := count(t, c, "cpu"); n != 0 {
			t.Errorf("%d rows stored by rejected writes", n)
		}
	})

	// A BEFORE INSERT trigger that returns NULL skips every row, and the
	// server answers as if nothing were wrong (COPY 0, INSERT 0 0): the
	// write fails, saying what skipped them. Bug caught: "the server
	// stored 0" with nothing to look for.
	t.Run("rows skipped by a trigger", func(t *testing.T) {
		db := newDB(t, srv, "skipped")
		c := connect(t, db)
		if _, err := c.Exec(ctx, `CREATE TABLE cpu (time timestamptz, hostname text, region text, datacenter text,
			usage_user float8, usage_system float8, usage_idle float8, usage_nice float8, usage_iowait float8,
			usage_irq float8, usage_softirq float8, usage_steal float8, usage_guest float8, usage_guest_nice float8);
			CREATE FUNCTION skip_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
			CREATE TRIGGER skip BEFORE INSERT ON cpu FOR EACH ROW EXECUTE FUNCTION skip_row()`); err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{"copy", "insert", "unnest"} {
			s := openSink(t, withParams(db, "create", "false", "insert", method), nil, cpu)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := s.Write(ctx, batch)
			if err == nil || !strings.Contains(err.Error(), "but the server stored 0") ||
				!strings.Contains(err.Error(), "a BEFORE INSERT trigger on cpu") {
				t.Errorf("%s: %v, want the rows not stored, naming the triggers to look at", method, err)
			}
		}
		if n := count(t, c, "cpu"); n != 0 {
			t.Errorf("%d rows stored", n)
		}
	})

	t.Run("locked table", func(t *testing.T) {
		db := newDB(t, srv, "locked")
		s := openSink(t, withParams(db, "options", "-c statement_timeout=300"), nil, cpu)
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		c := connect(t, db)
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE cpu IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		_, err = s.Write(ctx, batch)
		if c, retry := classOf(t, err); c != sinks.Timeout || !retry {
			t.Errorf("statement_timeout: %v: class %s retry %v, want timeout, retry", err, c, retry)
		}
		// The server cancelled the COPY on a live connection: the writer is
		// kept, and the write below reuses it.
		if n := len(s.writers); n != 1 {
			t.Errorf("statement_timeout: %d writers kept, want 1", n)
		}
		// The client-side bound (?timeout=) ends a write the server
		// never answers, even when the caller's context has no deadline.
		s2 := openSink(t, withParams(db, "timeout", "400ms"), nil, cpu)
		start := time.Now()
		_, err = s2.Write(context.Background(), batch)
		// The statement was cancelled on the server: known not stored.
		if c, retry := classOf(t, err); c != sinks.Timeout || !retry {
			t.Errorf("timeout=400ms: %v: class %s retry %v, want timeout, retry", err, c, retry)
		}
		// Without the statement timeout the write waits for the lock for
		// good: a hang guard of 25× the timeout, which no load on the test
		// machine reaches, rather than a tight figure that one does.
		if d := time.Since(start); d > 25*400*time.Millisecond {
			t.Errorf("timeout=400ms: write took %v", d)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, batch); err != nil {
			t.Errorf("write after the lock is gone: %v", err)
		}
		if n := count(t, c, "cpu"); n != int64(batch.Len()) {
			t.Errorf("%d rows stored, want %d (only the last write)", n, batch.Len())
		}
	})
}

// faultRun writes from several workers while fn runs, and returns the
// rows acknowledged and the errors seen by class.
type faultRun struct {
	acked   atomic.Int64
	lastOK  atomic.Int64 // Unix nanoseconds of the last successful write
	mu      sync.Mutex
	classes map[sinks.Class]int
	errs    []error
}

func (f *faultRun) run(ctx context.Context, s *Sink, schema *sources.Schema, workers, rows int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			b := sources.NewSeriesBatch([]*sources.Schema{schema})
			for i := 0; ctx.Err() == nil; i++ {
				b.Reset()
				// Worker w owns devices w, w+workers, ...: disjoint rows.
				tb := b.Tables[0]
				for r := range rows {
					tb.Device = append(tb.Device, uint32(w))
					tb.Time = append(tb.Time, testBase.Add(time.Duration(i*rows+r)*time.Second).UnixNano())
					for f := range schema.Fields {
						tb.Floats[f] = append(tb.Floats[f], float64(i))
					}
				}
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := s.Write(wctx, b)
				cancel()
				if err == nil {
					f.acked.Add(int64(rows))
					f.lastOK.Store(time.Now().UnixNano())
					continue
				}
				if ctx.Err() != nil {
					return // the run is over; this write may or may not be stored
				}
				f.mu.Lock()
				f.classes[sinks.ClassOf(err)]++
				if len(f.errs) < 5 {
					f.errs = append(f.errs, err)
				}
				f.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestFault stops PostgreSQL in the middle of a run and starts it again:
// writes fail with connection errors while it is down, resume within
// seconds once it is back, and the rows stored equal the rows
// acknowledged.
func TestFault(t *testing.T) {
	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run(method, func(t *testing.T) {
			srv := testserver.Postgres(t)
			schema := cpuSchema("cpu", 8)
			s := openSink(t, withParams(srv.URL, "insert", method), nil, schema)
			if err := s.Prepare(t.Context()); err != nil {
				t.Fatal(err)
			}
			f := &faultRun{classes: map[sinks.Class]int{}}
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { f.run(ctx, s, schema, 4, 200); close(done) }()

			time.Sleep(time.Second)
			before := f.acked.Load()
			if before == 0 {
				t.Fatal("no write succeeded before the fault")
			}
			srv.StopKeep()
			stopped := time.Now()
			time.Sleep(1500 * time.Millisecond)
			pctx, pcancel := context.WithTimeout(t.Context(), 2*time.Second)
			if err := s.Ping(pctx); err == nil {
				t.Error("Ping succeeded while the server is down")
			}
			pcancel()
			downAcked := f.acked.Load()
			srv.Resume(t)
			back := time.Now()
			for time.Since(back) < 30*time.Second && f.lastOK.Load() < back.UnixNano() {
				time.Sleep(20 * time.Millisecond)
			}
			resumed := time.Since(back)
			time.Sleep(500 * time.Millisecond)
			stop()
			<-done

			f.mu.Lock()
			defer f.mu.Unlock()
			t.Logf("acked %d before, %d when down for %v, %d in all; resumed %v after the server was back; errors %v %v",
				before, downAcked, back.Sub(stopped), f.acked.Load(), resumed, f.classes, f.errs)
			if f.lastOK.Load() < back.UnixNano() {
				t.Fatalf("no write succeeded within 30 s of the server coming back")
			}
			// Reconnecting waits at most the retry back-off's cap (5 s); a
			// loaded machine adds its own delay, so the bound is 3× that,
			// which only a reconnection that waits for a long time misses.
			if resumed > 15*time.Second {
				t.Errorf("writes resumed %v after the server came back, want a few seconds", resumed)
			}
			if f.classes[sinks.Connection]+f.classes[sinks.Timeout] == 0 {
				t.Errorf("no connection or timeout errors counted while the server was down: %v", f.classes)
			}
			if n := f.classes[sinks.Other] + f.classes[sinks.Rejected]; n > 0 {
				t.Errorf("%d errors misclassified as other/rejected: %v", n, f.errs)
			}
			if err := s.Ping(t.Context()); err != nil {
				t.Errorf("Ping after recovery: %v", err)
			}
			c := connect(t, srv.URL)
			if got, want := count(t, c, "cpu"), f.acked.Load(); got != want {
				t.Errorf("rows stored %d, rows acknowledged %d", got, want)
			}
		})
	}
}

// serverProcs returns pid and its child processes, from /proc.
func serverProcs(t *testing.T, pid int) []int {
	t.Helper()
	out := []int{pid}
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces, so cut at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/stat"))
			out = append(out, child)
		}
	}
	return out
}

// freeze stops the server with SIGSTOP: the postmaster and every backend
// (each backend is its own process group, so the postmaster's group alone
// would not freeze them). cont lets it run again; cleanup calls it too.
func freeze(t *testing.T, srv *testserver.Server) (cont func()) {
	t.Helper()
	procs := serverProcs(t, srv.Pid())
	for _, pid := range procs {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	cont = sync.OnceFunc(func() {
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	t.Cleanup(cont)
	return cont
}

// TestStalledServer freezes PostgreSQL (SIGSTOP): writes and pings end
// with timeouts instead of hanging, and recover once it runs again.
func TestStalledServer(t *testing.T) {
	srv := testserver.Postgres(t)
	cpu := cpuSchema("cpu", 3)
	s := openSink(t, withParams(srv.URL, "timeout", "500ms"), nil, cpu)
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(b.Tables[0], 3, 0, 30, testBase, false)
	if _, err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	cont := freeze(t, srv)
	start := time.Now()
	_, err := s.Write(context.Background(), b)
	if c, _ := classOf(t, err); c != sinks.Timeout {
		t.Errorf("write to a stopped server: %v, class %s, want timeout", err, c)
	}
	// A frozen server never answers: a hang guard of 20× the timeout.
	if d := time.Since(start); d > 20*500*time.Millisecond {
		t.Errorf("write took %v with timeout=500ms", d)
	}
	pctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	if err := s.Ping(pctx); err == nil {
		t.Error("Ping succeeded while the server is stopped")
	}
	cancel()
	cont()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b2 := sources.NewSeriesBatch([]*sources.Schema{cpu})
		fill(b2.Tables[0], 3, 1000, 30, testBase, false)
		if _, err = s.Write(t.Context(), b2); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded within 10 s of SIGCONT: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseStalledServer: Close returns by its context's deadline while a
// frozen server holds the connection of an interrupted write.
func TestCloseStalledServer(t *testing.T) {
	srv := testserver.Postgres(t)
	cpu := cpuSchema("cpu", 3)
	s, err := New(mustURL(t, srv.URL), optionsFor(cpu))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(b.Tables[0], 3, 0, 30, testBase, false)
	if _, err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	cont := freeze(t, srv)
	wctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	if _, err := s.Write(wctx, b); err == nil {
		t.Fatal("write to a stopped server succeeded")
	}
	cancel()
	cctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Close(cctx)
	// A frozen server never answers: a hang guard of 20× the deadline.
	if d := time.Since(start); d > 20*500*time.Millisecond {
		t.Errorf("Close with a 500ms deadline took %v", d)
	}
	if sinks.ClassOf(err) != sinks.Timeout {
		t.Errorf("Close before the connections closed: %v, want a timeout", err)
	}
	// The connections finish closing once the server answers again.
	cont()
}
