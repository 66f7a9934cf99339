package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/soakd/soakd/sinks/devcache"
	"github.com/soakd/soakd/sources"
)

// The encoders below write PostgreSQL's binary formats straight from the
// typed columns of a sources.Table into reused buffers: no value is boxed
// in an interface and nothing is allocated per row. An empty tag value (a
// device that lacks the tag, as 1 % of TSBS's trucks do) is written as
// NULL, as the file sink's COPY output does and line protocol omits it. (pgx.CopyFrom would
// need one []any per row with every float, int, time and tag boxed; see
// BenchmarkEncode for the difference.)

// pgEpochMicros is 2000-01-01T00:00:00Z, PostgreSQL's timestamp origin, in
// Unix microseconds.
const pgEpochMicros = 946684800 * 1000000

// pgTime converts Unix nanoseconds to a PostgreSQL timestamptz (microseconds
// since 2000-01-01 UTC), rounding towards minus infinity as PostgreSQL does
// not keep nanoseconds.
func pgTime(unixNanos int64) int64 {
	us := unixNanos / 1000
	if unixNanos%1000 < 0 {
		us--
	}
	return us - pgEpochMicros
}

var nullField = [4]byte{0xff, 0xff, 0xff, 0xff}

// checkTable reports a table whose columns do not all have Len rows, which
// would otherwise make an encoder index out of range.
func checkTable(t *sources.Table) error {
	s := t.Schema
	n := len(t.Time)
	if s == nil {
		return errors.New("BUG: table without schema")
	}
	if len(t.Device) != n {
		return fmt.Errorf("BUG: table %s has %d devices for %d times", s.Measurement, len(t.Device), n)
	}
	if len(t.Floats) < len(s.Fields) || len(t.Ints) < len(s.Fields) || len(t.Null) < len(s.Fields) {
		return fmt.Errorf("BUG: table %s has fewer column slices than its %d fields", s.Measurement, len(s.Fields))
	}
	for f, fd := range s.Fields {
		l := len(t.Floats[f])
		if fd.Kind == sources.Int {
			l = len(t.Ints[f])
		}
		if l != n {
			return fmt.Errorf("BUG: table %s field %s has %d values for %d rows", s.Measurement, fd.Name, l, n)
		}
		if t.Null[f] != nil && len(t.Null[f]) != n {
			return fmt.Errorf("BUG: table %s field %s has %d null flags for %d rows", s.Measurement, fd.Name, len(t.Null[f]), n)
		}
	}
	return nil
}

