package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// DefaultConnectTimeout bounds establishing one connection when the URL
// has no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// cancelGrace is how long a write whose context ended waits for the
// server to confirm the cancellation before closing the connection.
const cancelGrace = time.Second

// Sink writes series batches to a PostgreSQL-wire database.
type Sink struct {
	cfg    Config
	pool   *pgxpool.Pool
	conns  sinks.Conns
	log    *zap.Logger
	target string // redacted URL, for logs

	plansMu sync.Mutex
	plans   atomic.Pointer[[]*plan] // copy-on-write, indexed by plan.id

	writers chan *writer // free list, bounded by the pool size

	tagIDs tagIDs // layout=tsbs: tags.id by device

	q *querier // query workloads: nil for series ones
	sinks.QueryState

	wal walStart // TargetFigures' first WAL position

	// answered: a ping succeeded once, so the server speaks PostgreSQL
	// (see mismatched).
	answered atomic.Bool

	// Notes say in the summary what the log warned of: a
	// dialect=timescaledb target that got plain tables.
	sinks.NoteSet

	closeOnce sync.Once
}

var (
	_ sinks.Sink     = (*Sink)(nil)
	_ sinks.Preparer = (*Sink)(nil)
	_ sinks.Pinger   = (*Sink)(nil)
	_ sinks.Querier  = (*Sink)(nil)
	_ sinks.Noter    = (*Sink)(nil)
)

// writer is the reusable state of one Write.
type writer struct {
	cr copyReader
	pe paramEncoder
	sb strings.Builder
	// broken marks a writer whose copy reader a pgconn goroutine may
	// still hold: it is dropped, never reused.
	broken bool

	// layout=tsbs: the tags ids this writer has used, by device; the ids
	// of the table being copied, by row; devices to look up.
	tagIDs  map[uint32]int32
	ids     []int32
	missing []uint32
}

// connState is what a connection has been given: prepared statements and
// staging tables. It lives in the connection's CustomData, so it goes
// away with the connection.
type connState struct {
	prepared map[string]bool
	staged   map[int]bool
}

const connStateKey = "soakd.postgres"

func stateOf(pc *pgconn.PgConn) *connState {
	m := pc.CustomData()
	if st, ok := m[connStateKey].(*connState); ok {
		return st
	}
	st := &connState{prepared: map[string]bool{}, staged: map[int]bool{}}
	m[connStateKey] = st
	return st
}

// parse validates u and builds the pool configuration (no I/O).
func parse(u *url.URL, o sinks.Options) (Config, *pgxpool.Config, error) {
	c, connString, err := ParseURL(u)
	if err != nil {
		return c, nil, err
	}
	pc, err := pgxpool.ParseConfig(connString)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) {
			pe.ConnString = sinks.Redact(pe.ConnString)
		}
		if strings.Contains(err.Error(), "TLS") {
			return c, nil, fmt.Errorf("invalid TLS settings (sslmode, sslrootcert, sslcert, sslkey, sslpassword): %w", err)
		}
		return c, nil, fmt.Errorf("invalid connection settings: %w", err)
	}
	if pc.ConnConfig.Password == "" && o.Password != "" {
		pc.ConnConfig.Password = o.Password
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	// When a write's context ends, ask the server to cancel the statement
	// before dropping the connection: a cancelled statement is rolled back
	// and reported (57014), so the write's outcome is known and rows
	// stored keep matching rows acknowledged. The connection is closed
	// only if the server does not answer within cancelGrace.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	if !u.Query().Has("pool_max_conns") {
		w := max(o.Workers, 1)
		// One connection per worker, plus one so that readiness pings and
		// Prepare never wait behind busy writers.
		pc.MaxConns = int32(min(w+1, 1<<20))
	}
	return c, pc, nil
}

// Open is the registry's OpenFunc: it parses u and builds the connection
// pool without connecting (Prepare and the first Write connect).
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	s, err := New(u, o)
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Sink
	}
	return s, nil
}

