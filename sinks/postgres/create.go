package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// create makes what is missing of the sink's schema, tables and indexes
// (create=true), and leaves what exists as it is, without DDL:
// PostgreSQL checks the CREATE privilege before IF NOT EXISTS, so a
// CREATE ... IF NOT EXISTS of an object that exists is refused to a user
// who may write into it but not create there.
func (s *Sink) create(ctx context.Context, c *pgx.Conn, plans []*plan) error {
	if s.cfg.Dialect == KWDB {
		// KWDB's catalog differs: its DDL runs as it is, IF NOT EXISTS.
		for _, q := range preamble(s.cfg) {
			if err := ddl(ctx, c, q); err != nil {
				return err
			}
		}
		for _, p := range plans {
			for _, q := range createTable(s.cfg, p) {
				if err := ddl(ctx, c, q); err != nil {
					return err
				}
			}
		}
		s.log.Info("tables ready", zap.String("target", s.target), zap.Stringer("dialect", s.cfg.Dialect),
			zap.Stringer("layout", s.cfg.Layout), zap.Int("tables", len(plans)), zap.Bool("dedup", s.cfg.Dedup))
		return nil
	}
	if err := s.createSchema(ctx, c); err != nil {
		return err
	}
	hyper := false
	if s.cfg.Dialect == TimescaleDB && len(plans) > 0 {
		var err error
		if hyper, err = s.timescale(ctx, c); err != nil {
			return err
		}
	}
	if s.cfg.Layout == TSBSLayout && len(plans) > 0 {
		stmts := tsbsTagsDDL(plans[0].schema)
		if _, err := s.createMissingTable(ctx, c, tsbsTags, stmts[0]); err != nil {
			return err
		}
		// A tags table left by another source (iot's name, fleet, ...
		// where devops writes hostname, region, ...) is refused for the
		// columns it lacks before soakd indexes them.
		if _, err := checkTableColumns(ctx, c, s.cfg, quote(tsbsTags), tsbsTagsColumns(plans[0].schema)); err != nil {
			return err
		}
		if err := s.createIndexes(ctx, c, quote(tsbsTags), stmts[1:]); err != nil {
			return err
		}
	}
	hypertables := 0
	for _, p := range plans {
		stmts := createTable(s.cfg, p)
		existed, err := s.createMissingTable(ctx, c, s.cfg.TablePrefix+p.schema.Measurement, stmts[0])
		if err != nil {
			return err
		}
		// A table that was there already (another tool's, another
		// source's) is checked before soakd turns it into a hypertable or
		// indexes it: refused untouched, with what is wrong with it.
		if err := checkColumns(ctx, c, s.cfg, p); err != nil {
			return err
		}
		if hyper {
			made, err := s.makeHypertable(ctx, c, p, existed)
			if err != nil {
				return err
			}
			if made {
				hypertables++
			}
		}
		if err := s.createIndexes(ctx, c, p.table, stmts[1:]); err != nil {
			return err
		}
	}
	s.log.Info("tables ready", zap.String("target", s.target), zap.Stringer("dialect", s.cfg.Dialect),
		zap.Stringer("layout", s.cfg.Layout), zap.Int("tables", len(plans)), zap.Int("hypertables", hypertables),
		zap.Bool("dedup", s.cfg.Dedup))
	return nil
}

// createSchema creates the schema of schema= when it is missing.
func (s *Sink) createSchema(ctx context.Context, c *pgx.Conn) error {
	if s.cfg.Schema == "" {
		return nil
	}
	var exists bool
	err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1::text)", s.cfg.Schema).Scan(&exists)
	if err != nil {
		return classify(fmt.Errorf("cannot look for schema %s: %w", quote(s.cfg.Schema), err), false, false)
	}
	if exists {
		return nil
	}
	for _, q := range preamble(s.cfg) {
		if err := ddl(ctx, c, q); err != nil {
			return s.refusedCreate(ctx, c, err, "schema", s.cfg.Schema)
		}
	}
	return nil
}

// createMissingTable runs q, the CREATE TABLE of table name, when no table of
// that name exists in the schema soakd creates its tables in. existed
// says it was there.
func (s *Sink) createMissingTable(ctx context.Context, c *pgx.Conn, name, q string) (existed bool, _ error) {
	existed, err := s.relationExists(ctx, c, name)
	if err != nil || existed {
		return existed, err
	}
	if err := ddl(ctx, c, q); err != nil {
		return false, s.refusedCreate(ctx, c, err, "table", name)
	}
	return false, nil
}

