package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// Reset empties the sink's own tables (TRUNCATE), for soakd sweep's
// SOAKD_SWEEP_RESET=true; it touches no other table.
func (s *Sink) Reset(ctx context.Context) error {
	for _, p := range *s.plans.Load() {
		if _, err := s.pool.Exec(ctx, "TRUNCATE "+p.table); err != nil {
			return classify(fmt.Errorf("cannot empty %s: %w", p.table, err), true, false)
		}
	}
	return nil
}

// Prepare creates the tables of the sink's schemas when they are missing
// (unless ?create=false) and checks that existing tables have every
// column soakd writes. It is idempotent and safe to run from several
// processes at once.
func (s *Sink) Prepare(ctx context.Context) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(fmt.Errorf("cannot connect to prepare tables: %w", err), true, false)
	}
	defer conn.Release()
	c := conn.Conn()
	plans := *s.plans.Load()
	if s.q == nil && s.cfg.Dialect != KWDB {
		if err := s.checkWritable(ctx, c); err != nil {
			return err
		}
	}
	if s.cfg.Create {
		if err := s.create(ctx, c, plans); err != nil {
			return err
		}
	}
	if s.cfg.Dialect == KWDB {
		// KWDB's catalog differs; a missing table shows on the first write.
		return nil
	}
	if s.q != nil {
		defer func() {
			if err == nil {
				err = s.prepareQueries(ctx)
			}
		}()
	}
	if s.cfg.Layout == TSBSLayout && len(plans) > 0 {
		sc := plans[0].schema
		if _, err := checkTableColumns(ctx, c, s.cfg, quote(tsbsTags), tsbsTagsColumns(sc)); err != nil {
			return err
		}
		if s.q == nil {
			// Writers look tags up, and insert those of new devices
			// (RETURNING id, from its serial sequence).
			if err := s.checkPrivileges(ctx, c, quote(tsbsTags), "SELECT", "INSERT"); err != nil {
				return err
			}
			if err := s.checkSequence(ctx, c, quote(tsbsTags)); err != nil {
				return err
			}
		}
	}
	for _, p := range plans {
		if !s.cfg.Create { // else checked as it was created
			if err := checkColumns(ctx, c, s.cfg, p); err != nil {
				return err
			}
		}
		if s.cfg.Dedup && s.cfg.Dialect != Cockroach {
			if err := checkUnique(ctx, c, p); err != nil {
				return err
			}
		}
		if err := s.checkPrivileges(ctx, c, p.table, s.tablePrivileges(p)...); err != nil {
			return err
		}
	}
	if s.q == nil && s.cfg.Dedup && s.cfg.Method == Copy && len(plans) > 0 {
		// dedup=true's COPY goes through a temporary staging table.
		var user, db string
		var ok bool
		err := c.QueryRow(ctx, "SELECT current_user, current_database(), has_database_privilege(current_database(), 'TEMPORARY')").Scan(&user, &db, &ok)
		answered, err := s.privilegeAnswer(err, "the TEMPORARY privilege on the database")
		if err != nil {
			return err
		}
		if answered && !ok {
			return sinks.NewError(sinks.Rejected, false, fmt.Errorf("user %s lacks the TEMPORARY privilege on database %s, which dedup=true with insert=copy needs to stage its rows in a temporary table (permission denied): GRANT TEMPORARY ON DATABASE %s TO %s, or use insert=unnest",
				quote(user), quote(db), quote(db), quote(user)))
		}
	}
	return nil
}

// tablePrivileges are the privileges the sink's workload needs on p's
// table: a query workload SELECT; writes INSERT, whatever the method
// (COPY ... FROM needs INSERT too), and SELECT with dedup=true, whose ON
// CONFLICT names the (device, time) key (PostgreSQL reads it with SELECT)
// and, with COPY, whose staging table is made LIKE the table.
func (s *Sink) tablePrivileges(p *plan) []string {
	switch {
	case s.q != nil:
		return []string{"SELECT"}
	case p.onConfli != "":
		return []string{"INSERT", "SELECT"}
	}
	return []string{"INSERT"}
}

