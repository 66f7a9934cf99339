package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

var _ sinks.SeriesReader = (*Sink)(nil)

// Readable returns nil: every dialect answers SELECT.
func (s *Sink) Readable() error { return nil }

// Resolution is a microsecond: timestamptz's.
func (s *Sink) Resolution() time.Duration { return time.Microsecond }

// readSQL is the query of one device's rows of p's table in a time
// range, in time order, every copy of a repeated row included: the time,
// every tag as text, then the fields. With layout=tsbs the tags are those
// of the row's tags_id in the tags table.
func readSQL(p *plan, layout Layout) string {
	sc := p.schema
	tg := "m." // tags are inline: the table is its own tags table
	if layout == TSBSLayout {
		tg = "g."
	}
	var b strings.Builder
	b.WriteString("SELECT m." + p.cols[0])
	for _, k := range sc.TagKeys {
		b.WriteString(", " + tg + quote(k) + "::text")
	}
	for _, f := range sc.Fields {
		b.WriteString(", m." + quote(f.Name))
		if layout == TSBSLayout && f.Kind == sources.Int {
			b.WriteString("::int8") // every field is double precision there
		}
	}
	b.WriteString(" FROM " + p.table + " m")
	if layout == TSBSLayout {
		b.WriteString(" JOIN " + quote(tsbsTags) + " g ON g.id = m." + quote(tsbsTagsID))
	}
	b.WriteString(" WHERE " + tg + p.device + " = $1 AND m." + p.cols[0] + " >= $2 AND m." + p.cols[0] + " <= $3 ORDER BY m." + p.cols[0])
	return b.String()
}

// ReadSeries reads the rows of every query, pipelined in one round trip.
func (s *Sink) ReadSeries(ctx context.Context, qs []sinks.SeriesQuery, out []*sources.Table) error {
	if len(qs) != len(out) {
		return fmt.Errorf("BUG: postgres: %d queries, %d tables", len(qs), len(out))
	}
	if len(qs) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	var tag []byte
	for _, q := range qs {
		p, err := s.planFor(q.Schema)
		if err != nil {
			return sinks.NewError(sinks.Rejected, false, err)
		}
		tag = q.Schema.Tags.AppendTag(tag[:0], q.Device, q.Schema.DeviceTag)
		batch.Queue(readSQL(p, s.cfg.Layout), string(tag), time.Unix(0, q.From).UTC(), time.Unix(0, q.To).UTC())
	}
	res := s.pool.SendBatch(ctx, batch)
	for i, q := range qs {
		if err := scanRows(res, q, out[i]); err != nil {
			_ = res.Close()
			return classify(fmt.Errorf("cannot read back %s rows of device %d: %w", q.Schema.Measurement, q.Device, err), false, false)
		}
	}
	if err := res.Close(); err != nil {
		return classify(fmt.Errorf("cannot read back rows: %w", err), false, false)
	}
	return nil
}

// scanRows appends the next result's rows to t, nulls included, and
// their tags to q.Tags when set.
func scanRows(res pgx.BatchResults, q sinks.SeriesQuery, t *sources.Table) error {
	rows, err := res.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := q.Schema
	n, nt := len(sc.Fields), len(sc.TagKeys)
	var ts time.Time
	tags := make([]pgtype.Text, nt)
	ints := make([]pgtype.Int8, n)
	floats := make([]pgtype.Float8, n)
	dest := make([]any, 1+nt+n)
	dest[0] = &ts
	for k := range tags {
		dest[1+k] = &tags[k]
	}
	for f, fd := range sc.Fields {
		if fd.Kind == sources.Int {
			dest[1+nt+f] = &ints[f]
		} else {
			dest[1+nt+f] = &floats[f]
		}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		i := t.Len()
		t.Device = append(t.Device, q.Device)
		t.Time = append(t.Time, ts.UnixNano())
		if q.Tags != nil {
			for k := range tags {
				*q.Tags = append(*q.Tags, tags[k].String) // "" when NULL
			}
		}
		for f, fd := range sc.Fields {
			null := false
			if fd.Kind == sources.Int {
				t.Ints[f] = append(t.Ints[f], ints[f].Int64)
				null = !ints[f].Valid
			} else {
				t.Floats[f] = append(t.Floats[f], floats[f].Float64)
				null = !floats[f].Valid
			}
			if null {
				t.SetNull(f, i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	t.PadNulls()
	return nil
}
