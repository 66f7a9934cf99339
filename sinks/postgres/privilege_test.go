package postgres

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// TestPrivileges: a user who may not INSERT into an existing table is
// refused at prepare, naming the user, the table and the privilege, with
// every insert method: a configuration error naming SOAKD_W_TARGET
// (exit 2), not a run whose every write PostgreSQL answers "permission
// denied". dedup=true also needs SELECT (its ON CONFLICT names the
// (device, time) key; with insert=copy its staging table is made LIKE the
// table). A user granted what the method needs prepares and writes.
func TestPrivileges(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	db := newDB(t, srv, "privileges")
	cpu, cpud := cpuSchema("cpu", 3), cpuSchema("cpud", 3)
	if err := openSink(t, db, nil, cpu).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if err := openSink(t, withParams(db, "dedup", "true"), nil, cpud).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, db,
		"CREATE ROLE reader LOGIN", "GRANT SELECT ON cpu, cpud TO reader",
		"CREATE ROLE writer LOGIN", "GRANT INSERT ON cpu, cpud TO writer",
		"CREATE ROLE readwrite LOGIN", "GRANT SELECT, INSERT ON cpu, cpud TO readwrite")
	as := func(user string, kv ...string) string {
		return withParams(strings.Replace(db, "postgres@", user+"@", 1), append([]string{"create", "false"}, kv...)...)
	}
	refused := func(raw, want string, schema *sources.Schema) {
		t.Helper()
		err := openSink(t, raw, nil, schema).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare(%s) = %v, want it to say %q", raw, err, want)
			return
		}
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("Prepare(%s): class %s retry %v, want rejected, no retry", raw, c, retry)
		}
	}
	writes := func(raw string, schema *sources.Schema) {
		t.Helper()
		s := openSink(t, raw, nil, schema)
		if err := s.Prepare(ctx); err != nil {
			t.Errorf("Prepare(%s): %v", raw, err)
			return
		}
		b := sources.NewSeriesBatch([]*sources.Schema{schema})
		fill(b.Tables[0], 3, 0, 30, testBase, false)
		if _, err := s.Write(ctx, b); err != nil {
			t.Errorf("Write(%s): %v", raw, err)
		}
	}
	for _, method := range []string{"copy", "insert", "unnest"} {
		refused(as("reader", "insert", method), `user "reader" lacks the INSERT privilege on table "cpu"`, cpu)
		writes(as("writer", "insert", method), cpu)
	}
	for _, method := range []string{"copy", "insert", "unnest"} {
		refused(as("writer", "dedup", "true", "insert", method), `user "writer" lacks the SELECT privilege on table "cpud"`, cpud)
		writes(as("readwrite", "dedup", "true", "insert", method), cpud)
	}

	// layout=tsbs: writers also look up and insert into the tags table,
	// taking ids from its serial sequence.
	tsbs := newDB(t, srv, "privileges_tsbs")
	if err := openSink(t, withParams(tsbs, "layout", "tsbs"), nil, cpu).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, tsbs, "GRANT INSERT ON cpu, tags TO writer")
	asTSBS := withParams(strings.Replace(tsbs, "postgres@", "writer@", 1), "create", "false", "layout", "tsbs")
	refused(asTSBS, `user "writer" lacks the SELECT privilege on table "tags"`, cpu)
	testserver.PGExec(t, tsbs, "GRANT SELECT ON tags TO writer")
	refused(asTSBS, `user "writer" lacks the USAGE (or UPDATE) privilege on sequence public.tags_id_seq`, cpu)
	// nextval takes UPDATE as well as USAGE: either is enough.
	testserver.PGExec(t, tsbs, "GRANT UPDATE ON SEQUENCE tags_id_seq TO writer")
	writes(asTSBS, cpu)
	testserver.PGExec(t, tsbs, "REVOKE UPDATE ON SEQUENCE tags_id_seq FROM writer")
	testserver.PGExec(t, tsbs, "GRANT USAGE ON SEQUENCE tags_id_seq TO writer")
	writes(asTSBS, cpu)

	// Through the engine: the configuration error of a target that
	// refuses the prepare step.
	env := func(target string) map[string]string {
		return map[string]string{"SOAKD_W_SOURCE": "seq", "SOAKD_W_DEVICES": "10", "SOAKD_W_ROWS": "1000", "SOAKD_W_RATE": "max",
			"SOAKD_W_TARGET": target, "SOAKD_DURATION": "5s"}
	}
	if res := runEngine(ctx, t, prometheus.NewRegistry(), env(db)); res.err != nil { // creates the table seq
		t.Fatal(res.err)
	}
	testserver.PGExec(t, db, "GRANT SELECT ON seq TO reader")
	res := runEngine(ctx, t, prometheus.NewRegistry(), env(as("reader")))
	var ce *settings.Error
	if !errors.As(res.err, &ce) || ce.Key != "SOAKD_W_TARGET" || !strings.Contains(ce.Error(), `refused "prepare"`) ||
		!strings.Contains(ce.Error(), `lacks the INSERT privilege on table "seq"`) {
		t.Fatalf("run as a user who may only SELECT: %v, want a configuration error naming SOAKD_W_TARGET and the privilege", res.err)
	}
}