// checkPrivileges fails when the target URL's user lacks one of privs on
// table (has_table_privilege): every write would be refused "permission
// denied", better said once at startup. A server without the function
// is not asked.
func (s *Sink) checkPrivileges(ctx context.Context, c *pgx.Conn, table string, privs ...string) error {
	var user string
	var missing []string
	for _, priv := range privs {
		var ok bool
		err := c.QueryRow(ctx, "SELECT current_user, has_table_privilege($1::text, $2::text)", table, priv).Scan(&user, &ok)
		answered, err := s.privilegeAnswer(err, "the privileges on "+table)
		if err != nil || !answered {
			return err
		}
		if !ok {
			missing = append(missing, priv)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	what := strings.Join(missing, " and ")
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("user %s lacks the %s privilege on table %s, which soakd needs to %s (permission denied): GRANT %s ON %s TO %s, or connect as another user",
		quote(user), what, table, s.doesTo(), strings.Join(missing, ", "), table, quote(user)))
}

// doesTo says what the sink does to its tables, for checkPrivileges.
func (s *Sink) doesTo() string {
	switch {
	case s.q != nil:
		return "query it"
	case s.cfg.Dedup && s.cfg.Method == Copy:
		return "write to it (dedup=true with insert=copy: COPY into a staging table made LIKE it, then INSERT ... ON CONFLICT (device, time))"
	case s.cfg.Dedup && s.cfg.Dialect != KWDB:
		return "write to it (dedup=true: INSERT ... ON CONFLICT (device, time), whose key is read with SELECT)"
	}
	return "write to it (insert=" + s.cfg.Method.String() + ")"
}

// checkSequence fails when the user may not take ids from the serial
// sequence of table's id column (USAGE or UPDATE: nextval takes either),
// which inserting a row needs.
func (s *Sink) checkSequence(ctx context.Context, c *pgx.Conn, table string) error {
	var user string
	var seq *string
	var ok *bool
	err := c.QueryRow(ctx, `SELECT current_user, q.seq, has_sequence_privilege(q.seq, 'USAGE, UPDATE')
		FROM (SELECT pg_get_serial_sequence($1::text, 'id') AS seq) q`, table).Scan(&user, &seq, &ok)
	if answered, err := s.privilegeAnswer(err, "the privileges on the sequence of "+table+".id"); err != nil || !answered {
		return err
	}
	if seq == nil || ok == nil || *ok {
		return nil // no sequence: ids come otherwise
	}
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("user %s lacks the USAGE (or UPDATE) privilege on sequence %s, which inserting into %s takes ids from (permission denied): GRANT USAGE ON SEQUENCE %s TO %s, or connect as another user",
		quote(user), *seq, table, *seq, quote(user)))
}

// privilegeAnswer classifies the error of a privilege lookup. answered
// is false when the server lacks the function: then nothing is refused,
// and the writes' answers tell.
func (s *Sink) privilegeAnswer(err error, what string) (answered bool, _ error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42883" || pgErr.Code == "0A000") { // undefined_function, feature_not_supported
		s.log.Info("cannot check "+what+": the server cannot say", zap.String("target", s.target), zap.Error(err))
		return false, nil
	}
	if err != nil {
		return false, classify(fmt.Errorf("cannot read %s: %w", what, err), false, false)
	}
	return true, nil
}

// checkWritable fails when the session takes no writes: a standby, or a
// user or database whose default_transaction_read_only is on. Every
// write would be refused "cannot execute ... in a read-only
// transaction", better said once at startup.
func (s *Sink) checkWritable(ctx context.Context, c *pgx.Conn) error {
	var readOnly string
	err := c.QueryRow(ctx, "SELECT current_setting('transaction_read_only')").Scan(&readOnly)
	if answered, err := s.privilegeAnswer(err, "whether the session may write"); err != nil || !answered {
		return err
	}
	if readOnly != "on" {
		return nil
	}
	var standby bool
	if err := c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err == nil && standby {
		return sinks.NewError(sinks.Rejected, false, errors.New("the server is a standby (in recovery) and takes no writes: connect to the primary (or give the target URL target_session_attrs=read-write with every host)"))
	}
	return sinks.NewError(sinks.Rejected, false, errors.New("the session takes no writes: transaction_read_only is on (default_transaction_read_only set for the target URL's user or database): ALTER ROLE ... SET default_transaction_read_only = off, or connect as another user"))
}

