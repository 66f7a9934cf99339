// Package lineproto encodes series batches as InfluxDB line protocol, the
// format InfluxDB, CnosDB, TDengine's taosAdapter, VictoriaMetrics,
// QuestDB and GreptimeDB accept and tsbs_generate_data --format influx
// writes.
//
// Encoding appends to a caller-owned buffer and does not allocate:
//
//	var e lineproto.Encoder // nanosecond timestamps
//	buf = e.AppendTable(buf[:0], table)
package lineproto

import (
	"fmt"
	"math"
	"strconv"

	"github.com/soakd/soakd/sources"
)

// Precision is the unit of the timestamps written.
type Precision uint8

const (
	// Nanosecond timestamps (the line protocol default).
	Nanosecond Precision = iota
	// Microsecond timestamps.
	Microsecond
	// Millisecond timestamps.
	Millisecond
	// Second timestamps.
	Second
)

// ParsePrecision parses the InfluxDB precision names ns, us (or u), ms, s.
func ParsePrecision(s string) (Precision, error) {
	switch s {
	case "", "ns", "n":
		return Nanosecond, nil
	case "us", "u", "µs":
		return Microsecond, nil
	case "ms":
		return Millisecond, nil
	case "s":
		return Second, nil
	}
	return 0, fmt.Errorf("unknown precision %q (want ns, us, ms or s)", s)
}

// String returns the name InfluxDB's /write API takes.
func (p Precision) String() string {
	return [...]string{"ns", "us", "ms", "s"}[p]
}

func (p Precision) divisor() int64 {
	return [...]int64{1, 1e3, 1e6, 1e9}[p]
}

// Encoder turns table rows into lines. The zero value writes nanosecond
// timestamps. An Encoder is not safe for concurrent use; give each worker
// its own.
//
// It keeps, per schema, the escaped measurement, tag keys and field keys,
// and caches each device's escaped tag set (",k=v,k=v"), since a Tagger
// gives a device the same tags for ever. The cache holds at most
// TagCacheBytes bytes per Encoder; devices beyond it are encoded directly.
type Encoder struct {
	Precision Precision

	scratch []byte
	cur     *schemaEnc
	schemas []*schemaEnc
	cached  int // bytes held by all tag caches

	lastTs    int64
	lastTsSet bool
	tsText    []byte
}

// TagCacheBytes bounds the memory an Encoder spends on cached tag sets.
const TagCacheBytes = 2 << 20

// maxCachedDevice bounds the per-schema index of the tag cache.
const maxCachedDevice = 1 << 18

type schemaEnc struct {
	schema *sources.Schema
	meas   []byte
	tagKey [][]byte // ",key=" escaped
	field  [][]byte // "name=" escaped
	// tag cache: off[d] is 1 + the offset of device d's tag set in arena,
	// whose length is in size[d]; 0 means not cached.
	off   []uint32
	size  []uint16
	arena []byte
}

func (e *Encoder) prepare(s *sources.Schema) *schemaEnc {
	if e.cur != nil && e.cur.schema == s {
		return e.cur
	}
	for _, se := range e.schemas {
		if se.schema == s {
			e.cur = se
			return se
		}
	}
	se := &schemaEnc{schema: s}
	se.meas = appendEscaped(nil, s.Measurement, measurementEscapes)
	for _, k := range s.TagKeys {
		b := append([]byte{','}, escapeString(k, keyEscapes)...)
		se.tagKey = append(se.tagKey, append(b, '='))
	}
	for _, f := range s.Fields {
		se.field = append(se.field, append(escapeString(f.Name, keyEscapes), '='))
	}
	e.schemas = append(e.schemas, se)
	e.cur = se
	return se
}

// appendTags appends device dev's escaped tag set, from the cache when
// it can.
func (e *Encoder) appendTags(dst []byte, se *schemaEnc, dev uint32) []byte {
	if int(dev) < len(se.off) {
		if o := se.off[dev]; o != 0 {
			return append(dst, se.arena[o-1:o-1+uint32(se.size[dev])]...)
		}
	}
	start := len(dst)
	s := se.schema
	for k := range s.TagKeys {
		e.scratch = s.Tags.AppendTag(e.scratch[:0], dev, k)
		if len(e.scratch) == 0 {
			continue // line protocol has no empty tag values
		}
		dst = append(dst, se.tagKey[k]...)
		dst = appendEscapedBytes(dst, e.scratch, keyEscapes)
	}
	n := len(dst) - start
	if dev < maxCachedDevice && n <= 0xffff && e.cached+n+4 <= TagCacheBytes {
		if int(dev) >= len(se.off) {
			grow := int(dev) + 1 - len(se.off)
			e.cached += grow * 6
			se.off = append(se.off, make([]uint32, grow)...)
			se.size = append(se.size, make([]uint16, grow)...)
		}
		se.off[dev] = uint32(len(se.arena)) + 1
		se.size[dev] = uint16(n)
		se.arena = append(se.arena, dst[start:]...)
		e.cached += n
	}
	return dst
}

