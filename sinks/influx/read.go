package influx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Read-back is InfluxQL through /query (InfluxDB 1.x, and 2.x buckets
// with a DBRP mapping): one request holds a statement per query, and a
// query whose rows fill a page is asked again from its last row on.

var _ sinks.SeriesReader = (*Sink)(nil)

// readPage bounds the rows one statement returns.
const readPage = 10000

// InfluxDB's time range, in Unix nanoseconds.
const (
	minNanoTime = -9223372036854775806
	maxNanoTime = 9223372036854775806
)

// Readable returns nil for InfluxDB (v1 API with product influxdb, or the
// v2 API), which answers InfluxQL; the other v1 products are written
// through InfluxDB's line protocol but queried otherwise.
func (s *Sink) Readable() error {
	if s.cfg.API == V1 && s.cfg.Product.Name != "influxdb" {
		return fmt.Errorf("product %s cannot be read back: soakd reads with InfluxQL, which only InfluxDB answers", s.cfg.Product.Name)
	}
	if _, _, err := s.database(); err != nil {
		return err
	}
	return nil
}

// Resolution is the precision rows are written with.
func (s *Sink) Resolution() time.Duration { return s.cfg.Precision.Duration() }

// database is where InfluxQL finds the rows: db= and rp= (v1), or the
// bucket as DB/RP (v2).
func (s *Sink) database() (db, rp string, err error) {
	if s.cfg.API == V1 {
		db, rp = s.cfg.DB, s.cfg.RP
	} else {
		db, rp, _ = strings.Cut(s.cfg.Bucket, "/")
	}
	if db == "" {
		return "", "", errors.New("no database to read back from (db= or bucket=)")
	}
	return db, rp, nil
}

// ReadSeries reads the rows of every query.
func (s *Sink) ReadSeries(ctx context.Context, qs []sinks.SeriesQuery, out []*sources.Table) error {
	if len(qs) != len(out) {
		return fmt.Errorf("BUG: influx: %d queries, %d tables", len(qs), len(out))
	}
	db, rp, err := s.database()
	if err != nil {
		return sinks.NewError(sinks.Rejected, false, err)
	}
	from := make([]int64, len(qs))
	pending := make([]int, 0, len(qs))
	for i, q := range qs {
		from[i] = max(q.From, minNanoTime)
		pending = append(pending, i)
	}
	var stmt strings.Builder
	for len(pending) > 0 {
		stmt.Reset()
		for k, i := range pending {
			if k > 0 {
				stmt.WriteString("; ")
			}
			writeSelect(&stmt, rp, qs[i], from[i], min(qs[i].To, maxNanoTime))
		}
		results, err := s.readQuery(ctx, db, stmt.String())
		if err != nil {
			return err
		}
		if len(results) != len(pending) {
			// InfluxDB answers each statement of a query: a server that
			// does not (VictoriaMetrics' /query) only takes the line
			// protocol, and cannot be read back in InfluxQL.
			return sinks.NewError(sinks.Other, false, fmt.Errorf("%d InfluxQL statements got %d results from %s: the server does not answer InfluxQL as InfluxDB does "+
				"(another product taking InfluxDB's writes, such as VictoriaMetrics: give the target URL its product=, and read it back another way)",
				len(pending), len(results), s.cfg.String()))
		}
		next := pending[:0]
		for k, i := range pending {
			n, last, err := appendResult(&results[k], qs[i], out[i])
			if err != nil {
				return err
			}
			if n == readPage && last < qs[i].To {
				from[i] = last + 1
				next = append(next, i)
			}
		}
		pending = next
	}
	return nil
}

// writeSelect writes the statement reading q's rows with times in
// [from, to].
func writeSelect(b *strings.Builder, rp string, q sinks.SeriesQuery, from, to int64) {
	sc := q.Schema
	b.WriteString("SELECT ")
	for f, fd := range sc.Fields {
		if f > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteIdent(fd.Name))
	}
	if q.Tags != nil {
		// Tags too, so a changed tag is seen (::tag: a field of the same
		// name is not taken for it).
		for _, k := range sc.TagKeys {
			b.WriteString("," + quoteIdent(k) + "::tag")
		}
	}
	b.WriteString(" FROM ")
	if rp != "" {
		b.WriteString(quoteIdent(rp) + ".")
	}
	b.WriteString(quoteIdent(sc.Measurement))
	b.WriteString(" WHERE ")
	b.WriteString(quoteIdent(sc.TagKeys[sc.DeviceTag]))
	b.WriteString(" = '")
	tag := sc.Tags.AppendTag(nil, q.Device, sc.DeviceTag)
	b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(string(tag)))
	b.WriteString("' AND time >= ")
	b.WriteString(strconv.FormatInt(from, 10))
	b.WriteString(" AND time <= ")
	b.WriteString(strconv.FormatInt(to, 10))
	b.WriteString(" ORDER BY time ASC LIMIT ")
	b.WriteString(strconv.Itoa(readPage))
}

