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
func (s *Sink) Prepare(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(fmt.Errorf("cannot connect to prepare tables: %w", err), true, false)
	}
	defer conn.Release()
	c := conn.Conn()
	plans := *s.plans.Load()
	if s.cfg.Create {
		for _, q := range preamble(s.cfg) {
			if err := ddl(ctx, c, q); err != nil {
				return err
			}
		}
		hyper := false
		if s.cfg.Dialect == TimescaleDB && len(plans) > 0 {
			hyper, err = s.timescale(ctx, c)
			if err != nil {
				return err
			}
		}
		for _, p := range plans {
			stmts := createTable(s.cfg, p)
			if err := ddl(ctx, c, stmts[0]); err != nil {
				return err
			}
			if hyper {
				if err := ddl(ctx, c, hypertable(s.cfg, p)); err != nil {
					return err
				}
			}
			for _, q := range stmts[1:] {
				if err := ddl(ctx, c, q); err != nil {
					return err
				}
			}
		}
		s.log.Info("tables ready", zap.String("target", s.target), zap.Stringer("dialect", s.cfg.Dialect),
			zap.Int("tables", len(plans)), zap.Bool("hypertables", hyper), zap.Bool("dedup", s.cfg.Dedup))
	}
	if s.cfg.Dialect == KWDB {
		// KWDB's catalog differs; a missing table shows on the first write.
		return nil
	}
	for _, p := range plans {
		if err := checkColumns(ctx, c, p); err != nil {
			return err
		}
		if s.cfg.Dedup && s.cfg.Dialect != Cockroach {
			if err := checkUnique(ctx, c, p); err != nil {
				return err
			}
		}
	}
	return nil
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

// timescale reports whether the timescaledb extension is installed,
// installing it when the server has it available and preloaded. Without
// it the tables stay plain tables, with a warning.
func (s *Sink) timescale(ctx context.Context, c *pgx.Conn) (bool, error) {
	var installed, available, preloaded bool
	err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'),
		EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb'),
		current_setting('shared_preload_libraries') ~ '(^|[ ,])timescaledb([ ,]|$)'`).Scan(&installed, &available, &preloaded)
	if err != nil {
		return false, classify(fmt.Errorf("cannot look for the timescaledb extension: %w", err), false, false)
	}
	if installed {
		return true, nil
	}
	if available && !preloaded {
		// CREATE EXTENSION would fail, and TimescaleDB's loader ends the
		// session with it.
		s.log.Warn("dialect=timescaledb but the server does not preload timescaledb (shared_preload_libraries): using plain tables",
			zap.String("target", s.target))
		return false, nil
	}
	if available {
		if _, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS timescaledb"); err == nil {
			return true, nil
		} else {
			s.log.Warn("dialect=timescaledb but the timescaledb extension cannot be created: using plain tables",
				zap.String("target", s.target), zap.Error(err))
			return false, nil
		}
	}
	s.log.Warn("dialect=timescaledb but the server has no timescaledb extension: using plain tables",
		zap.String("target", s.target))
	return false, nil
}

// checkColumns fails when p's table is missing or lacks a column soakd
// writes: better said once at startup than by every write.
func checkColumns(ctx context.Context, c *pgx.Conn, p *plan) error {
	rows, err := c.Query(ctx, `SELECT a.attname FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, p.table)
	if err != nil {
		return classify(fmt.Errorf("cannot read the columns of %s: %w", p.table, err), false, false)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return classify(fmt.Errorf("cannot read the columns of %s: %w", p.table, err), false, false)
	}
	if len(have) == 0 {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s does not exist (create=false, or created in another schema than the search_path's first: see schema=)", p.table))
	}
	var missing []string
	for i, col := range p.cols {
		name := timeColumn
		if i > 0 && i <= len(p.schema.TagKeys) {
			name = p.schema.TagKeys[i-1]
		} else if i > len(p.schema.TagKeys) {
			name = p.schema.Fields[i-1-len(p.schema.TagKeys)].Name
		}
		if !slices.Contains(have, name) {
			missing = append(missing, col)
		}
	}
	if len(missing) > 0 {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("table %s exists but lacks columns %s (made by another tool? drop it or use another database)",
			p.table, strings.Join(missing, ", ")))
	}
	return nil
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