// AppendTable appends every row of t that has at least one value; rows
// whose fields are all null or not finite are skipped, since line protocol
// cannot express them. It returns the extended buffer.
func (e *Encoder) AppendTable(dst []byte, t *sources.Table) []byte {
	for i := 0; i < t.Len(); i++ {
		dst, _ = e.AppendRow(dst, t, i)
	}
	return dst
}

// AppendRow appends row i of t as one line ending in '\n'. ok is false
// (and dst unchanged) when the row has no value to write.
func (e *Encoder) AppendRow(dst []byte, t *sources.Table, i int) (out []byte, ok bool) {
	s := t.Schema
	se := e.prepare(s)
	start := len(dst)
	dst = append(dst, se.meas...)
	dst = e.appendTags(dst, se, t.Device[i])
	sep := byte(' ')
	n := 0
	for f := range s.Fields {
		if nulls := t.Null[f]; nulls != nil && nulls[i] {
			continue
		}
		switch fd := &s.Fields[f]; fd.Kind {
		case sources.Int:
			dst = append(dst, sep)
			dst = append(dst, se.field[f]...)
			dst = strconv.AppendInt(dst, t.Ints[f][i], 10)
			dst = append(dst, 'i')
		default:
			v := t.Floats[f][i]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			dst = append(dst, sep)
			dst = append(dst, se.field[f]...)
			dst = AppendFloat(dst, v, fd.Decimals)
		}
		sep = ','
		n++
	}
	if n == 0 {
		return dst[:start], false
	}
	dst = append(dst, ' ')
	if ts := t.Time[i]; !e.lastTsSet || ts != e.lastTs {
		// rows of one round share their timestamp: format it once
		e.tsText = strconv.AppendInt(e.tsText[:0], floorDiv(ts, e.Precision.divisor()), 10)
		e.lastTs, e.lastTsSet = ts, true
	}
	dst = append(dst, e.tsText...)
	return append(dst, '\n'), true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// AppendFloat appends v as a decimal number. With decimals in 1..9 and v
// small enough it prints v rounded to that many places, trailing zeros
// dropped (58.10 → 58.1), which is exact for values the generator rounded
// and several times faster than strconv; otherwise it uses strconv's
// shortest representation.
func AppendFloat(dst []byte, v float64, decimals int) []byte {
	if decimals <= 0 || decimals >= len(pow10) || math.Abs(v) >= 1e9 {
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	}
	p := pow10[decimals]
	n := int64(math.Round(v * float64(p)))
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	whole, frac := n/p, n%p
	dst = strconv.AppendInt(dst, whole, 10)
	if frac == 0 {
		return dst
	}
	for frac%10 == 0 {
		frac /= 10
		decimals--
	}
	dst = append(dst, '.')
	// zero-pad the fraction to its remaining width
	for w := pow10[decimals-1]; w > frac && w > 1; w /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, frac, 10)
}

type escapeSet uint8

const (
	measurementEscapes escapeSet = iota // comma, space
	keyEscapes                          // comma, equals, space (tag keys/values, field keys)
)

func needsEscape(c byte, set escapeSet) bool {
	switch c {
	case ',', ' ', '\\':
		return true
	case '=':
		return set == keyEscapes
	case '\n', '\r', '\t':
		return true
	}
	return false
}

func escapeString(s string, set escapeSet) []byte { return appendEscaped(nil, s, set) }

func appendEscaped(dst []byte, s string, set escapeSet) []byte {
	for i := 0; i < len(s); i++ {
		dst = appendEscapedByte(dst, s[i], set)
	}
	return dst
}

func appendEscapedBytes(dst, s []byte, set escapeSet) []byte {
	clean := true
	for _, c := range s {
		if needsEscape(c, set) {
			clean = false
			break
		}
	}
	if clean {
		return append(dst, s...)
	}
	for _, c := range s {
		dst = appendEscapedByte(dst, c, set)
	}
	return dst
}

// appendEscapedByte escapes c for line protocol. Newlines and tabs cannot
// be escaped in line protocol, so they are replaced by spaces (escaped).
func appendEscapedByte(dst []byte, c byte, set escapeSet) []byte {
	switch c {
	case '\n', '\r', '\t':
		return append(dst, '\\', ' ')
	}
	if needsEscape(c, set) {
		dst = append(dst, '\\')
	}
	return append(dst, c)
}
