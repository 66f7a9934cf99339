package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// hypertableInfo is what TimescaleDB says about table: whether it is a
// hypertable, its chunk interval, and its chunks' count.
func hypertableInfo(t *testing.T, c *pgx.Conn, table string) (hyper bool, interval time.Duration, chunks int) {
	t.Helper()
	ctx := context.Background()
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM timescaledb_information.hypertables WHERE hypertable_name = $1`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return false, 0, 0
	}
	var us int64
	if err := c.QueryRow(ctx, `SELECT (extract(epoch FROM time_interval) * 1000000)::bigint FROM timescaledb_information.dimensions
		WHERE hypertable_name = $1 AND column_name = 'time'`, table).Scan(&us); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT count(*) FROM show_chunks($1::regclass)`, quote(table)).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	return true, time.Duration(us) * time.Microsecond, chunks
}

// chunksWithRows counts the chunks of table that hold rows, and checks
// that each holds only rows of its own time range.
func chunksWithRows(t *testing.T, c *pgx.Conn, table string) int {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT ch.chunk_name, count(*),
			bool_and(x.time >= ch.range_start AND x.time < ch.range_end)
		FROM `+quote(table)+` x JOIN timescaledb_information.chunks ch
			ON ch.hypertable_name = $1 AND x.tableoid = (quote_ident(ch.chunk_schema) || '.' || quote_ident(ch.chunk_name))::regclass
		GROUP BY ch.chunk_name`, table)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name string
		var count int64
		var inRange bool
		if err := rows.Scan(&name, &count, &inRange); err != nil {
			t.Fatal(err)
		}
		if !inRange {
			t.Errorf("chunk %s of %s holds rows outside its time range", name, table)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTimescaleDB checks the timescaledb dialect against a real
// TimescaleDB (2.28, Apache-2.0 build): every table a hypertable with the
// chunk interval asked for (or TimescaleDB's default), rows in the chunks
// of their time, rows arriving out of order stored in the (older) chunks
// they belong to, and dedup=true storing re-sent rows once, across
// chunks, with every insert method.
func TestTimescaleDB(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	ctx := t.Context()

	t.Run("hypertables", func(t *testing.T) {
		db := newDB(t, srv, "hyper")
		cpu, trucks := cpuSchema("cpu", 3), mixedSchema("trucks", 4)
		s := openSink(t, withParams(db, "dialect", "timescaledb", "chunk_interval", "1h"), nil, cpu, trucks)
		for range 2 { // idempotent
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c := connect(t, db)
		for _, table := range []string{"cpu", "trucks"} {
			hyper, interval, chunks := hypertableInfo(t, c, table)
			if !hyper || interval != time.Hour || chunks != 0 {
				t.Errorf("%s: hypertable %v, chunk interval %v, %d chunks; want a hypertable with 1h chunks, none yet", table, hyper, interval, chunks)
			}
		}
		// 3 hosts every 10 s for 5 hours: 5 chunks of an hour.
		b := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
		fill(b.Tables[0], 3, 0, 3*360*5, testBase, true)
		fill(b.Tables[1], 4, 0, 40, testBase, true)
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, _, chunks := hypertableInfo(t, c, "cpu"); chunks != 5 {
			t.Errorf("cpu has %d chunks, want 5 (5 hours of rows, 1h chunks)", chunks)
		}
		if n := chunksWithRows(t, c, "cpu"); n != 5 {
			t.Errorf("%d chunks of cpu hold rows, want 5", n)
		}
		sameRows(t, "cpu", readRows(t, c, cpu), expectRows(b.Tables[0]))
		sameRows(t, "trucks", readRows(t, c, trucks), expectRows(b.Tables[1]))
	})

	t.Run("default chunk interval", func(t *testing.T) {
		db := newDB(t, srv, "defaultchunk")
		s := openSink(t, withParams(db, "dialect", "timescaledb"), nil, cpuSchema("cpu", 3))
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if hyper, interval, _ := hypertableInfo(t, connect(t, db), "cpu"); !hyper || interval != 7*24*time.Hour {
			t.Errorf("hypertable %v, chunk interval %v; want TimescaleDB's default, 7 days", hyper, interval)
		}
	})

	t.Run("out of order", func(t *testing.T) {
		db := newDB(t, srv, "late")
		cpu := cpuSchema("cpu", 3)
		s := openSink(t, withParams(db, "dialect", "timescaledb", "chunk_interval", "1h"), nil, cpu)
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		// Hours 3 and 4 first, then hours 0 to 2 (new, older chunks),
		// then late rows inside hour 3's chunk.
		all := sources.NewSeriesBatch([]*sources.Schema{cpu})
		fill(all.Tables[0], 3, 0, 3*360*5, testBase, false)
		hour := 3 * 360
		var want []row
		for _, r := range [][2]int{{3 * hour, 5 * hour}, {0, 3 * hour}} {
			b := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(b.Tables[0], 3, r[0], r[1]-r[0], testBase, false)
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			want = append(want, expectRows(b.Tables[0])...)
		}
		c := connect(t, db)
		if n := chunksWithRows(t, c, "cpu"); n != 5 {
			t.Errorf("%d chunks hold rows after writing older hours last, want 5", n)
		}
		late := sources.NewSeriesBatch([]*sources.Schema{cpu})
		fill(late.Tables[0], 3, 0, 30, testBase.Add(3*time.Hour+5*time.Second), false) // between stored rows
		if _, err := s.Write(ctx, late); err != nil {
			t.Fatal(err)
		}
		want = append(want, expectRows(late.Tables[0])...)
		sameRows(t, "cpu", readRows(t, c, cpu), want)
		if n := chunksWithRows(t, c, "cpu"); n != 5 {
			t.Errorf("%d chunks hold rows after late rows, want still 5", n)
		}
	})

	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run("dedup/"+method, func(t *testing.T) {
			db := newDB(t, srv, "dedup_"+method)
			cpu := cpuSchema("cpu", 3)
			s := openSink(t, withParams(db, "dialect", "timescaledb", "chunk_interval", "1h", "dedup", "true", "insert", method), nil, cpu)
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			b := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(b.Tables[0], 3, 0, 3*360*2, testBase, true) // two chunks
			for range 2 {
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			// A batch of new rows and re-sent ones from both chunks.
			mixed := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(mixed.Tables[0], 3, 3*360*2-60, 120, testBase, true)
			if _, err := s.Write(ctx, mixed); err != nil {
				t.Fatal(err)
			}
			want := sources.NewSeriesBatch([]*sources.Schema{cpu})
			fill(want.Tables[0], 3, 0, 3*360*2+60, testBase, true)
			c := connect(t, db)
			sameRows(t, "cpu", readRows(t, c, cpu), expectRows(want.Tables[0]))
			if _, _, chunks := hypertableInfo(t, c, "cpu"); chunks != 3 {
				t.Errorf("%d chunks, want 3", chunks)
			}
		})
	}

	// A user who owns the database but is no superuser, nor may read
	// shared_preload_libraries: with the extension installed by a
	// superuser it gets hypertables; without it, plain tables and a
	// warning naming what to do, not a refusal. Bug caught: prepare read
	// the setting first and refused the target ("must be superuser or
	// have privileges of pg_read_all_settings").
	t.Run("ordinary user", func(t *testing.T) {
		testserver.PGExec(t, srv.URL, "CREATE ROLE tsowner LOGIN", "CREATE DATABASE ts_owned OWNER tsowner", "CREATE DATABASE ts_bare OWNER tsowner")
		owned, bare := strings.Replace(srv.URL, "/postgres?", "/ts_owned?", 1), strings.Replace(srv.URL, "/postgres?", "/ts_bare?", 1)
		testserver.PGExec(t, owned, "CREATE EXTENSION timescaledb")
		as := func(db string) string {
			return withParams(strings.Replace(db, "postgres@", "tsowner@", 1), "dialect", "timescaledb", "chunk_interval", "1h")
		}
		cpu := cpuSchema("cpu", 3)
		if err := openSink(t, as(owned), nil, cpu).Prepare(ctx); err != nil {
			t.Fatalf("Prepare with the extension installed: %v", err)
		}
		if hyper, _, _ := hypertableInfo(t, connect(t, owned), "cpu"); !hyper {
			t.Error("cpu is no hypertable")
		}
		core, logs := observer.New(zap.WarnLevel)
		if err := openSink(t, as(bare), zap.New(core), cpu).Prepare(ctx); err != nil {
			t.Fatalf("Prepare without the extension: %v", err)
		}
		if logs.FilterMessageSnippet("pg_read_all_settings").Len() != 1 {
			t.Errorf("the warning of plain tables does not say what to do: %v", logs.All())
		}
	})
}

// TestTimescaleDBExtensionCreatedAtOnce: sinks preparing at once on a
// database without the extension (workloads sharing a target, soakd
// processes started together) all get hypertables. Bug caught: those
// that lost the race to CREATE EXTENSION were answered a unique
// violation, warned "cannot be created: using plain tables" and made
// their tables plain ones beside the winner's hypertables.
func TestTimescaleDBExtensionCreatedAtOnce(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	ctx := t.Context()
	const atOnce = 4
	for round := range 3 {
		db := newDB(t, srv, fmt.Sprintf("ts_at_once_%d", round))
		core, logs := observer.New(zap.WarnLevel)
		ss := make([]*Sink, atOnce)
		for i := range ss {
			ss[i] = openSink(t, withParams(db, "dialect", "timescaledb", "table_prefix", fmt.Sprintf("w%d_", i)), zap.New(core), cpuSchema("cpu", 3))
		}
		start := make(chan struct{})
		errs := make(chan error, atOnce)
		for _, s := range ss {
			go func() {
				<-start
				errs <- s.Prepare(ctx)
			}()
		}
		close(start)
		for range ss {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: Prepare: %v", round, err)
			}
		}
		c := connect(t, db)
		for i := range ss {
			if hyper, _, _ := hypertableInfo(t, c, fmt.Sprintf("w%d_cpu", i)); !hyper {
				t.Errorf("round %d: w%d_cpu is a plain table, not a hypertable", round, i)
			}
		}
		if logs.Len() != 0 {
			t.Errorf("round %d: warnings: %v", round, logs.All())
		}
	}
}

// TestTimescaleDBWithoutCreateRights: hypertables that exist, and a
// writer with only INSERT on them and no CREATE privilege anywhere:
// create=true prepares (nothing is missing) and the rows arrive in the
// hypertables' chunks. Bug caught: CREATE TABLE IF NOT EXISTS of the
// existing tables was refused ("permission denied for schema public").
func TestTimescaleDBWithoutCreateRights(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	ctx := t.Context()
	db := newDB(t, srv, "ts_nocreate")
	cpu, trucks := cpuSchema("cpu", 3), mixedSchema("trucks", 4)
	params := []string{"dialect", "timescaledb", "chunk_interval", "1h"}
	if err := openSink(t, withParams(db, params...), nil, cpu, trucks).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, db, "REVOKE CREATE ON DATABASE ts_nocreate FROM PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"CREATE ROLE tswriter LOGIN", "GRANT INSERT ON cpu, trucks TO tswriter")
	s := openSink(t, withParams(strings.Replace(db, "postgres@", "tswriter@", 1), params...), nil, cpu, trucks)
	if err := s.Prepare(ctx); err != nil {
		t.Fatalf("Prepare as a writer of existing hypertables: %v", err)
	}
	b := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
	fill(b.Tables[0], 3, 0, 3*360*2, testBase, false) // two hours
	fill(b.Tables[1], 4, 0, 40, testBase, false)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	c := connect(t, db)
	sameRows(t, "cpu", readRows(t, c, cpu), expectRows(b.Tables[0]))
	sameRows(t, "trucks", readRows(t, c, trucks), expectRows(b.Tables[1]))
	if n := chunksWithRows(t, c, "cpu"); n != 2 {
		t.Errorf("%d chunks of cpu hold rows, want 2", n)
	}
}

// TestTimescaleDBInstalledLater follows soakd's own advice: a database
// owner who is no superuser, in a database without the extension, gets
// plain tables and a warning saying to CREATE EXTENSION timescaledb as a
// superuser or the database owner. The owner does so (timescaledb is a
// trusted extension) and the same URL runs again: the table that holds
// rows stays a plain table and takes the new rows, with a warning saying
// how to get a hypertable (whose statement then migrates it); the empty
// one becomes a hypertable. An empty plain table that the user may write
// into but not make a hypertable is written into as it is, with a
// warning. Bug caught: the second run was refused at prepare, exit 2
// (create_hypertable: table "cpu" is not empty).
func TestTimescaleDBInstalledLater(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	ctx := t.Context()
	testserver.PGExec(t, srv.URL, "CREATE ROLE tslater LOGIN", "CREATE DATABASE ts_later OWNER tslater")
	db := strings.Replace(srv.Database("ts_later"), "postgres@", "tslater@", 1)
	raw := withParams(db, "dialect", "timescaledb", "chunk_interval", "1h")
	cpu, trucks := cpuSchema("cpu", 3), mixedSchema("trucks", 4)

	core, logs := observer.New(zap.WarnLevel)
	s := openSink(t, raw, zap.New(core), cpu, trucks)
	if err := s.Prepare(ctx); err != nil {
		t.Fatalf("Prepare without the extension: %v", err)
	}
	if logs.FilterMessageSnippet("CREATE EXTENSION timescaledb as a superuser or the database owner").Len() != 1 {
		t.Errorf("the warning of plain tables does not say who may install the extension: %v", logs.All())
	}
	// The summary says so too.
	wantNotes(t, s, plainTables+"the timescaledb extension is not installed in the database, and the target URL's user may not read shared_preload_libraries to see whether it can be (see the log)")
	first := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
	fill(first.Tables[0], 3, 0, 30, testBase, false) // trucks stays empty
	if _, err := s.Write(ctx, first); err != nil {
		t.Fatal(err)
	}

	testserver.PGExec(t, db, "CREATE EXTENSION timescaledb") // as the database owner
	core, logs = observer.New(zap.WarnLevel)
	s = openSink(t, raw, zap.New(core), cpu, trucks)
	if err := s.Prepare(ctx); err != nil {
		t.Fatalf("Prepare once the extension is installed: %v", err)
	}
	warned := logs.FilterMessageSnippet(`table "cpu" exists as a plain table with rows, not a hypertable`)
	if warned.Len() != 1 || !strings.Contains(warned.All()[0].Message, "schema= or table_prefix=") ||
		!strings.Contains(warned.All()[0].Message, "migrate_data => TRUE") {
		t.Errorf("no warning that cpu stays a plain table, saying how to get a hypertable: %v", logs.All())
	}
	if n := logs.Len(); n != 1 {
		t.Errorf("%d warnings, want 1: %v", n, logs.All())
	}
	wantNotes(t, s, `dialect=timescaledb, but table "cpu" is a plain table, not a hypertable: it held rows before (see the log)`)
	second := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
	fill(second.Tables[0], 3, 30, 30, testBase, false)
	fill(second.Tables[1], 4, 0, 40, testBase, false)
	if _, err := s.Write(ctx, second); err != nil {
		t.Fatal(err)
	}
	c := connect(t, db)
	all := sources.NewSeriesBatch([]*sources.Schema{cpu})
	fill(all.Tables[0], 3, 0, 60, testBase, false)
	sameRows(t, "cpu", readRows(t, c, cpu), expectRows(all.Tables[0]))
	sameRows(t, "trucks", readRows(t, c, trucks), expectRows(second.Tables[1]))
	if hyper, _, _ := hypertableInfo(t, c, "cpu"); hyper {
		t.Error("cpu, which held rows, became a hypertable")
	}
	if hyper, interval, _ := hypertableInfo(t, c, "trucks"); !hyper || interval != time.Hour {
		t.Errorf("trucks, empty: hypertable %v, chunk interval %v; want a hypertable with 1h chunks", hyper, interval)
	}
	// The statement the warning gives migrates cpu's rows.
	if warned.Len() == 1 {
		_, migrate, _ := strings.Cut(warned.All()[0].Message, "migrate its rows as its owner: ")
		testserver.PGExec(t, db, migrate)
		if hyper, interval, _ := hypertableInfo(t, c, "cpu"); !hyper || interval != time.Hour {
			t.Errorf("after %s: hypertable %v, chunk interval %v; want a hypertable with 1h chunks", migrate, hyper, interval)
		}
		sameRows(t, "cpu", readRows(t, c, cpu), expectRows(all.Tables[0]))
	}

	// An empty plain table that a writer may write into but not make a
	// hypertable (neither the table's owner nor the extension's): written
	// into as it is, with a warning.
	other := mixedSchema("other", 4)
	su := srv.Database("ts_later")
	if err := openSink(t, withParams(su, "dialect", "postgres"), nil, other).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, su, "CREATE ROLE tsplain LOGIN", "GRANT INSERT ON other TO tsplain")
	core, logs = observer.New(zap.WarnLevel)
	s = openSink(t, withParams(strings.Replace(su, "postgres@", "tsplain@", 1), "dialect", "timescaledb"), zap.New(core), other)
	if err := s.Prepare(ctx); err != nil {
		t.Fatalf("Prepare as a writer of a plain table: %v", err)
	}
	if logs.FilterMessageSnippet(`table "other" exists as a plain table, not a hypertable, and the target URL's user may not make it one`).Len() != 1 {
		t.Errorf("no warning that other stays a plain table: %v", logs.All())
	}
	wantNotes(t, s, `dialect=timescaledb, but table "other" is a plain table, not a hypertable: the target URL's user may not make it one (see the log)`)
	third := sources.NewSeriesBatch([]*sources.Schema{other})
	fill(third.Tables[0], 4, 0, 40, testBase, false)
	if _, err := s.Write(ctx, third); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "other", readRows(t, connect(t, su), other), expectRows(third.Tables[0]))
	if hyper, _, _ := hypertableInfo(t, c, "other"); hyper {
		t.Error("other became a hypertable")
	}
}