// appendCopyRow appends row i of r's table as one binary COPY tuple.
func (r *copyReader) appendCopyRow(b []byte, i int) []byte {
	if r.ids != nil {
		return r.appendTSBSRow(b, i)
	}
	t := r.t
	s := t.Schema
	n := 1 + len(s.TagKeys) + len(s.Fields)
	b = append(b, byte(n>>8), byte(n), 0, 0, 0, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(pgTime(t.Time[i])))
	b = r.appendTags(b, t.Device[i])
	for f := range s.Fields {
		if nl := t.Null[f]; nl != nil && nl[i] {
			b = append(b, nullField[:]...)
			continue
		}
		var v uint64
		if s.Fields[f].Kind == sources.Int {
			v = uint64(t.Ints[f][i])
		} else {
			v = math.Float64bits(t.Floats[f][i])
		}
		b = append(b, 0, 0, 0, 8)
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

// appendTSBSRow appends row i as layout=tsbs stores it: time, tags_id
// (r.ids[i]), every field as a double.
func (r *copyReader) appendTSBSRow(b []byte, i int) []byte {
	t := r.t
	s := t.Schema
	n := 2 + len(s.Fields)
	b = append(b, byte(n>>8), byte(n), 0, 0, 0, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(pgTime(t.Time[i])))
	b = append(b, 0, 0, 0, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(r.ids[i]))
	for f := range s.Fields {
		if nl := t.Null[f]; nl != nil && nl[i] {
			b = append(b, nullField[:]...)
			continue
		}
		v := 0.0
		if s.Fields[f].Kind == sources.Int {
			v = float64(t.Ints[f][i])
		} else {
			v = t.Floats[f][i]
		}
		b = append(b, 0, 0, 0, 8)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// appendTags appends device dev's tag fields (each length-prefixed, or a
// NULL marker for a tag the device lacks), from the cache when it can: a
// Tagger gives a device the same tags for ever, and computing them can
// cost more than the rest of the row.
func (r *copyReader) appendTags(b []byte, dev uint32) []byte {
	if out, ok := r.tags.Append(b, dev); ok {
		return out
	}
	start := len(b)
	s := r.t.Schema
	for k := range s.TagKeys {
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		b = s.Tags.AppendTag(b, dev, k)
		if l := len(b) - at - 4; l > 0 {
			binary.BigEndian.PutUint32(b[at:], uint32(l))
		} else {
			copy(b[at:], nullField[:]) // a device without this tag
		}
	}
	if r.budget.Limit == 0 {
		r.budget.Limit = tagCacheBytes
	}
	r.tags.Put(dev, b[start:], &r.budget)
	return b
}

// tagCacheBytes bounds the memory a copyReader spends on cached tags.
const tagCacheBytes = 2 << 20

// schemaTags is the tag cache of one schema.
type schemaTags struct {
	schema *sources.Schema
	tags   devcache.Cache
}

// copyHeader starts a binary COPY stream: signature, flags, no extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// copyChunk is how much COPY data the reader encodes ahead: pgconn reads
// 64 KiB at a time, so a worker's buffer stays near this size whatever
// the batch size, and encoding overlaps with sending.
const copyChunk = 64 << 10

// copyReader streams a table as binary COPY data. pgconn's CopyFrom reads
// it from a goroutine of its own while the caller waits, so it is never
// used concurrently.
type copyReader struct {
	// pgconn.CopyFrom reads from a goroutine of its own and, on some
	// connection errors, returns without waiting for it. mu and abandoned
	// make sure that goroutine never touches the caller's table (or the
	// next batch's) after Write has returned.
	mu        sync.Mutex
	abandoned bool

	t     *sources.Table
	row   int
	buf   []byte
	off   int
	done  bool
	total int // bytes produced

	tags    *devcache.Cache // encoded tag fields of t's schema by device
	ids     []int32         // layout=tsbs: the tags_id of each row of t (nil: soakd layout)
	schemas []*schemaTags
	budget  devcache.Budget // bytes held by all schemas' tag caches
}

// errAbandoned stops a CopyFrom goroutine that outlived its Write.
var errAbandoned = errors.New("copy abandoned after an error")

func (r *copyReader) reset(t *sources.Table) {
	r.t, r.row, r.off, r.done, r.total, r.ids = t, 0, 0, false, 0, nil
	r.buf = append(r.buf[:0], copyHeader...)
	r.tags = nil
	for _, st := range r.schemas {
		if st.schema == t.Schema {
			r.tags = &st.tags
		}
	}
	if r.tags == nil {
		st := &schemaTags{schema: t.Schema}
		r.schemas = append(r.schemas, st)
		r.tags = &st.tags
	}
}

// abandon ends the reader for good after a failed CopyFrom (waiting for a
// Read in progress) and returns the bytes it produced. The reader must not
// be reused: a goroutine may still hold it.
func (r *copyReader) abandon() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned, r.t = true, nil
	return r.total
}

// fill encodes the next rows (and the trailer after the last one).
func (r *copyReader) fill() {
	b := r.buf[:0]
	n := r.t.Len()
	for r.row < n && len(b) < copyChunk {
		b = r.appendCopyRow(b, r.row)
		r.row++
	}
	if r.row == n {
		b = append(b, 0xff, 0xff) // trailer: field count -1
		r.done = true
	}
	r.buf, r.off = b, 0
}

// Read implements io.Reader.
func (r *copyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned {
		return 0, errAbandoned
	}
	n := 0
	for n < len(p) {
		if r.off == len(r.buf) {
			if r.done {
				break
			}
			r.fill()
		}
		c := copy(p[n:], r.buf[r.off:])
		r.off += c
		n += c
	}
	r.total += n
	if n == 0 && r.done {
		return 0, io.EOF
	}
	return n, nil
}

// appendAll encodes the whole table as one binary COPY stream (tests and
// benchmarks; the sink streams with Read).
func (r *copyReader) appendAll(dst []byte, t *sources.Table) []byte {
	r.reset(t)
	dst = append(dst, r.buf...)
	for !r.done {
		r.fill()
		dst = append(dst, r.buf...)
	}
	r.off = len(r.buf)
	return dst
}

// paramEncoder encodes rows as binary statement parameters: one value
// per (row, column) for multi-row INSERT, or one array per column for
// unnest. The parameter values point into buf.
type paramEncoder struct {
	buf  []byte
	ends []int // end offset in buf of each parameter; -1 - end for NULL
	vals [][]byte
}

// binaryFormat makes every parameter binary.
var binaryFormat = []int16{1}

func (e *paramEncoder) reset() {
	e.buf = e.buf[:0]
	e.ends = e.ends[:0]
}

func (e *paramEncoder) end(null bool) {
	if null {
		e.ends = append(e.ends, -1-len(e.buf))
	} else {
		e.ends = append(e.ends, len(e.buf))
	}
}

// finish builds vals from ends once buf no longer moves.
func (e *paramEncoder) finish() [][]byte {
	if cap(e.vals) < len(e.ends) {
		e.vals = make([][]byte, len(e.ends))
	}
	e.vals = e.vals[:len(e.ends)]
	start := 0
	for i, end := range e.ends {
		if end < 0 {
			e.vals[i] = nil // SQL NULL
			start = -1 - end
			continue
		}
		e.vals[i] = e.buf[start:end:end]
		start = end
	}
	return e.vals
}

// rows appends one parameter per column of each row of t (time, tags,
// fields), row after row, as multi-row INSERT wants them.
func (e *paramEncoder) rows(t *sources.Table) {
	s := t.Schema
	for i, n := 0, t.Len(); i < n; i++ {
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(pgTime(t.Time[i])))
		e.end(false)
		dev := t.Device[i]
		for k := range s.TagKeys {
			at := len(e.buf)
			e.buf = s.Tags.AppendTag(e.buf, dev, k)
			e.end(len(e.buf) == at)
		}
		for f := range s.Fields {
			if nl := t.Null[f]; nl != nil && nl[i] {
				e.end(true)
				continue
			}
			if s.Fields[f].Kind == sources.Int {
				e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(t.Ints[f][i]))
			} else {
				e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(t.Floats[f][i]))
			}
			e.end(false)
		}
	}
}