// ddl runs one DDL statement. Concurrent CREATE ... IF NOT EXISTS from
// several soakd processes can still collide in PostgreSQL's catalogs
// (unique violation on pg_type or pg_class); the statement is then run
// once more, when the other process has finished.
var ddlRaces = []string{"23505", "42P07", "42710", "40001"} // unique_violation, duplicate_table, duplicate_object, serialization_failure

func ddl(ctx context.Context, c *pgx.Conn, q string) error {
	var err error
	for range 3 {
		_, err = c.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || !slices.Contains(ddlRaces, pgErr.Code) {
			break
		}
	}
	if err != nil {
		return classify(fmt.Errorf("cannot run %s: %w", firstLine(q), err), false, false)
	}
	return nil
}

func firstLine(q string) string {
	if i := strings.IndexByte(q, '\n'); i >= 0 {
		return q[:i] + " ..."
	}
	return q
}

// plainTables begins the summary's note of a dialect=timescaledb target
// whose tables are plain ones, and why.
const plainTables = "dialect=timescaledb, but plain tables, not hypertables: "

// timescale reports whether the timescaledb extension is installed,
// installing it when the server has it available and preloaded. Without
// it the tables stay plain tables, with a warning.
func (s *Sink) timescale(ctx context.Context, c *pgx.Conn) (bool, error) {
	var installed, available, preloaded bool
	err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'),
		EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb')`).Scan(&installed, &available)
	if err != nil {
		return false, classify(fmt.Errorf("cannot look for the timescaledb extension: %w", err), false, false)
	}
	if installed {
		return true, nil
	}
	if available {
		// Only a superuser or a member of pg_read_all_settings may read
		// it: a user who may not, and finds the extension not installed,
		// cannot tell whether CREATE EXTENSION would work.
		err := c.QueryRow(ctx, `SELECT current_setting('shared_preload_libraries') ~ '(^|[ ,])timescaledb([ ,]|$)'`).Scan(&preloaded)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			s.AddNote(plainTables + "the timescaledb extension is not installed in the database, and the target URL's user may not read shared_preload_libraries to see whether it can be (see the log)")
			s.log.Warn("dialect=timescaledb but the timescaledb extension is not installed in the database, and the target URL's user may not read shared_preload_libraries to see whether it can be: using plain tables; CREATE EXTENSION timescaledb as a superuser or the database owner (it is a trusted extension), or GRANT pg_read_all_settings to the user (tables soakd fills meanwhile stay plain tables)",
				zap.String("target", s.target))
			return false, nil
		}
		if err != nil {
			return false, classify(fmt.Errorf("cannot look for the timescaledb extension: %w", err), false, false)
		}
	}
	if available && !preloaded {
		// CREATE EXTENSION would fail, and TimescaleDB's loader ends the
		// session with it.
		s.AddNote(plainTables + "the server does not preload timescaledb (shared_preload_libraries)")
		s.log.Warn("dialect=timescaledb but the server does not preload timescaledb (shared_preload_libraries): using plain tables",
			zap.String("target", s.target))
		return false, nil
	}
	if available {
		// Two sinks preparing at once on a database without the
		// extension (two workloads on one target, a fleet of soakd
		// processes) both find it missing and both create it: the one
		// that loses is answered a unique violation once the other has
		// committed, and would make plain tables beside the other's
		// hypertables. ddl runs it once more, and IF NOT EXISTS then
		// finds the extension there.
		if err := ddl(ctx, c, "CREATE EXTENSION IF NOT EXISTS timescaledb"); err == nil {
			return true, nil
		} else {
			s.AddNote(plainTables + "the timescaledb extension cannot be created (see the log)")
			s.log.Warn("dialect=timescaledb but the timescaledb extension cannot be created: using plain tables",
				zap.String("target", s.target), zap.Error(err))
			return false, nil
		}
	}
	s.AddNote(plainTables + "the server has no timescaledb extension")
	s.log.Warn("dialect=timescaledb but the server has no timescaledb extension: using plain tables",
		zap.String("target", s.target))
	return false, nil
}