// A user whose sessions take no writes (default_transaction_read_only)
// is refused at prepare, saying so: a configuration error, whether soakd
// creates the tables or not. Bug caught: with create=false every COPY
// failed "read-only transaction" for the whole run, exit 1.
func TestReadOnlySessionRefused(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	db := newDB(t, srv, "readonly")
	cpu := cpuSchema("cpu", 3)
	if err := openSink(t, db, nil, cpu).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, db, "CREATE ROLE ro LOGIN", "GRANT SELECT, INSERT ON cpu TO ro",
		"ALTER ROLE ro SET default_transaction_read_only = on")
	for _, create := range []string{"false", "true"} {
		raw := withParams(strings.Replace(db, "postgres@", "ro@", 1), "create", create)
		err := openSink(t, raw, nil, cpu).Prepare(ctx)
		if c, retry := classOf(t, err); c != sinks.Rejected || retry || !strings.Contains(err.Error(), "transaction_read_only is on") {
			t.Errorf("Prepare(create=%s) as a read-only user: %v; want rejected, saying the session takes no writes", create, err)
		}
	}
}

// TestCreateWithoutCreateRights: with create=true (the default) soakd
// creates only what is missing, so a user without the CREATE privilege
// writes into a schema and tables that exist, and one who may create in
// the schema but not in the database creates its tables there. What is
// missing and may not be created is refused naming it, the user and the
// privilege; a missing index is only a warning. Bug caught: PostgreSQL
// checks the CREATE privilege before IF NOT EXISTS, so CREATE SCHEMA IF
// NOT EXISTS and CREATE TABLE IF NOT EXISTS of what existed were refused
// ("permission denied for database", "for schema public"), exit 2.
func TestCreateWithoutCreateRights(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	db := newDB(t, srv, "nocreate")
	testserver.PGExec(t, db,
		"REVOKE CREATE ON DATABASE nocreate FROM PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"CREATE SCHEMA other",
		"CREATE ROLE inschema LOGIN", "GRANT USAGE, CREATE ON SCHEMA other TO inschema",
		"CREATE ROLE writer LOGIN")
	as := func(user string, kv ...string) string {
		return withParams(strings.Replace(db, "postgres@", user+"@", 1), kv...)
	}
	cpu, trucks, cpud := cpuSchema("cpu", 3), mixedSchema("trucks", 4), cpuSchema("cpud", 3)
	stored := map[string]int64{}
	writes := func(raw, schema string, log *zap.Logger, schemas ...*sources.Schema) {
		t.Helper()
		s := openSink(t, raw, log, schemas...)
		if err := s.Prepare(ctx); err != nil {
			t.Fatalf("Prepare(%s): %v", raw, err)
		}
		b := sources.NewSeriesBatch(schemas)
		for _, tb := range b.Tables {
			fill(tb, 3, 0, 30, testBase.Add(time.Duration(stored[schema+"."+tb.Schema.Measurement])*time.Hour), false)
		}
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatalf("Write(%s): %v", raw, err)
		}
		for _, sc := range schemas {
			table := quote(schema) + "." + quote(sc.Measurement)
			stored[schema+"."+sc.Measurement] += 30
			if n := testserver.PGCount(t, db, "SELECT count(*) FROM "+table); n != stored[schema+"."+sc.Measurement] {
				t.Errorf("%s holds %d rows, want %d", table, n, stored[schema+"."+sc.Measurement])
			}
		}
	}
	refused := func(raw, want string, schema *sources.Schema) {
		t.Helper()
		err := openSink(t, raw, nil, schema).Prepare(ctx)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare(%s) = %v, want it to say %q", raw, err, want)
			return
		}
		if c, retry := classOf(t, err); c != sinks.Rejected || retry {
			t.Errorf("Prepare(%s): class %s retry %v, want rejected, no retry", raw, c, retry)
		}
	}

	// The schema exists; the user may create in it, not in the database.
	writes(as("inschema", "schema", "other"), "other", nil, cpu, trucks)
	writes(as("inschema", "schema", "other"), "other", nil, cpu, trucks) // and again, its own tables

	// Tables that exist, made by their owner, and a writer with only
	// INSERT and SELECT on them: in public, and in schema=.
	for _, q := range []string{db, withParams(db, "schema", "other")} {
		if err := openSink(t, q, nil, cpu, trucks).Prepare(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := openSink(t, withParams(db, "dedup", "true"), nil, cpud).Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	testserver.PGExec(t, db, "GRANT INSERT, SELECT ON cpu, trucks, cpud TO writer",
		"GRANT USAGE ON SCHEMA other TO writer", "GRANT INSERT, SELECT ON other.cpu, other.trucks TO writer")
	writes(as("writer"), "public", nil, cpu, trucks)
	writes(as("writer", "dedup", "true"), "public", nil, cpud)
	writes(as("writer", "schema", "other"), "other", nil, cpu, trucks)

	// A table without soakd's index, which the writer may not create:
	// written, with a warning.
	testserver.PGExec(t, db, `DROP INDEX "cpu_hostname_time_idx"`)
	core, logs := observer.New(zap.WarnLevel)
	writes(as("writer"), "public", zap.New(core), cpu)
	if logs.FilterMessageSnippet(`lacks the index "cpu_hostname_time_idx"`).Len() != 1 {
		t.Errorf("no warning of the missing index: %v", logs.All())
	}

	// What is missing, and may not be created, is named.
	refused(as("writer"), `table "absent" does not exist in schema "public", and user "writer" may not create it`, cpuSchema("absent", 3))
	refused(as("writer"), `GRANT CREATE ON SCHEMA "public" TO "writer"`, cpuSchema("absent", 3))
	refused(as("writer", "schema", "nowhere"), `schema "nowhere" (schema=) does not exist, and user "writer" may not create it`, cpu)
	refused(as("writer", "schema", "nowhere"), `GRANT CREATE ON DATABASE "nocreate" TO "writer"`, cpu)
}