// New is Open with the concrete type.
func New(u *url.URL, o sinks.Options) (*Sink, error) {
	if o.Kind != 0 && o.Kind != sources.Series && o.Kind != sources.Queries {
		return nil, fmt.Errorf("the postgres sink takes series and query workloads, not %s", o.Kind)
	}
	c, pc, err := parse(u, o)
	if err != nil {
		return nil, err
	}
	if o.Kind == sources.Queries {
		if err := checkQueryConfig(c); err != nil {
			return nil, err
		}
	}
	s := &Sink{cfg: c, log: o.Logger, target: sinks.RedactURL(u)}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if c.Layout == TSBSLayout && len(o.Schemas) > 0 {
		if err := checkTSBSSchemas(o.Schemas); err != nil {
			return nil, err
		}
	}
	plans := make([]*plan, 0, len(o.Schemas))
	for i, sc := range o.Schemas {
		p, err := newPlan(i, c, sc)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	s.plans.Store(&plans)
	if o.Kind == sources.Queries {
		if c.Dialect != Postgres && c.Dialect != TimescaleDB {
			return nil, fmt.Errorf("query workloads are written for PostgreSQL and TimescaleDB, not dialect %s", c.Dialect)
		}
		if s.q, err = newQuerier(s, plans, o.Churn); err != nil {
			return nil, err
		}
	}
	s.writers = make(chan *writer, pc.MaxConns)
	pc.ConnConfig.DialFunc = pgconn.DialFunc(s.conns.Wrap(sinks.DialFunc(pc.ConnConfig.DialFunc)))
	// NewWithConfig connects nobody while MinConns is 0 (the default).
	s.pool, err = pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("cannot build connection pool: %w", err)
	}
	return s, nil
}

// planFor returns the plan of sc, building it on first sight (a source
// whose schemas were not passed in Options).
func (s *Sink) planFor(sc *sources.Schema) (*plan, error) {
	for _, p := range *s.plans.Load() {
		if p.schema == sc {
			return p, nil
		}
	}
	s.plansMu.Lock()
	defer s.plansMu.Unlock()
	old := *s.plans.Load()
	for _, p := range old {
		if p.schema == sc {
			return p, nil
		}
	}
	p, err := newPlan(len(old), s.cfg, sc)
	if err != nil {
		return nil, err
	}
	nw := append(old[:len(old):len(old)], p)
	s.plans.Store(&nw)
	return p, nil
}

func (s *Sink) getWriter() *writer {
	select {
	case w := <-s.writers:
		return w
	default:
		return &writer{}
	}
}

func (s *Sink) putWriter(w *writer) {
	if w.broken {
		return
	}
	w.cr.t = nil
	select {
	case s.writers <- w:
	default:
	}
}

// Write stores every row of b's tables, one round trip per table for
// COPY (inside one transaction when there are several tables) and one
// pipelined round trip for INSERT and unnest. It returns the payload
// bytes sent.
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if len(b.Queries) > 0 {
		return s.writeQueries(ctx, b)
	}
	rows := 0
	for _, t := range b.Tables {
		if t.Len() == 0 {
			continue
		}
		if err := checkTable(t); err != nil {
			return 0, sinks.NewError(sinks.Other, false, err)
		}
		rows += t.Len()
	}
	if rows == 0 {
		if len(b.Ops) > 0 {
			return 0, sinks.NewError(sinks.Rejected, false, errors.New("the postgres sink takes series batches, not key-value operations"))
		}
		return 0, nil
	}
	ctx, cancel, conn, err := s.acquire(ctx, s.cfg.Dedup)
	if err != nil {
		return 0, err
	}
	defer cancel()
	pc := conn.Conn().PgConn()
	w := s.getWriter()
	var n int
	switch s.cfg.Method {
	case Copy:
		n, err = s.writeCopy(ctx, pc, w, b.Tables)
	default:
		n, err = s.writePipeline(ctx, pc, w, b.Tables)
	}
	s.putWriter(w)
	if err != nil {
		lost := pc.IsClosed()
		if !lost && s.cfg.Method != Copy {
			// A failed pipeline leaves it unknown which statements got
			// prepared: start over on a fresh connection.
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = pc.Close(cctx)
			cancel()
		}
		// Release destroys connections that are closed or still in a
		// transaction.
		conn.Release()
		return n, classify(s.explainWrite(err), lost, s.cfg.Dedup)
	}
	conn.Release()
	return n, nil
}

// acquire takes a connection for one write: ctx is the write's context
// with the TIMEOUT deadline, which cancel ends once the write is done.
// A connection that cannot be had is a connection error; resend says
// whether the write may be sent again (the rows were not sent).
func (s *Sink) acquire(ctx context.Context, resend bool) (context.Context, context.CancelFunc, *pgxpool.Conn, error) {
	ctx, cancel := sinks.WriteTimeout(ctx, s.cfg.Timeout)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		cancel()
		return ctx, nil, nil, classify(fmt.Errorf("cannot connect: %w", err), true, resend)
	}
	return ctx, cancel, conn, nil
}

// exec runs sql (one or more statements) with the simple protocol.
func exec(ctx context.Context, pc *pgconn.PgConn, sql string) error {
	return pc.Exec(ctx, sql).Close()
}

// tablePlan is a non-empty table of a batch with its plan.
type tablePlan struct {
	p *plan
	t *sources.Table
}

