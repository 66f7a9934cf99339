package postgres

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

var testBase = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPgTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   time.Time
		want int64
	}{
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC), 1_000_000},
		{time.Date(2000, 1, 1, 0, 0, 0, 1999, time.UTC), 1}, // nanoseconds truncated
		{time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), -1},
		{time.Date(1969, 12, 31, 23, 59, 59, 999_999_500, time.UTC), -pgEpochMicros - 1}, // floor, not towards zero
		{time.Unix(0, 0), -pgEpochMicros},
	}
	for _, c := range cases {
		if got := pgTime(c.in.UnixNano()); got != c.want {
			t.Errorf("pgTime(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// decodeCopy parses a binary COPY stream back into rendered rows.
func decodeCopy(t *testing.T, data []byte, s *sources.Schema) []row {
	t.Helper()
	if !bytes.HasPrefix(data, copyHeader) {
		t.Fatalf("no COPY header: % x", data[:min(len(data), 19)])
	}
	data = data[len(copyHeader):]
	next := func(n int) []byte {
		if len(data) < n {
			t.Fatalf("COPY stream ends early")
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	var out []row
	for {
		nf := int16(binary.BigEndian.Uint16(next(2)))
		if nf == -1 {
			break
		}
		if int(nf) != 1+len(s.TagKeys)+len(s.Fields) {
			t.Fatalf("tuple with %d fields", nf)
		}
		var cols []string
		for i := 0; i < int(nf); i++ {
			l := int32(binary.BigEndian.Uint32(next(4)))
			if l == -1 {
				cols = append(cols, "NULL")
				continue
			}
			v := next(int(l))
			switch {
			case i == 0:
				cols = append(cols, strconv.FormatInt(int64(binary.BigEndian.Uint64(v))+pgEpochMicros, 10))
			case i <= len(s.TagKeys):
				cols = append(cols, string(v))
			case s.Fields[i-1-len(s.TagKeys)].Kind == sources.Int:
				cols = append(cols, strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10))
			default:
				cols = append(cols, strconv.FormatUint(binary.BigEndian.Uint64(v), 16))
			}
		}
		out = append(out, row{key: cols[1+s.DeviceTag] + "@" + cols[0], cols: cols})
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes after the COPY trailer", len(data))
	}
	return out
}

func TestCopyEncoding(t *testing.T) {
	t.Parallel()
	for _, s := range []*sources.Schema{cpuSchema("cpu", 7), mixedSchema("trucks", 7)} {
		for _, n := range []int{0, 1, 3, 5000} {
			tb := sources.NewTable(s)
			fill(tb, 7, 0, n, testBase, true)
			var r copyReader
			got := decodeCopy(t, r.appendAll(nil, tb), s)
			sameRows(t, s.Measurement+" appendAll", got, expectRows(tb))

			// The streaming reader gives the same bytes whatever the read size.
			want := r.appendAll(nil, tb)
			for _, size := range []int{1, 7, 4096, 65531} {
				r.reset(tb)
				var out []byte
				p := make([]byte, size)
				for {
					k, err := r.Read(p)
					out = append(out, p[:k]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(out, want) {
					t.Fatalf("%s n=%d: Read(%d) stream differs from appendAll", s.Measurement, n, size)
				}
				if r.total != len(want) {
					t.Fatalf("total = %d, want %d", r.total, len(want))
				}
			}
		}
	}
}

// One reader alternating between schemas, with its tag cache roomy or
// nearly full, writes the same stream as a fresh reader: cached tags
// belong to their schema and device, and devices past the budget are
// encoded directly.
func TestCopyTagCache(t *testing.T) {
	t.Parallel()
	var tables []*sources.Table
	for _, s := range []*sources.Schema{cpuSchema("cpu", 40), mixedSchema("trucks", 40)} {
		tb := sources.NewTable(s)
		fill(tb, 40, 0, 200, testBase, true)
		tables = append(tables, tb)
	}
	for _, limit := range []int{0, 300} { // 0: the default
		var r copyReader
		r.budget.Limit = limit
		for round := range 3 {
			for _, tb := range tables {
				var fresh copyReader
				if got, want := r.appendAll(nil, tb), fresh.appendAll(nil, tb); !bytes.Equal(got, want) {
					t.Fatalf("limit %d round %d %s: stream differs from a fresh reader's", limit, round, tb.Schema.Measurement)
				}
			}
		}
		if limit > 0 && r.budget.Used > limit {
			t.Errorf("tag caches hold %d bytes, limit %d", r.budget.Used, limit)
		}
	}
}

func TestParamEncoding(t *testing.T) {
	t.Parallel()
	s := mixedSchema("trucks", 3)
	tb := sources.NewTable(s)
	fill(tb, 3, 0, 50, testBase, true)
	want := expectRows(tb)
	nc := 1 + len(s.TagKeys) + len(s.Fields)
	// render renders a non-null value of column c as expectRows does.
	render := func(c int, v []byte) string {
		if c > len(s.TagKeys) || c == 0 {
			if len(v) != 8 {
				return fmt.Sprintf("<%d bytes>", len(v))
			}
		}
		switch {
		case c == 0:
			return strconv.FormatInt(int64(binary.BigEndian.Uint64(v))+pgEpochMicros, 10)
		case c <= len(s.TagKeys):
			return string(v)
		case s.Fields[c-1-len(s.TagKeys)].Kind == sources.Int:
			return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10)
		}
		return strconv.FormatUint(binary.BigEndian.Uint64(v), 16)
	}

	var e paramEncoder
	e.reset()
	e.rows(tb)
	vals := e.finish()
	if len(vals) != tb.Len()*nc {
		t.Fatalf("%d parameters, want %d", len(vals), tb.Len()*nc)
	}
	for i := range tb.Len() {
		for c := range nc {
			v := vals[i*nc+c]
			w := want[i].cols[c]
			got := "NULL"
			if v != nil {
				got = render(c, v)
			}
			if got != w {
				t.Fatalf("row %d column %d: %q, want %q", i, c, got, w)
			}
		}
	}

	e.reset()
	e.arrays(tb)
	vals = e.finish()
	if len(vals) != nc {
		t.Fatalf("%d arrays, want %d", len(vals), nc)
	}
	for c, v := range vals {
		ndim, flag := binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:])
		n, lb := binary.BigEndian.Uint32(v[12:]), binary.BigEndian.Uint32(v[16:])
		if ndim != 1 || n != uint32(tb.Len()) || lb != 1 {
			t.Fatalf("array %d header: ndim %d len %d lower bound %d", c, ndim, n, lb)
		}
		hasNull := c > len(s.TagKeys) && tb.Null[c-1-len(s.TagKeys)] != nil
		for i := 0; c > 0 && c <= len(s.TagKeys) && i < tb.Len(); i++ {
			hasNull = hasNull || want[i].cols[c] == "NULL"
		}
		if (flag == 1) != hasNull {
			t.Fatalf("array %d: null flag %d, want %v", c, flag, hasNull)
		}
		p := v[20:]
		for i := range tb.Len() {
			if len(p) < 4 {
				t.Fatalf("array %d ends before element %d", c, i)
			}
			l := int32(binary.BigEndian.Uint32(p))
			p = p[4:]
			got := "NULL"
			if l >= 0 {
				if int(l) > len(p) {
					t.Fatalf("array %d element %d: length %d past the end", c, i, l)
				}
				got, p = render(c, p[:l]), p[l:]
			}
			if w := want[i].cols[c]; got != w {
				t.Fatalf("array %d element %d: %q, want %q", c, i, got, w)
			}
		}
		if len(p) != 0 {
			t.Fatalf("array %d: %d trailing bytes", c, len(p))
		}
	}
}

// benchTable is a TSBS cpu-only-like table: 10 tags, 10 float fields.
func benchTable(rows int) *sources.Table {
	keys := []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"}
	s := cpuSchema("cpu", 100)
	s.TagKeys = keys
	s.Tags = newTagger(100, keys, 0)
	tb := sources.NewTable(s)
	fill(tb, 100, 0, rows, testBase, false)
	return tb
}

// devopsTable returns the cpu table of rows rows of the devops source
// (100 hosts): its tagger computes every tag value from the device
// number, as sources with many devices do.
func devopsTable(b *testing.B, rows int) *sources.Table {
	b.Helper()
	c := iot.DefaultConfig()
	c.Start = iot.Start{T: testBase}
	src, err := iot.New("devops", c, 1, sources.Shard{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := src.Stream(0, 1)
	if err != nil {
		b.Fatal(err)
	}
	batch := sources.NewSeriesBatch(src.Schemas())
	if err := st.Fill(batch, rows, 0); err != nil {
		b.Fatal(err)
	}
	if tb := batch.Tables[0]; tb.Len() == rows {
		return tb
	}
	b.Fatalf("devops filled %d rows into its first table, want %d", batch.Tables[0].Len(), rows)
	return nil
}

// BenchmarkEncode compares the encoders on a 10,000-row cpu batch (one
// op = one batch), with tag values kept as strings ("stored") and
// computed by the devops source's tagger ("devops"). "pgx-boxed" is what
// pgx.CopyFrom does with a CopyFromSource: each value boxed in an []any
// row and encoded through pgtype.Map.
func BenchmarkEncode(b *testing.B) {
	const rows = 10000
	tb := benchTable(rows)
	s := tb.Schema
	for _, c := range []struct {
		tags string
		tb   *sources.Table
	}{{"stored", tb}, {"devops", devopsTable(b, rows)}} {
		tb := c.tb
		b.Run(c.tags+"/copy", func(b *testing.B) {
			var r copyReader
			buf := make([]byte, 65531)
			b.ReportAllocs()
			for b.Loop() {
				r.reset(tb)
				for {
					if _, err := r.Read(buf); err == io.EOF {
						break
					}
				}
			}
			b.SetBytes(int64(r.total))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
		b.Run(c.tags+"/insert-params", func(b *testing.B) {
			var e paramEncoder
			b.ReportAllocs()
			for b.Loop() {
				e.reset()
				e.rows(tb)
				e.finish()
			}
			b.SetBytes(int64(len(e.buf)))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
		b.Run(c.tags+"/unnest-arrays", func(b *testing.B) {
			var e paramEncoder
			b.ReportAllocs()
			for b.Loop() {
				e.reset()
				e.arrays(tb)
				e.finish()
			}
			b.SetBytes(int64(len(e.buf)))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
	b.Run("pgx-boxed", func(b *testing.B) {
		m := pgtype.NewMap()
		oids := []uint32{pgtype.TimestamptzOID}
		for range s.TagKeys {
			oids = append(oids, pgtype.TextOID)
		}
		for range s.Fields {
			oids = append(oids, pgtype.Float8OID)
		}
		vals := make([]any, len(oids))
		var buf, tag []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = append(buf[:0], copyHeader...)
			for i := range rows {
				// What a CopyFromSource's Values() must build for each row.
				vals[0] = time.Unix(0, tb.Time[i])
				for k := range s.TagKeys {
					tag = s.Tags.AppendTag(tag[:0], tb.Device[i], k)
					vals[1+k] = string(tag)
				}
				for f := range s.Fields {
					vals[1+len(s.TagKeys)+f] = tb.Floats[f][i]
				}
				buf = binary.BigEndian.AppendUint16(buf, uint16(len(vals)))
				for c, v := range vals {
					at := len(buf)
					buf = append(buf, 0, 0, 0, 0)
					var err error
					buf, err = m.Encode(oids[c], pgtype.BinaryFormatCode, v, buf)
					if err != nil {
						b.Fatal(err)
					}
					binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
				}
			}
		}
		b.SetBytes(int64(len(buf)))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
}

// TestEncodeAllocs pins the zero-allocation promise of the hot path.
func TestEncodeAllocs(t *testing.T) {
	tb := benchTable(2000)
	var r copyReader
	var e paramEncoder
	buf := make([]byte, 65531)
	run := func() {
		r.reset(tb)
		for {
			if _, err := r.Read(buf); err == io.EOF {
				break
			}
		}
		e.reset()
		e.rows(tb)
		e.finish()
		e.reset()
		e.arrays(tb)
		e.finish()
	}
	run() // grow the buffers
	if a := testing.AllocsPerRun(5, run); a != 0 {
		t.Errorf("%v allocations per batch once warm, want 0", a)
	}
}
