package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Query workloads (sources.Queries): each query of a batch is rendered as
// SQL text, TSBS's query for its type, and sent with the simple protocol
// on the worker's connection, one after the other; the sink counts the
// rows that come back without decoding them. Windows are placed in the
// data's time range, which a RangeWatch reads every second from the
// first device's rows (an index lookup).
//
// The SQL is TSBS's (cmd/tsbs_generate_queries/databases/timescaledb,
// with --timescale-use-tags) for layout=tsbs. For the soakd layout, where
// tags are columns of every row, it is the same query over one table; the
// queries that TSBS writes as a LATERAL join over the tags table (the
// last row of each device: lastpoint, last-loc, low-fuel, high-load) walk
// the devices with a recursive skip scan over the (device, time) index
// instead, since there is no table of devices to iterate. Time buckets
// are time_bucket where the timescaledb extension is installed, else
// date_bin (PostgreSQL 14+) with time_bucket's origin, else epoch
// arithmetic. Where TSBS's SQL has no time range (iot's whole-data-set
// queries), the range of the data is written out, so that every target
// reads the same rows; TSBS's breakdown-frequency divides two integer
// counts (always 1, so it never finds a breakdown): here the share of
// zero statuses is computed in floating point, as intended.

// rangeRefresh is how often a query sink reads the data's time range.
const rangeRefresh = time.Second

// bucketMode is how a query groups time into buckets.
type bucketMode uint8

const (
	bucketEpoch      bucketMode = iota // to_timestamp(floor(epoch / n) * n): any PostgreSQL
	bucketDateBin                      // date_bin: PostgreSQL 14+
	bucketTimeBucket                   // time_bucket: TimescaleDB
)

// querier is a sink's state for query workloads.
type querier struct {
	layout Layout
	mode   bucketMode
	// The tables of the data set queried, by role.
	cpu, readings, diagnostics *plan
}

// newQuerier returns s's state for query workloads over plans' tables
// and opens s's shared query state with it.
func newQuerier(s *Sink, plans []*plan, churn *sources.QueryChurn) (*querier, error) {
	tt := sinks.FindTSBSTables(plans, func(p *plan) string { return p.schema.Measurement })
	q := &querier{layout: s.cfg.Layout, cpu: tt.CPU, readings: tt.Readings, diagnostics: tt.Diagnostics}
	main := tt.Main
	if main == nil {
		return nil, errors.New("query workloads read TSBS's tables (cpu, or readings and diagnostics): the source has none")
	}
	fetch := func(ctx context.Context) (sources.DataRange, error) { return s.dataRange(ctx, main) }
	if churn != nil {
		fetch = sinks.ChurnRange(churn, func(ctx context.Context, d uint32, _ int64) (sources.DataRange, error) {
			return s.deviceRange(ctx, main, d)
		}, func(ctx context.Context) (sources.DataRange, error) { return s.tableRange(ctx, main) })
	}
	s.OpenQueries(sinks.NewRangeWatch(rangeRefresh, fetch), q.render)
	s.SetDataPlace(s.log, fmt.Sprintf("table %s (the target URL's database, schema= and table_prefix=)", main.table))
	return q, nil
}

// dataRange reads the oldest and newest timestamps of the first device's
// rows in p's table (both from the (device, time) index), or of the whole
// table when that device has none.
func (s *Sink) dataRange(ctx context.Context, p *plan) (sources.DataRange, error) {
	r, err := s.deviceRange(ctx, p, 0)
	if err == nil && !r.Known {
		return s.tableRange(ctx, p)
	}
	return r, err
}

// deviceRange reads the oldest and newest timestamps of device d's rows
// in p's table, from the (device, time) index.
func (s *Sink) deviceRange(ctx context.Context, p *plan, d uint32) (sources.DataRange, error) {
	sc := p.schema
	name := string(sc.Tags.AppendTag(nil, d, sc.DeviceTag))
	where := p.device + " = $1"
	if s.cfg.Layout == TSBSLayout {
		where = quote(tsbsTagsID) + " = (SELECT min(id) FROM " + quote(tsbsTags) + " WHERE " + p.device + " = $1)"
	}
	return s.readRange(ctx, p, "SELECT min(time), max(time) FROM "+p.table+" WHERE "+where, name)
}