// planTables appends the non-empty tables of tables with their plans,
// looked up once, to dst.
func (s *Sink) planTables(dst []tablePlan, tables []*sources.Table) ([]tablePlan, error) {
	for _, t := range tables {
		if t.Len() == 0 {
			continue
		}
		p, err := s.planFor(t.Schema)
		if err != nil {
			return dst, sinks.NewError(sinks.Rejected, false, err)
		}
		dst = append(dst, tablePlan{p, t})
	}
	return dst, nil
}

func (s *Sink) writeCopy(ctx context.Context, pc *pgconn.PgConn, w *writer, tables []*sources.Table) (int, error) {
	var jobsArr [16]tablePlan
	jobs, err := s.planTables(jobsArr[:0], tables)
	if err != nil {
		return 0, err
	}
	if s.cfg.Layout == TSBSLayout {
		w.trimTags()
		for _, j := range jobs {
			if err := s.ensureTags(ctx, pc, w, j.t); err != nil {
				return 0, fmt.Errorf("cannot find the tags of %s's devices: %w", j.p.schema.Measurement, err)
			}
		}
	}
	dedup := s.cfg.Dedup
	if dedup || len(jobs) > 1 {
		// Several COPYs (or a COPY and its merge) must commit together,
		// or a failed batch would leave some of its rows stored.
		if dedup {
			// Staging tables are created before BEGIN so that a failed
			// batch does not roll back their creation.
			st := stateOf(pc)
			for _, j := range jobs {
				if p := j.p; !st.staged[p.id] {
					if err := exec(ctx, pc, p.stageCreate); err != nil {
						return 0, fmt.Errorf("cannot create staging table for %s: %w", p.schema.Measurement, err)
					}
					st.staged[p.id] = true
				}
			}
		}
		if err := exec(ctx, pc, "BEGIN"); err != nil {
			return 0, fmt.Errorf("cannot begin transaction: %w", err)
		}
	}
	total := 0
	w.sb.Reset()
	for _, j := range jobs {
		p, t, n := j.p, j.t, j.t.Len()
		sql := p.copySQL
		if dedup {
			sql = p.stageCopy
			if w.sb.Len() > 0 {
				w.sb.WriteString("; ")
			}
			w.sb.WriteString(p.stageMerge)
		}
		w.cr.reset(t)
		if s.cfg.Layout == TSBSLayout {
			w.cr.ids = w.rowIDs(t)
		}
		tag, err := pc.CopyFrom(ctx, &w.cr, sql)
		if err != nil {
			// pgconn returns without waiting for its reader goroutine only
			// after closing the connection; otherwise (a rejected batch)
			// the goroutine is done and the writer can be reused.
			if w.broken = pc.IsClosed(); w.broken {
				total += w.cr.abandon()
			} else {
				total += w.cr.total
			}
			return total, fmt.Errorf("cannot copy %d rows into %s: %w", n, p.schema.Measurement, err)
		}
		total += w.cr.total
		if got := tag.RowsAffected(); got != int64(n) && s.cfg.Dialect != KWDB {
			return total, sinks.NewError(sinks.Other, false, fmt.Errorf("copied %d rows into %s but the server stored %d%s", n, p.schema.Measurement, got, skippedHint(p.schema.Measurement)))
		}
	}
	switch {
	case dedup:
		w.sb.WriteString("; COMMIT")
		if err := exec(ctx, pc, w.sb.String()); err != nil {
			return total, fmt.Errorf("cannot merge staged rows: %w", err)
		}
	case len(jobs) > 1:
		if err := exec(ctx, pc, "COMMIT"); err != nil {
			return total, fmt.Errorf("cannot commit: %w", err)
		}
	}
	return total, nil
}

// pending is what a pipelined request will answer: rows for plan p, or
// (p nil) a statement description for a Prepare.
type pending struct {
	p    *plan
	rows int
}