// wantNotes fails t unless s's notes for the summary are want.
func wantNotes(t *testing.T, s *Sink, want ...string) {
	t.Helper()
	if got := s.Notes(); !slices.Equal(got, want) {
		t.Errorf("notes for the summary:\n%q\nwant\n%q", got, want)
	}
}

// TestEngineTimescaleDB runs the iot source, with its default late (5 %
// up to a minute) and missing (1 %) readings, through the engine into
// TimescaleDB hypertables with 10-minute chunks: every row of the data
// set stored once, in the chunk of its time.
func TestEngineTimescaleDB(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	const start, end, scale = "2016-01-01T00:00:00Z", "+1h", 12
	c := iot.DefaultConfig()
	c.Scale = scale
	if err := c.Start.UnmarshalText([]byte(start)); err != nil {
		t.Fatal(err)
	}
	if err := c.End.UnmarshalText([]byte(end)); err != nil {
		t.Fatal(err)
	}
	src, err := iot.New("iot", c, 7, sources.Shard{})
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
	for _, dedup := range []bool{false, true} {
		t.Run(fmt.Sprintf("dedup=%v", dedup), func(t *testing.T) {
			db := newDB(t, srv, fmt.Sprintf("engine_iot_%v", dedup))
			reg := prometheus.NewRegistry()
			res := runEngine(t.Context(), t, reg, map[string]string{
				"SOAKD_W_SOURCE": "iot", "SOAKD_W_SCALE": fmt.Sprint(scale), "SOAKD_W_SEED": "7",
				"SOAKD_W_START": start, "SOAKD_W_END": end,
				"SOAKD_W_TARGET": withParams(db, "dialect", "timescaledb", "chunk_interval", "10m", "dedup", fmt.Sprint(dedup)),
				"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "3", "SOAKD_W_BATCH_SIZE": "300",
			})
			if res.err != nil {
				t.Fatal(res.err)
			}
			conn := connect(t, db)
			for i, s := range src.Schemas() {
				sameRows(t, s.Measurement, readRows(t, conn, s), want[i])
				if hyper, interval, _ := hypertableInfo(t, conn, s.Measurement); !hyper || interval != 10*time.Minute {
					t.Errorf("%s: hypertable %v, chunk interval %v", s.Measurement, hyper, interval)
				}
				// An hour of data, and late readings of the last minute
				// may reach into the next 10 minutes.
				if n := chunksWithRows(t, conn, s.Measurement); n < 6 || n > 7 {
					t.Errorf("%s: %d chunks hold rows, want 6 or 7", s.Measurement, n)
				}
			}
			if w := res.sum.Workloads[0]; sumErrors(w.Errors) > 0 {
				t.Errorf("errors: %v", w.Errors)
			}
		})
	}
}

