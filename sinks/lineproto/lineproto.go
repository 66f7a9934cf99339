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
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/soakd/soakd/sinks/devcache"
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

// Duration is the unit of the timestamps written: two times closer than it
// are written as one.
func (p Precision) Duration() time.Duration {
	return time.Duration(p.divisor())
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
	// SortTags writes each line's tags sorted by key (bytewise, as
	// escaped), the order in which InfluxDB keeps them: it sorts the tags
	// of every line it parses that are not, which costs the server about
	// a third of its parsing time on TSBS's cpu lines. The zero value
	// writes them in the schema's order (tsbs_generate_data's).
	SortTags bool

	scratch []byte
	cur     *schemaEnc
	schemas []*schemaEnc
	budget  devcache.Budget // bytes held by all schemas' tag caches

	lastTs    int64
	lastTsSet bool
	tsText    []byte
}

// TagCacheBytes bounds the memory an Encoder spends on cached tag sets.
const TagCacheBytes = 2 << 20

type schemaEnc struct {
	schema *sources.Schema
	meas   []byte
	tagKey [][]byte       // ",key=" escaped
	order  []int          // the tag keys' indices in the order written
	field  [][]byte       // ",name=" escaped: the comma becomes a space before the first field
	tags   devcache.Cache // escaped tag sets by device
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
	for k := range s.TagKeys {
		se.order = append(se.order, k)
	}
	if e.SortTags {
		// Compare the escaped keys without their ',' and '=': InfluxDB
		// compares the bytes before '=' as they stand in the line.
		slices.SortStableFunc(se.order, func(a, b int) int {
			ka, kb := se.tagKey[a], se.tagKey[b]
			return bytes.Compare(ka[1:len(ka)-1], kb[1:len(kb)-1])
		})
	}
	for _, f := range s.Fields {
		b := append([]byte{','}, escapeString(f.Name, keyEscapes)...)
		se.field = append(se.field, append(b, '='))
	}
	e.schemas = append(e.schemas, se)
	e.cur = se
	return se
}

// appendTags appends device dev's escaped tag set, from the cache when
// it can.
func (e *Encoder) appendTags(dst []byte, se *schemaEnc, dev uint32) []byte {
	if out, ok := se.tags.Append(dst, dev); ok {
		return out
	}
	start := len(dst)
	s := se.schema
	for _, k := range se.order {
		e.scratch = s.Tags.AppendTag(e.scratch[:0], dev, k)
		mark := len(dst)
		dst = append(dst, se.tagKey[k]...)
		n := len(dst)
		if dst = appendEscapedBytes(dst, e.scratch, keyEscapes); len(dst) == n {
			dst = dst[:mark] // line protocol has no empty tag values
		}
	}
	if e.budget.Limit == 0 {
		e.budget.Limit = TagCacheBytes
	}
	se.tags.Put(dev, dst[start:], &e.budget)
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
	first := len(dst) // where the space before the first field goes
	for f := range s.Fields {
		if nulls := t.Null[f]; nulls != nil && nulls[i] {
			continue
		}
		switch fd := &s.Fields[f]; fd.Kind {
		case sources.Int:
			dst = append(dst, se.field[f]...)
			// percentages and other values below 100 without a call
			switch u := uint64(t.Ints[f][i]); {
			case u < 10:
				dst = append(dst, byte('0'+u), 'i')
			case u < 100:
				dst = append(dst, digits2[2*u], digits2[2*u+1], 'i')
			default:
				dst = append(appendInt(dst, int64(u)), 'i')
			}
		default:
			v := t.Floats[f][i]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			dst = append(dst, se.field[f]...)
			dst = AppendFloat(dst, v, fd.Decimals)
		}
	}
	if len(dst) == first {
		return dst[:start], false
	}
	dst[first] = ' ' // the first field's comma: one copy per field, not a separator and a name
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
	dst = appendInt(dst, whole)
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
	return appendInt(dst, frac)
}

// digits2 holds "00" to "99".
const digits2 = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendInt appends v in decimal, as strconv.AppendInt(dst, v, 10) does,
// writing values below 10,000 (percentages, counters, most fractions)
// digit by digit without strconv's call and copy.
func appendInt(dst []byte, v int64) []byte {
	switch u := uint64(v); {
	case u < 10:
		return append(dst, byte('0'+u))
	case u < 100:
		return append(dst, digits2[2*u], digits2[2*u+1])
	case u < 1000:
		hi, lo := u/100, u%100
		return append(dst, byte('0'+hi), digits2[2*lo], digits2[2*lo+1])
	case u < 10000:
		hi, lo := u/100, u%100
		return append(dst, digits2[2*hi], digits2[2*hi+1], digits2[2*lo], digits2[2*lo+1])
	}
	return strconv.AppendInt(dst, v, 10)
}