func (s *Sink) writePipeline(ctx context.Context, pc *pgconn.PgConn, w *writer, tables []*sources.Table) (int, error) {
	st := stateOf(pc)
	w.pe.reset()
	// Encode every table first: parameters point into one buffer that
	// must not move while requests are queued.
	type span struct {
		tablePlan
		first, end int // parameter indexes
	}
	var plansArr [16]tablePlan
	plans, err := s.planTables(plansArr[:0], tables)
	if err != nil {
		return 0, err
	}
	var spansArr [16]span
	spans := spansArr[:0]
	for _, tp := range plans {
		first := len(w.pe.ends)
		if s.cfg.Method == Unnest {
			w.pe.arrays(tp.t)
		} else {
			w.pe.rows(tp.t)
		}
		spans = append(spans, span{tp, first, len(w.pe.ends)})
	}
	vals := w.pe.finish()
	bytes := len(w.pe.buf)

	var pendArr [64]pending
	pend := pendArr[:0]
	pl := pc.StartPipeline(ctx)
	for _, sp := range spans {
		p := sp.p
		if s.cfg.Method == Unnest {
			if !st.prepared[p.unnestName] {
				pl.SendPrepare(p.unnestName, p.unnestSQL, p.unnestOIDs)
				pend = append(pend, pending{})
				st.prepared[p.unnestName] = true
			}
			pl.SendQueryPrepared(p.unnestName, vals[sp.first:sp.end], binaryFormat, nil)
			pend = append(pend, pending{p: p, rows: sp.t.Len()})
			continue
		}
		p.chunks(sp.t.Len(), func(start, rows int) {
			stm := p.insertStmt(rows)
			if !st.prepared[stm.name] {
				pl.SendPrepare(stm.name, stm.sql, p.insertOIDs)
				pend = append(pend, pending{})
				st.prepared[stm.name] = true
			}
			from := sp.first + start*p.nCols
			pl.SendQueryPrepared(stm.name, vals[from:from+rows*p.nCols], binaryFormat, nil)
			pend = append(pend, pending{p: p, rows: rows})
		})
	}
	if err := pl.Sync(); err != nil {
		_ = pl.Close()
		return 0, fmt.Errorf("cannot send %d statements: %w", len(pend), err)
	}
	// Statements are marked prepared as they are queued (a batch may use
	// one several times); after any failure the caller closes the
	// connection, and the marks go with it.
	var firstErr error
	for i := 0; ; {
		res, err := pl.GetResults()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				i++
				continue
			}
			break
		}
		switch r := res.(type) {
		case *pgconn.StatementDescription:
			i++
		case *pgconn.ResultReader:
			tag, err := r.Close()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if err == nil && i < len(pend) && pend[i].p != nil && !s.cfg.Dedup && s.cfg.Dialect != KWDB &&
				tag.RowsAffected() != int64(pend[i].rows) && firstErr == nil {
				firstErr = sinks.NewError(sinks.Other, false, fmt.Errorf("inserted %d rows into %s but the server stored %d%s",
					pend[i].rows, pend[i].p.schema.Measurement, tag.RowsAffected(), skippedHint(pend[i].p.schema.Measurement)))
			}
			i++
		case *pgconn.PipelineSync, nil:
			res = nil
		}
		if res == nil {
			break
		}
	}
	if err := pl.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return bytes, fmt.Errorf("cannot insert %d statements' rows (%s): %w", len(pend), s.cfg.Method, firstErr)
	}
	return bytes, nil
}

// ServerVersion is SELECT version(), for reports.
func (s *Sink) ServerVersion(ctx context.Context) (string, error) {
	var v string
	if err := s.pool.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", classify(fmt.Errorf("cannot ask %s for its version: %w", s.target, err), true, false)
	}
	return v, nil
}

// Ping checks that the server answers, for /readyz.
func (s *Sink) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return s.mismatched(ctx, classify(fmt.Errorf("cannot reach %s: %w", s.target, err), true, false))
	}
	s.answered.Store(true)
	return nil
}

// Notes are the notes for the summary: the tables that are not
// hypertables under dialect=timescaledb, and a query workload's data
// never found.
func (s *Sink) Notes() []string { return append(s.NoteSet.Notes(), s.QueryNotes()...) }

// OpenConns is the number of connections open to the server now.
func (s *Sink) OpenConns() int64 { return s.conns.Open() }

// Close closes the pool. The engine calls it once, after every Write has
// returned; later calls do nothing. pgx gives a connection to a server
// that stopped answering up to 15 s to close (its cancel request waits
// for the server); Close waits no longer than ctx allows and lets such
// connections finish closing in the background.
func (s *Sink) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.StopRangeWatch()
		done := make(chan struct{})
		go func() {
			s.pool.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = sinks.NewError(sinks.Timeout, false, fmt.Errorf("connections to %s are still closing: %w", s.target, ctx.Err()))
		}
	})
	return err
}

// skippedHint says what makes a server store fewer rows than it was sent
// without an error, for the table the rows went to: a BEFORE INSERT
// trigger that returns NULL (COPY and INSERT), a rule DO INSTEAD (INSERT;
// COPY ignores rules), or an ON CONFLICT clause the server adds.
func skippedHint(table string) string {
	return fmt.Sprintf(" (a BEFORE INSERT trigger on %s that returns NULL, or a rule DO INSTEAD on it, skips rows without an error: see \\d %s in psql)", table, table)
}