// A batch whose rows fall in more chunks than the server can lock in one
// transaction (1-second chunks, two hours of one host's readings, 10
// locks a connection) fails with "out of shared memory" every time it is
// sent; the error says what to change: chunk_interval, BATCH_SIZE or
// max_locks_per_transaction.
func TestTimescaleDBBatchOverLockTable(t *testing.T) {
	srv := testserver.TimescaleDB(t, testserver.PostgresSettings("max_locks_per_transaction=10", "max_connections=10"))
	db := newDB(t, srv, "locks")
	res := runEngine(t.Context(), t, prometheus.NewRegistry(), map[string]string{
		"SOAKD_W_SOURCE": "devops", "SOAKD_W_SCALE": "1", "SOAKD_W_MISSING": "none",
		"SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": "+2h",
		"SOAKD_W_TARGET": withParams(db, "dialect", "timescaledb", "chunk_interval", "1s"),
		"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "1000", "SOAKD_W_RETRIES": "0",
	})
	if res.err != nil {
		t.Fatal(res.err)
	}
	w := res.sum.Workloads[0]
	if w.Failed == 0 || w.Units+w.Failed != w.Scheduled {
		t.Errorf("scheduled %d, acknowledged %d, failed %d: want failed rows, adding up", w.Scheduled, w.Units, w.Failed)
	}
	if w.LastError == nil || !strings.Contains(w.LastError.Text, "SQLSTATE 53200") ||
		!strings.Contains(w.LastError.Text, "chunk_interval= (now 1s") || !strings.Contains(w.LastError.Text, "BATCH_SIZE") ||
		!strings.Contains(w.LastError.Text, "max_locks_per_transaction") {
		t.Errorf("last error %+v: want out of shared memory, and chunk_interval, BATCH_SIZE and max_locks_per_transaction named", w.LastError)
	}
}