// checkColumns fails when p's table is missing, lacks a column soakd
// writes, or has one of another type than soakd writes: better said once
// at startup than by every write. A column of another type is no less
// wrong than a missing one: binary COPY of a float8 into a bigint column
// is taken without a word, and stores garbage.
func checkColumns(ctx context.Context, c *pgx.Conn, cfg Config, p *plan) error {
	have, err := checkTableColumns(ctx, c, cfg, p.table, p.names)
	if err != nil {
		return err
	}
	if cfg.Dialect == Cockroach || cfg.Dialect == KWDB {
		return nil // their catalogs name types otherwise (INT8 is bigint)
	}
	var wrong []string
	for _, n := range p.names {
		want := columnType(cfg, p, n)
		got := have[n]
		if want == "" || strings.EqualFold(got, want) || want == "text" && strings.HasPrefix(got, "character varying") {
			continue
		}
		wrong = append(wrong, fmt.Sprintf("%s is %s, not %s", quote(n), got, want))
	}
	if len(wrong) > 0 {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s exists with columns of other types than soakd writes: %s (%s)",
			p.table, someNames(wrong), otherTable(cfg)))
	}
	return nil
}

// columnType is the type (as format_type names it) of p's column n in a
// table soakd creates: the one it writes; "" for a column of another
// kind.
func columnType(cfg Config, p *plan, n string) string {
	if n == timeColumn {
		return "timestamp with time zone"
	}
	if cfg.Layout == TSBSLayout && n == tsbsTagsID {
		return "integer"
	}
	for _, f := range p.schema.Fields {
		if f.Name == n {
			if cfg.Layout == TSBSLayout {
				return "double precision"
			}
			return fieldType(cfg.Dialect, f.Kind)
		}
	}
	if cfg.Layout != TSBSLayout && slices.Contains(p.schema.TagKeys, n) {
		return "text"
	}
	return ""
}

// notATable names the kinds of relation (pg_class.relkind) other than a
// table, plain or partitioned, that a table's name may be taken by.
var notATable = map[string]string{
	"v": "a view", "m": "a materialized view", "f": "a foreign table", "S": "a sequence",
	"i": "an index", "I": "a partitioned index", "c": "a composite type", "t": "a TOAST table",
}

// checkTableColumns fails when table is missing or lacks one of cols;
// else it returns the table's columns with their types.
func checkTableColumns(ctx context.Context, c *pgx.Conn, cfg Config, table string, cols []string) (map[string]string, error) {
	rows, err := c.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, table)
	if err != nil {
		return nil, classify(fmt.Errorf("cannot read the columns of %s: %w", table, err), false, false)
	}
	have := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { have[name] = typ; return nil }); err != nil {
		return nil, classify(fmt.Errorf("cannot read the columns of %s: %w", table, err), false, false)
	}
	if len(have) == 0 {
		return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s does not exist (create=false, or created in another schema than the search_path's first: see schema=)", table))
	}
	// A view (or another relation that is no table) of the name passed
	// the columns and failed at CREATE INDEX with "cannot create index on
	// relation", which says neither what it is nor what to change. With
	// create=false soakd makes nothing: an updatable view is the user's
	// to write through.
	if cfg.Create {
		var kind string
		if err := c.QueryRow(ctx, `SELECT relkind::text FROM pg_catalog.pg_class WHERE oid = to_regclass($1)`, table).Scan(&kind); err != nil {
			return nil, classify(fmt.Errorf("cannot read what %s is: %w", table, err), false, false)
		}
		if what, ok := notATable[kind]; ok {
			return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("%s is %s, not a table soakd can make its indexes on (%s)", table, what, otherTable(cfg)))
		}
	}
	var missing []string
	for _, name := range cols {
		if _, ok := have[name]; !ok {
			missing = append(missing, quote(name))
		}
	}
	if len(missing) > 0 {
		return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s exists but lacks columns %s (%s)",
			table, someNames(missing), otherTable(cfg)))
	}
	return have, nil
}

