package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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
