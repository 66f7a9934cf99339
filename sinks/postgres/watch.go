package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/soakd/soakd/sinks"
)

var _ sinks.TargetWatcher = (*Sink)(nil)

// What PostgreSQL cannot tell over SQL: the server process's memory and
// CPU time are the operating system's to report.
const (
	noMemory = "PostgreSQL reports no memory figure over SQL; watch the server process (SOAKD_<W>_WATCH_PROCESS)"
	noCPU    = "PostgreSQL reports no CPU time over SQL; watch the server process (SOAKD_<W>_WATCH_PROCESS)"
)

// walStart is the WAL position of the sink's first reading: the wal
// figure is what the server generated since.
type walStart struct {
	mu  sync.Mutex
	lsn uint64
	set bool
}

// sinceFirst returns the bytes from the first position seen to lsn.
func (w *walStart) sinceFirst(lsn uint64) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.set {
		w.lsn, w.set = lsn, true
	}
	if lsn < w.lsn {
		return 0 // another server behind the same address (a failover)
	}
	return float64(lsn - w.lsn)
}

// parseLSN reads a pg_lsn's text form, two hexadecimal halves "16/B374D848".
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	return h<<32 | l, nil
}

// ownTables are the tables the sink writes, as Prepare names them: one
// per plan, and layout=tsbs's tags table.
func (s *Sink) ownTables() []string {
	plans := *s.plans.Load()
	tables := make([]string, 0, len(plans)+1)
	for _, p := range plans {
		tables = append(tables, p.table)
	}
	if s.cfg.Layout == TSBSLayout && len(plans) > 0 {
		tables = append(tables, quote(tsbsTags))
	}
	return tables
}

// plainSizes sums pg_table_size (heap, TOAST, free space and visibility
// maps) and pg_indexes_size over $1's tables and every table that
// inherits from them: partitions, and the chunks of a hypertable when
// TimescaleDB is absent. A table not created yet counts nothing.
const plainSizes = `WITH RECURSIVE own AS (
	SELECT DISTINCT c.oid FROM unnest($1::text[]) AS n(name) JOIN pg_catalog.pg_class c ON c.oid = to_regclass(n.name)
), tree(oid) AS (
	SELECT oid FROM own
	UNION
	SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid
)
SELECT coalesce(sum(pg_table_size(oid)), 0)::float8, coalesce(sum(pg_indexes_size(oid)), 0)::float8,
	false, 0::float8, 0::float8
FROM tree`

// timescaleSizes is plainSizes for a database with TimescaleDB: a
// hypertable's sizes are hypertable_detailed_size's (its chunks,
// compressed ones included, whose data lives outside the inheritance
// tree), and the compression statistics of the hypertables that have
// compression on are summed.
const timescaleSizes = `WITH RECURSIVE own AS (
	SELECT DISTINCT c.oid FROM unnest($1::text[]) AS n(name) JOIN pg_catalog.pg_class c ON c.oid = to_regclass(n.name)
), hyper AS (
	SELECT own.oid, h.compression_enabled FROM own JOIN timescaledb_information.hypertables h
		ON format('%I.%I', h.hypertable_schema, h.hypertable_name)::regclass = own.oid
), tree(oid) AS (
	SELECT oid FROM own WHERE oid NOT IN (SELECT oid FROM hyper)
	UNION
	SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent = tree.oid
), plain AS (
	SELECT coalesce(sum(pg_table_size(oid)), 0) AS tbl, coalesce(sum(pg_indexes_size(oid)), 0) AS idx FROM tree
), hs AS (
	SELECT coalesce(sum(d.table_bytes + d.toast_bytes), 0) AS tbl, coalesce(sum(d.index_bytes), 0) AS idx
	FROM hyper, LATERAL hypertable_detailed_size(hyper.oid) d
), cs AS (
	SELECT coalesce(sum(st.before_compression_total_bytes), 0) AS before, coalesce(sum(st.after_compression_total_bytes), 0) AS after
	FROM (SELECT oid FROM hyper WHERE compression_enabled) z, LATERAL hypertable_compression_stats(z.oid) st
)
SELECT (plain.tbl + hs.tbl)::float8, (plain.idx + hs.idx)::float8,
	coalesce((SELECT bool_or(compression_enabled) FROM hyper), false), cs.before::float8, cs.after::float8
FROM plain, hs, cs`