// queryResult is one statement's answer.
type queryResult struct {
	Error  string `json:"error"`
	Series []struct {
		Columns []string            `json:"columns"`
		Values  [][]json.RawMessage `json:"values"`
	} `json:"series"`
}

// readQuery runs stmt (statements separated by ;) on db with nanosecond
// epoch times.
func (s *Sink) readQuery(ctx context.Context, db, stmt string) ([]queryResult, error) {
	form := url.Values{"q": {stmt}, "db": {db}, "epoch": {"ns"}}.Encode()
	resp, err := s.do(ctx, http.MethodPost, "/query", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		return nil, fmt.Errorf("cannot read back from %s: %w", s.cfg.String(), err)
	}
	defer resp.Body.Close()
	var out struct {
		Error   string        `json:"error"`
		Results []queryResult `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<30)).Decode(&out); err != nil {
		return nil, sinks.NewError(sinks.Other, false, fmt.Errorf("cannot decode the answer of %s: %w", s.cfg.String(), err))
	}
	if out.Error != "" {
		return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("cannot read back from %s: %s", s.cfg.String(), out.Error))
	}
	return out.Results, nil
}

// appendResult appends a statement's rows to t and returns how many it
// had and the last one's time.
func appendResult(r *queryResult, q sinks.SeriesQuery, t *sources.Table) (int, int64, error) {
	if r.Error != "" {
		return 0, 0, sinks.NewError(sinks.Rejected, false, fmt.Errorf("cannot read back %s: %s", q.Schema.Measurement, r.Error))
	}
	sc := q.Schema
	n, last := 0, int64(0)
	for _, ser := range r.Series {
		col := make([]int, len(sc.Fields)) // field -> column, -1 when absent
		for f, fd := range sc.Fields {
			col[f] = -1
			for c, name := range ser.Columns {
				if name == fd.Name && col[f] < 0 {
					col[f] = c
				}
			}
		}
		// Tag columns follow the fields' (see writeSelect).
		var tagCol []int
		if q.Tags != nil {
			tagCol = make([]int, len(sc.TagKeys))
			for k, key := range sc.TagKeys {
				tagCol[k] = -1
				for c := len(ser.Columns) - 1; c > 0; c-- {
					if ser.Columns[c] == key {
						tagCol[k] = c
						break
					}
				}
			}
		}
		for _, v := range ser.Values {
			if len(v) != len(ser.Columns) || len(v) == 0 {
				return n, last, sinks.NewError(sinks.Other, false, fmt.Errorf("a row of %d values for %d columns", len(v), len(ser.Columns)))
			}
			ts, err := strconv.ParseInt(string(v[0]), 10, 64)
			if err != nil {
				return n, last, sinks.NewError(sinks.Other, false, fmt.Errorf("time %s: %w", v[0], err))
			}
			i := t.Len()
			t.Device = append(t.Device, q.Device)
			t.Time = append(t.Time, ts)
			for _, c := range tagCol {
				var tag string // "" when absent
				if c >= 0 {
					_ = json.Unmarshal(v[c], &tag)
				}
				*q.Tags = append(*q.Tags, tag)
			}
			for f, fd := range sc.Fields {
				var raw json.RawMessage
				if col[f] >= 0 {
					raw = v[col[f]]
				}
				null := len(raw) == 0 || string(raw) == "null"
				if fd.Kind == sources.Int {
					var x int64
					if !null {
						x, err = strconv.ParseInt(string(raw), 10, 64)
					}
					t.Ints[f] = append(t.Ints[f], x)
				} else {
					var x float64
					if !null {
						x, err = strconv.ParseFloat(string(raw), 64)
					}
					t.Floats[f] = append(t.Floats[f], x)
				}
				if err != nil {
					// A value of another type than the schema's: read as
					// null, which the comparison reports as a mismatch.
					null, err = true, nil
				}
				if null {
					t.SetNull(f, i)
				}
			}
			n++
			last = ts
		}
	}
	t.PadNulls()
	return n, last, nil
}