type escapeSet uint8

const (
	measurementEscapes escapeSet = iota // comma, space
	keyEscapes                          // comma, equals, space (tag keys/values, field keys)
)

// Byte classes for escaping. InfluxDB (1.x models, 2.x, and the reference
// encoder github.com/influxdata/line-protocol/v2) unescapes only "\,", "\ "
// and "\=" in names and tag values; any other backslash is kept as is.
// So backslashes are written unescaped ("a\\b" would be stored with two
// backslashes), and what line protocol cannot carry is replaced.
const (
	plainByte   = iota
	escapedByte // written after a backslash
	controlByte // no way to carry it (a newline ends the line): an escaped space
	highByte    // part of a multi-byte UTF-8 sequence: checked, invalid -> U+FFFD
)

var byteClass = func() (t [2][256]uint8) {
	for set := range t {
		for c := 0; c < 256; c++ {
			switch {
			case c < 0x20 || c == 0x7f:
				t[set][c] = controlByte
			case c >= 0x80:
				t[set][c] = highByte
			case c == ',' || c == ' ' || c == '=' && escapeSet(set) == keyEscapes:
				t[set][c] = escapedByte
			}
		}
	}
	return t
}()

func escapeString(s string, set escapeSet) []byte { return appendEscaped(nil, s, set) }

func appendEscaped(dst []byte, s string, set escapeSet) []byte {
	return appendEscapedBytes(dst, []byte(s), set)
}

// appendEscapedBytes appends s escaped for the given position. Trailing
// backslashes are dropped: before the separator that follows they would
// escape it, and no parser reads "\\" as one backslash. Control characters
// become spaces and invalid UTF-8 becomes U+FFFD. Nothing is appended when
// that leaves s empty.
func appendEscapedBytes(dst, s []byte, set escapeSet) []byte {
	for len(s) > 0 && s[len(s)-1] == '\\' {
		s = s[:len(s)-1]
	}
	cls := &byteClass[set]
	clean := true
	for _, c := range s {
		if cls[c] != plainByte {
			clean = false
			break
		}
	}
	if clean {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch cls[c] {
		case escapedByte:
			dst = append(dst, '\\', c)
		case controlByte:
			dst = append(dst, '\\', ' ')
		case highByte:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n <= 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		default:
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

// CheckSchema reports why s cannot be written as line protocol that
// InfluxDB stores as named: an empty, non-UTF-8 or control-character name,
// a name ending in a backslash, a measurement starting with '#' (InfluxDB
// skips the line as a comment and answers 204), a duplicate key, or a key
// InfluxDB reserves (time, _measurement, _field). Sinks call it once when
// they open; tag values are per row and are made safe by the encoder.
func CheckSchema(s *sources.Schema) error {
	var errs []error
	bad := func(what, name string) {
		if msg := checkName(name); msg != "" {
			errs = append(errs, fmt.Errorf("line protocol: %s %q %s", what, name, msg))
		}
	}
	bad("measurement", s.Measurement)
	if len(s.Measurement) > 0 && s.Measurement[0] == '#' {
		errs = append(errs, fmt.Errorf("line protocol: measurement %q starts with '#', which InfluxDB reads as a comment", s.Measurement))
	}
	if len(s.Fields) == 0 {
		errs = append(errs, fmt.Errorf("line protocol: measurement %q has no fields", s.Measurement))
	}
	if len(s.TagKeys) > 0 && s.Tags == nil {
		errs = append(errs, fmt.Errorf("line protocol: measurement %q has tag keys but no Tagger", s.Measurement))
	}
	seen := map[string]bool{}
	key := func(what, name string) {
		bad(what, name)
		switch name {
		case "time", "_measurement", "_field":
			errs = append(errs, fmt.Errorf("line protocol: %s %q is reserved by InfluxDB", what, name))
		}
		if seen[what+"\x00"+name] {
			errs = append(errs, fmt.Errorf("line protocol: %s %q appears twice", what, name))
		}
		seen[what+"\x00"+name] = true
	}
	for _, k := range s.TagKeys {
		key("tag key", k)
	}
	for _, f := range s.Fields {
		key("field", f.Name)
		if strings.Contains(f.Name, `\"`) {
			// InfluxDB 1.x unescapes \" in field keys only.
			errs = append(errs, fmt.Errorf(`line protocol: field %q contains \", which InfluxDB 1.x reads as "`, f.Name))
		}
	}
	return errors.Join(errs...)
}

func checkName(s string) string {
	switch {
	case s == "":
		return "is empty"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case s[len(s)-1] == '\\':
		return "ends with a backslash, which would escape the separator after it"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return "contains a control character, which line protocol cannot carry"
		}
	}
	return ""
}