// TargetFigures reads the storage of the sink's own tables (kinds table
// and index; compressed and uncompressed for TimescaleDB hypertables
// with compression on), of the database (database), and the WAL the
// server generated since the sink's first reading (wal, server-wide). It uses
// one connection of the sink's pool, the one kept beyond the workers'.
// A figure the server refuses (a privilege, a function a fork lacks) is
// named in Unavailable; only a failure to reach the server is an error.
func (s *Sink) TargetFigures(ctx context.Context) (sinks.TargetFigures, error) {
	f := sinks.TargetFigures{
		Memory: map[string]float64{}, Storage: map[string]float64{},
		Unavailable: map[string]string{"memory": noMemory, "cpu": noCPU},
	}
	if s.cfg.Dialect == Cockroach || s.cfg.Dialect == KWDB {
		// Neither has pg_table_size, pg_database_size or a WAL position.
		if err := s.Ping(ctx); err != nil {
			return sinks.TargetFigures{}, err
		}
		f.Unavailable["storage"] = fmt.Sprintf("dialect %s: the server has no pg_table_size, pg_database_size or WAL position over SQL", s.cfg.Dialect)
		return f, nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return sinks.TargetFigures{}, classify(fmt.Errorf("cannot connect to read the target's figures: %w", err), true, false)
	}
	defer conn.Release()
	c := conn.Conn()
	// refused tells a figure the server will not give (the error is the
	// figure's why) from a server that is not answering (returned).
	refused := func(what string, err error) error {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return classify(fmt.Errorf("cannot read %s from %s: %w", what, s.target, err), true, false)
		}
		if cl := sinks.ClassOf(classify(err, false, false)); cl == sinks.Connection || cl == sinks.Timeout {
			return classify(fmt.Errorf("cannot read %s from %s: %w", what, s.target, err), false, false)
		}
		return nil
	}

	var dbSize float64
	var timescale bool
	err = c.QueryRow(ctx, `SELECT pg_database_size(current_database())::float8,
		EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'timescaledb')`).Scan(&dbSize, &timescale)
	if err != nil {
		if rerr := refused("the database's size", err); rerr != nil {
			return sinks.TargetFigures{}, rerr
		}
		f.Unavailable["storage.database"] = "the server refuses pg_database_size: " + err.Error()
		// Without the first query's answer, look for hypertables only
		// when the dialect asks for them; the sizes query says if wrong.
		timescale = s.cfg.Dialect == TimescaleDB
	} else {
		f.Storage["database"] = dbSize
	}

	q := plainSizes
	if timescale {
		q = timescaleSizes
	}
	var tbl, idx, before, after float64
	var compression bool
	if err := c.QueryRow(ctx, q, s.ownTables()).Scan(&tbl, &idx, &compression, &before, &after); err != nil {
		if rerr := refused("the tables' sizes", err); rerr != nil {
			return sinks.TargetFigures{}, rerr
		}
		why := "the server refuses the sizes of soakd's tables: " + err.Error()
		f.Unavailable["storage.table"], f.Unavailable["storage.index"] = why, why
	} else {
		f.Storage["table"], f.Storage["index"] = tbl, idx
		if compression {
			f.Storage["uncompressed"], f.Storage["compressed"] = before, after
		}
	}

	var lsn string
	// The insert position, not pg_current_wal_lsn's write position: with
	// synchronous_commit=off a committed write's WAL may not be written
	// out yet, and the figure would lag what the server generated.
	if err := c.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		if rerr := refused("the WAL position", err); rerr != nil {
			return sinks.TargetFigures{}, rerr
		}
		f.Unavailable["storage.wal"] = "the server refuses pg_current_wal_insert_lsn (a standby, or a privilege revoked): " + err.Error()
	} else if pos, err := parseLSN(lsn); err != nil {
		f.Unavailable["storage.wal"] = err.Error()
	} else {
		f.Storage["wal"] = s.wal.sinceFirst(pos)
	}
	return f, nil
}