// createIndexes runs the CREATE INDEX statements stmts of table, each
// whose index is missing. An index soakd may not create (the user does
// not own the table, or may not create in its schema) is no reason to
// refuse writing: a warning says it is missing.
func (s *Sink) createIndexes(ctx context.Context, c *pgx.Conn, table string, stmts []string) error {
	for _, q := range stmts {
		name := ddlIndexName(q)
		if name != "" {
			exists, err := s.relationExists(ctx, c, name)
			if err != nil {
				return err
			}
			if exists {
				continue
			}
		}
		err := ddl(ctx, c, q)
		if denied(err) {
			s.log.Warn("table "+table+" lacks the index "+quote(name)+" soakd creates, and the target URL's user may not create it: writing without it (create it as the table's owner)",
				zap.String("target", s.target), zap.Error(err))
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// relationExists says whether a relation (table, index, ...) named name
// exists in the schema soakd creates its tables in: schema=, else the
// first schema of the search_path that exists, where CREATE puts an
// unqualified name. An index lives in its table's schema.
func (s *Sink) relationExists(ctx context.Context, c *pgx.Conn, name string) (bool, error) {
	var exists bool
	err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = $2::text AND n.nspname = coalesce(nullif($1::text, ''), (current_schemas(false))[1]))`, s.cfg.Schema, name).Scan(&exists)
	if err != nil {
		return false, classify(fmt.Errorf("cannot look for %s: %w", quote(name), err), false, false)
	}
	return exists, nil
}

// denied says whether err is PostgreSQL's "permission denied"
// (insufficient_privilege, 42501).
func denied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// refusedCreate explains err, a CREATE of the missing schema or table
// name refused for want of a privilege: what is missing, and what lets
// soakd go on. Other errors are returned as they are.
func (s *Sink) refusedCreate(ctx context.Context, c *pgx.Conn, err error, kind, name string) error {
	var pgErr *pgconn.PgError
	if !denied(err) || !errors.As(err, &pgErr) {
		return err
	}
	var user, db, nsp string
	if qerr := c.QueryRow(ctx, "SELECT current_user, current_database(), coalesce(nullif($1::text, ''), (current_schemas(false))[1], '')",
		s.cfg.Schema).Scan(&user, &db, &nsp); qerr != nil {
		return err
	}
	const only = "create=true creates only what is missing; create=false creates nothing and refuses a missing table"
	if kind == "schema" {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("schema %s (schema=) does not exist, and user %s may not create it (%s): create it beforehand, or GRANT CREATE ON DATABASE %s TO %s (%s)",
			quote(name), quote(user), pgErr.Message, quote(db), quote(user), only))
	}
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s does not exist in schema %s, and user %s may not create it (%s): create it beforehand, or GRANT CREATE ON SCHEMA %s TO %s (%s)",
		quote(name), quote(nsp), quote(user), pgErr.Message, quote(nsp), quote(user), only))
}

// ddlIndexName is the name, unquoted, of the index a CREATE [UNIQUE]
// INDEX IF NOT EXISTS statement creates; "" for another statement.
func ddlIndexName(q string) string {
	const marker = "INDEX IF NOT EXISTS "
	i := strings.Index(q, marker)
	if i < 0 {
		return ""
	}
	rest := q[i+len(marker):]
	if !strings.HasPrefix(rest, `"`) {
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			return rest[:j]
		}
		return rest
	}
	var b strings.Builder
	for j := 1; j < len(rest); j++ {
		if rest[j] != '"' {
			b.WriteByte(rest[j])
			continue
		}
		if j+1 < len(rest) && rest[j+1] == '"' {
			b.WriteByte('"')
			j++
			continue
		}
		return b.String()
	}
	return ""
}

// makeHypertable makes p's table a hypertable, unless it is one already
// (then there is nothing to do, as create_hypertable's if_not_exists
// would say), and reports whether it is one. A table that existed as a
// plain table with rows (made by a run before the extension was
// installed) stays one, with a warning: TimescaleDB makes only an empty
// table a hypertable, unless told to migrate its rows, which soakd
// leaves to the table's owner. So does an existing table the user may
// not make a hypertable (neither its owner nor the extension's).
func (s *Sink) makeHypertable(ctx context.Context, c *pgx.Conn, p *plan, existed bool) (bool, error) {
	var hyper bool
	err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM timescaledb_information.hypertables h
		JOIN pg_catalog.pg_namespace n ON n.nspname = h.hypertable_schema
		JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = h.hypertable_name
		WHERE c.oid = to_regclass($1::text))`, p.table).Scan(&hyper)
	if err != nil {
		return false, classify(fmt.Errorf("cannot tell whether %s is a hypertable: %w", p.table, err), false, false)
	}
	if hyper {
		return true, nil
	}
	migrate := strings.Replace(hypertable(s.cfg, p), "if_not_exists => TRUE)", "migrate_data => TRUE)", 1)
	if existed {
		var rows bool
		err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+p.table+")").Scan(&rows)
		if err != nil && !denied(err) { // denied: create_hypertable answers
			return false, classify(fmt.Errorf("cannot tell whether %s holds rows: %w", p.table, err), false, false)
		}
		if rows {
			s.AddNote("dialect=timescaledb, but table " + p.table + " is a plain table, not a hypertable: it held rows before (see the log)")
			s.log.Warn("dialect=timescaledb but table "+p.table+" exists as a plain table with rows, not a hypertable (made before the timescaledb extension was installed in the database?), and TimescaleDB makes only an empty table a hypertable: writing into it as a plain table; for hypertables give a fresh schema= or table_prefix=, or migrate its rows as its owner: "+migrate,
				zap.String("target", s.target))
			return false, nil
		}
	}
	err = ddl(ctx, c, hypertable(s.cfg, p))
	if existed && denied(err) {
		s.AddNote("dialect=timescaledb, but table " + p.table + " is a plain table, not a hypertable: the target URL's user may not make it one (see the log)")
		s.log.Warn("dialect=timescaledb but table "+p.table+" exists as a plain table, not a hypertable, and the target URL's user may not make it one (not its owner): writing into it as a plain table; its owner may run "+migrate,
			zap.String("target", s.target), zap.Error(err))
		return false, nil
	}
	return err == nil, err
}