func appendArrayHeader(b []byte, hasNull bool, elemOID uint32, n int) []byte {
	var flag uint32
	if hasNull {
		flag = 1
	}
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, flag)
	b = binary.BigEndian.AppendUint32(b, elemOID)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

// arrays appends one binary array parameter per column of t (time, tags,
// fields), as INSERT ... SELECT FROM unnest(...) wants them.
func (e *paramEncoder) arrays(t *sources.Table) {
	s := t.Schema
	n := t.Len()
	e.buf = appendArrayHeader(e.buf, false, oidTimestamptz, n)
	for i := 0; i < n; i++ {
		e.buf = append(e.buf, 0, 0, 0, 8)
		e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(pgTime(t.Time[i])))
	}
	e.end(false)
	for k := range s.TagKeys {
		head := len(e.buf)
		e.buf = appendArrayHeader(e.buf, false, oidText, n)
		for i := 0; i < n; i++ {
			at := len(e.buf)
			e.buf = append(e.buf, 0, 0, 0, 0)
			e.buf = s.Tags.AppendTag(e.buf, t.Device[i], k)
			if l := len(e.buf) - at - 4; l > 0 {
				binary.BigEndian.PutUint32(e.buf[at:], uint32(l))
			} else {
				copy(e.buf[at:], nullField[:])
				binary.BigEndian.PutUint32(e.buf[head+4:], 1) // has nulls
			}
		}
		e.end(false)
	}
	for f := range s.Fields {
		nl := t.Null[f]
		if s.Fields[f].Kind == sources.Int {
			e.buf = appendArrayHeader(e.buf, nl != nil, oidInt8, n)
			for i, v := range t.Ints[f][:n] {
				if nl != nil && nl[i] {
					e.buf = append(e.buf, nullField[:]...)
					continue
				}
				e.buf = append(e.buf, 0, 0, 0, 8)
				e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
			}
		} else {
			e.buf = appendArrayHeader(e.buf, nl != nil, oidFloat8, n)
			for i, v := range t.Floats[f][:n] {
				if nl != nil && nl[i] {
					e.buf = append(e.buf, nullField[:]...)
					continue
				}
				e.buf = append(e.buf, 0, 0, 0, 8)
				e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(v))
			}
		}
		e.end(false)
	}
}