// tableRange reads the oldest and newest timestamps of p's table.
func (s *Sink) tableRange(ctx context.Context, p *plan) (sources.DataRange, error) {
	return s.readRange(ctx, p, "SELECT min(time), max(time) FROM "+p.table)
}

func (s *Sink) readRange(ctx context.Context, p *plan, sql string, args ...any) (sources.DataRange, error) {
	var lo, hi *time.Time
	if err := s.pool.QueryRow(ctx, sql, args...).Scan(&lo, &hi); err != nil {
		return sources.DataRange{}, classify(fmt.Errorf("cannot read the time range of %s: %w", p.table, err), false, true)
	}
	if lo == nil || hi == nil {
		return sources.DataRange{}, nil
	}
	return sources.DataRange{Oldest: lo.UnixNano(), Newest: hi.UnixNano(), Known: true}, nil
}

// prepareQueries finds how to bucket time and starts watching the data's
// range; Prepare calls it once the tables exist.
func (s *Sink) prepareQueries(ctx context.Context) error {
	var ts bool
	var version int
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'),
		current_setting('server_version_num')::int`).Scan(&ts, &version)
	if err != nil {
		return classify(fmt.Errorf("cannot look for time_bucket: %w", err), false, true)
	}
	switch {
	case ts:
		s.q.mode = bucketTimeBucket
	case version >= 140000:
		s.q.mode = bucketDateBin
	default:
		s.q.mode = bucketEpoch
	}
	return s.StartRangeWatch(ctx)
}

// writeQueries runs the queries of b one after the other on one
// connection and sets each one's Rows. It returns the bytes of SQL sent.
func (s *Sink) writeQueries(ctx context.Context, b *sources.Batch) (int, error) {
	rng, err := s.BatchRange()
	if err != nil {
		return 0, err
	}
	ctx, cancel, conn, err := s.acquire(ctx, true)
	if err != nil {
		return 0, err
	}
	defer cancel()
	defer conn.Release()
	pc := conn.Conn().PgConn()
	w := s.getWriter()
	defer s.putWriter(w)
	return s.RunQueries(b, rng, &w.sb, func(q *sources.Query, sql string) (int, int64, error) {
		n, err := runSQL(ctx, pc, sql, nil)
		if err != nil {
			return len(sql), n, classify(fmt.Errorf("query %s: %w", q.Type, err), pc.IsClosed(), true)
		}
		return len(sql), n, nil
	})
}

// runSQL sends sql with the simple protocol and counts the rows of every
// result; with collect it also keeps the last result's columns and
// values.
func runSQL(ctx context.Context, pc *pgconn.PgConn, sql string, collect *sinks.QueryResult) (int64, error) {
	mrr := pc.Exec(ctx, sql)
	var n int64
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		var oids []uint32
		if collect != nil {
			collect.Columns, collect.Rows = collect.Columns[:0], collect.Rows[:0]
			for _, fd := range rr.FieldDescriptions() {
				collect.Columns = append(collect.Columns, fd.Name)
				oids = append(oids, fd.DataTypeOID)
			}
		}
		for rr.NextRow() {
			n++
			if collect != nil {
				vals := rr.Values()
				row := make([]any, len(vals))
				for i, v := range vals {
					row[i] = textValue(oids[i], v)
				}
				collect.Rows = append(collect.Rows, row)
			}
		}
		if _, err := rr.Close(); err != nil {
			_ = mrr.Close()
			return n, err
		}
	}
	return n, mrr.Close()
}

// textValue converts a text-format value to what QueryResult holds.
func textValue(oid uint32, v []byte) any {
	if v == nil {
		return nil
	}
	s := string(v)
	switch oid {
	case 20, 21, 23, 700, 701, 1700: // int8, int2, int4, float4, float8, numeric
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case 16: // bool
		return s == "t"
	case 1184, 1114: // timestamptz, timestamp
		for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UTC()
			}
		}
	}
	return s
}

// QueryRows runs q alone and returns what it returned (for tests that
// compare targets).
func (s *Sink) QueryRows(ctx context.Context, q *sources.Query) (*sinks.QueryResult, error) {
	text, err := s.QueryText(q)
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	res := &sinks.QueryResult{}
	n, err := runSQL(ctx, conn.Conn().PgConn(), text, res)
	q.Rows = n
	return res, err
}