// maxNamed is how many columns an error names: a table of the massive
// source has up to 1000, and an error naming each would run to 30 KB,
// repeated in the log and the summary.
const maxNamed = 8

// someNames lists names for an error: every one up to maxNamed, else the
// first maxNamed and how many more.
func someNames(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (%d in all)", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed, len(names))
}

// otherTable says, in an error about a table that exists with other
// columns than soakd writes, where it may come from and the ways out.
func otherTable(cfg Config) string {
	const from = "made by another tool, or by a run of another source, layout or settings, such as the massive source's COLUMNS or COLUMN_TYPE? "
	if cfg.Layout == TSBSLayout || cfg.Dialect == KWDB {
		return from + "drop it, or use another database"
	}
	return from + "drop it, or write elsewhere: schema= or table_prefix= in the target URL"
}

// checkUnique fails when dedup is on but p's table has no unique index
// on exactly (device, time): ON CONFLICT DO NOTHING would then store
// every duplicate without a word.
func checkUnique(ctx context.Context, c *pgx.Conn, p *plan) error {
	want := []string{p.schema.TagKeys[p.schema.DeviceTag], timeColumn}
	slices.Sort(want)
	var n int
	err := c.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_index i
		WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnatts = 2
		AND (SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_catalog.pg_attribute a
			WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) = $2::text[]`, p.table, want).Scan(&n)
	if err != nil {
		return classify(fmt.Errorf("cannot read the indexes of %s: %w", p.table, err), false, false)
	}
	if n == 0 {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("dedup=true but table %s has no primary key or unique index on (%s, %s): it was created without dedup; drop it or use another database",
			p.table, quote(want[0]), quote(want[1])))
	}
	return nil
}

// ReshapeTables drops each of the sink's own tables that exists with
// other columns than the sink writes (another COLUMNS or COLUMN_TYPE of
// the massive source, say), so that Prepare creates it anew for this
// shape; a table of the right shape is kept, rows and all. soakd sweep
// calls it before each point with SOAKD_SWEEP_RESET=true, so that no
// point writes into a table made for another: Prepare refuses a table
// that lacks a column, but one with a column more would take rows
// wider than the point's, and one of another column type would cast.
// With create=false soakd drops nothing: a table of another shape is an
// error. KWDB's catalog differs: its tables are left as they are.
func (s *Sink) ReshapeTables(ctx context.Context) error {
	if s.cfg.Dialect == KWDB {
		return nil
	}
	for _, p := range *s.plans.Load() {
		rows, err := s.pool.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
			WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, p.table)
		if err != nil {
			return classify(fmt.Errorf("cannot read the columns of %s: %w", p.table, err), true, false)
		}
		have := map[string]string{}
		var name, typ string
		if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error { have[name] = typ; return nil }); err != nil {
			return classify(fmt.Errorf("cannot read the columns of %s: %w", p.table, err), true, false)
		}
		if len(have) == 0 || sameShape(s.cfg, p, have) {
			continue
		}
		if !s.cfg.Create {
			return sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s has other columns than soakd writes, and create=false: soakd does not drop it (drop it, or use another database)", p.table))
		}
		if _, err := s.pool.Exec(ctx, "DROP TABLE "+p.table); err != nil {
			return classify(fmt.Errorf("cannot drop %s, made for another shape: %w", p.table, err), true, false)
		}
		s.log.Info("dropped a table made for another shape", zap.String("table", p.table), zap.Int("columns", len(have)), zap.Int("want", len(p.names)))
	}
	return nil
}

// sameShape says whether a table's columns (name → type) are exactly
// those p writes, with the field types soakd creates them with.
func sameShape(c Config, p *plan, have map[string]string) bool {
	if len(have) != len(p.names) {
		return false
	}
	for _, n := range p.names {
		if _, ok := have[n]; !ok {
			return false
		}
	}
	if c.Dialect == Cockroach {
		return true // its catalog names types otherwise (INT8 is bigint)
	}
	fields := p.schema.Fields
	for i, f := range fields {
		n := p.names[len(p.names)-len(fields)+i]
		if !strings.EqualFold(have[n], fieldType(c.Dialect, f.Kind)) {
			return false
		}
	}
	return true
}
