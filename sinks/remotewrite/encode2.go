package remotewrite

import (
	"bytes"
	"hash/maphash"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/soakd/soakd/sinks/devcache"
	"github.com/soakd/soakd/sources"
)

// Remote-Write 2.0's protobuf messages (io.prometheus.write.v2), written
// straight from a batch's columns with protowire, as Encoder writes 1.0's:
//
//	Request    { repeated string symbols = 4; repeated TimeSeries timeseries = 5; }
//	TimeSeries { repeated uint32 labels_refs = 1; repeated Sample samples = 2; Metadata metadata = 5; }
//	Sample     { double value = 1; int64 timestamp = 2; } // ms
//	Metadata   { MetricType type = 1; uint32 help_ref = 3; uint32 unit_ref = 4; }
//
// Every string of a request is in its symbols once (symbols[0] is ""),
// and a series names its labels by their index there, name then value,
// packed. Each series entry carries its metric's metadata: a receiver
// that keeps metadata takes it from every entry (Prometheus updates a
// series' metadata on each), so an entry without it would erase it. The
// unit is left empty (ref 0, not written): the sources say none.
const (
	fieldV2Symbols    = 4
	fieldV2Timeseries = 5
	fieldV2LabelsRefs = 1
	fieldV2Samples    = 2
	fieldV2Metadata   = 5
	fieldV2MetaType   = 1
	fieldV2MetaHelp   = 3

	metricTypeCounter = 1 // Metadata.MetricType METRIC_TYPE_COUNTER
	metricTypeGauge   = 2 // METRIC_TYPE_GAUGE
)

// EncoderV2 builds one Remote-Write 2.0 Request from a batch's tables:
// the series are those of Encoder (metric MEASUREMENT_FIELD, the device's
// tags and the constant labels, one sample per row), their strings put
// in the request's symbol table, each typed gauge (counter for a field
// the source says only grows) with a help text (Help) once per metric
// in the symbols. Reset starts a request, AppendTable adds
// a table's samples, AppendRequest writes the request. An EncoderV2 is
// not safe for concurrent use; give each worker one.
type EncoderV2 struct {
	// Labels are constant labels of every series.
	Labels []Label

	schemas []*schemaEncV2
	budget  devcache.Budget
	syms    symtab
	series  []byte // the request's timeseries fields
	req     uint32 // the request being built (1, 2, ...): what schemaEncV2.req is compared with

	// refs holds, for each device seen in the request, its labels' refs
	// (varints, as labels_refs holds them); devRefs are their spans.
	refs    []byte
	devRefs []refSpan
	vals    []byte // the current device's tag values
	scratch []byte
	order   []int32 // rowOrder's
}

// refSpan is where a device's label refs are in EncoderV2.refs: those of
// labels sorting before __name__ in [start, mid), the others in [mid,
// end).
type refSpan struct{ start, mid, end uint32 }

// schemaEncV2 is what an EncoderV2 keeps per schema.
type schemaEncV2 struct {
	schema  *sources.Schema
	metrics [][]byte   // field f's metric name
	helps   [][]byte   // field f's help text
	types   []uint64   // field f's Metadata.MetricType
	labels  []labelSrc // as schemaEnc's
	before  int
	names   [][]byte // labels[i].name
	consts  [][]byte // labels[i].value (constants)
	// values caches each device's tag values across requests: for each
	// tag label in order, a uvarint length then the value.
	values devcache.Cache

	// For the request req: each field's __name__ pair of refs (varints),
	// its encoded metadata field (tag, length, message), labels[i]'s name
	// ref, and each device's index in devRefs + 1.
	req      uint32
	namePair [][]byte
	meta     [][]byte
	nameRefs []uint32
	devs     map[uint32]uint32
}

// Reset starts a new request.
func (e *EncoderV2) Reset() {
	if e.budget.Limit == 0 {
		e.budget.Limit = TagCacheBytes
	}
	e.req++
	e.syms.reset()
	e.series = e.series[:0]
	e.refs = e.refs[:0]
	e.devRefs = e.devRefs[:0]
}

func (e *EncoderV2) schemaEnc(s *sources.Schema) *schemaEncV2 {
	var se *schemaEncV2
	for _, x := range e.schemas {
		if x.schema == s {
			se = x
			break
		}
	}
	if se == nil {
		// The label order is Encoder's: derive it the same way.
		v1 := (&Encoder{Labels: e.Labels}).schemaEnc(s)
		se = &schemaEncV2{schema: s, labels: v1.labels, before: v1.before, devs: map[uint32]uint32{}}
		for _, f := range s.Fields {
			se.metrics = append(se.metrics, []byte(MetricName(s.Measurement, f.Name)))
			se.helps = append(se.helps, []byte(Help(s.Measurement, f)))
			typ := uint64(metricTypeGauge)
			if f.Counter {
				typ = metricTypeCounter
			}
			se.types = append(se.types, typ)
		}
		for _, l := range se.labels {
			se.names = append(se.names, []byte(l.name))
			se.consts = append(se.consts, []byte(l.value))
		}
		se.namePair = make([][]byte, len(s.Fields))
		se.meta = make([][]byte, len(s.Fields))
		se.nameRefs = make([]uint32, len(se.labels))
		e.schemas = append(e.schemas, se)
	}
	if se.req != e.req {
		se.req = e.req
		clear(se.devs)
		name := e.syms.ref(nameLabelBytes)
		for f, m := range se.metrics {
			p := protowire.AppendVarint(se.namePair[f][:0], uint64(name))
			se.namePair[f] = protowire.AppendVarint(p, uint64(e.syms.ref(m)))
			help := uint64(e.syms.ref(se.helps[f]))
			n := protowire.SizeTag(fieldV2MetaType) + protowire.SizeVarint(se.types[f]) +
				protowire.SizeTag(fieldV2MetaHelp) + protowire.SizeVarint(help)
			p = protowire.AppendTag(se.meta[f][:0], fieldV2Metadata, protowire.BytesType)
			p = protowire.AppendVarint(p, uint64(n))
			p = protowire.AppendTag(p, fieldV2MetaType, protowire.VarintType)
			p = protowire.AppendVarint(p, se.types[f])
			p = protowire.AppendTag(p, fieldV2MetaHelp, protowire.VarintType)
			se.meta[f] = protowire.AppendVarint(p, help)
		}
		for i, n := range se.names {
			se.nameRefs[i] = e.syms.ref(n)
		}
	}
	return se
}

var nameLabelBytes = []byte(nameLabel)

// Help is the help text 2.0 sends with the metric of field f of
// measurement: what the metric is, the sources knowing nothing more
// (no description, no unit).
func Help(measurement string, f sources.Field) string {
	return "soakd series source: field " + f.Name + " of " + measurement + ", one series per device"
}

// deviceRefs returns device d's label refs in this request, interning
// its values on its first row. A tag with an empty value is left out, as
// Encoder leaves it out.
func (e *EncoderV2) deviceRefs(se *schemaEncV2, d uint32) refSpan {
	if i, ok := se.devs[d]; ok {
		return e.devRefs[i-1]
	}
	var ok bool
	if e.vals, ok = se.values.Append(e.vals[:0], d); !ok {
		for _, l := range se.labels {
			if l.tag < 0 {
				continue
			}
			e.scratch = se.schema.Tags.AppendTag(e.scratch[:0], d, l.tag)
			e.vals = protowire.AppendBytes(e.vals, e.scratch)
		}
		se.values.Put(d, e.vals, &e.budget)
	}
	sp := refSpan{start: uint32(len(e.refs))}
	vals := e.vals
	for i, l := range se.labels {
		if i == se.before {
			sp.mid = uint32(len(e.refs))
		}
		v := se.consts[i]
		if l.tag >= 0 {
			var n int
			v, n = protowire.ConsumeBytes(vals)
			vals = vals[n:]
		}
		if len(v) == 0 {
			continue
		}
		e.refs = protowire.AppendVarint(e.refs, uint64(se.nameRefs[i]))
		e.refs = protowire.AppendVarint(e.refs, uint64(e.syms.ref(v)))
	}
	if se.before == len(se.labels) {
		sp.mid = uint32(len(e.refs))
	}
	sp.end = uint32(len(e.refs))
	e.devRefs = append(e.devRefs, sp)
	se.devs[d] = uint32(len(e.devRefs))
	return sp
}

// AppendTable adds t's samples to the request and returns how many.
func (e *EncoderV2) AppendTable(t *sources.Table) int {
	if e.req == 0 {
		e.Reset()
	}
	se := e.schemaEnc(t.Schema)
	samples := 0
	dst := e.series
	e.order = rowOrder(t, e.order)
	for _, row := range e.order {
		i := int(row)
		sp := e.deviceRefs(se, t.Device[i])
		pre, post := e.refs[sp.start:sp.mid], e.refs[sp.mid:sp.end]
		ts := uint64(Millis(t.Time[i]))
		sampleLen := sampleSize(ts)
		for f := range t.Schema.Fields {
			v, ok := t.Float(f, i)
			if !ok {
				continue
			}
			name, meta := se.namePair[f], se.meta[f]
			refsLen := len(pre) + len(name) + len(post)
			n := protowire.SizeTag(fieldV2LabelsRefs) + protowire.SizeBytes(refsLen) +
				protowire.SizeTag(fieldV2Samples) + protowire.SizeBytes(sampleLen) + len(meta)
			dst = protowire.AppendTag(dst, fieldV2Timeseries, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(n))
			dst = protowire.AppendTag(dst, fieldV2LabelsRefs, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(refsLen))
			dst = append(dst, pre...)
			dst = append(dst, name...)
			dst = append(dst, post...)
			dst = appendSample(dst, fieldV2Samples, sampleLen, v, ts)
			dst = append(dst, meta...)
			samples++
		}
	}
	e.series = dst
	return samples
}

// AppendRequest appends the request built since Reset to dst: its
// symbols, then its series, the order in which Prometheus' own sender
// writes them.
func (e *EncoderV2) AppendRequest(dst []byte) []byte {
	if e.req == 0 {
		e.Reset()
	}
	dst = append(dst, e.syms.buf...)
	return append(dst, e.series...)
}

// symtab is a request's symbol table: each distinct string once, encoded
// as the Request's symbols fields in buf, found again through an
// open-addressing hash table, so that interning a string that is already
// there allocates nothing.
type symtab struct {
	buf   []byte   // the symbols fields
	spans []uint64 // symbol i's bytes in buf: offset<<32 | length
	slots []uint32 // 0 = empty, else symbol index + 1
	seed  maphash.Seed
}

// reset empties the table but for symbol 0, the empty string the spec
// puts first.
func (s *symtab) reset() {
	if s.slots == nil {
		s.seed = maphash.MakeSeed()
		s.slots = make([]uint32, 1024)
	}
	s.buf = s.buf[:0]
	s.spans = s.spans[:0]
	clear(s.slots)
	s.ref(nil)
}

// ref returns b's index in the table, adding it when it is not there.
func (s *symtab) ref(b []byte) uint32 {
	if 2*(len(s.spans)+1) > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for h := maphash.Bytes(s.seed, b) & mask; ; h = (h + 1) & mask {
		x := s.slots[h]
		if x == 0 {
			s.buf = protowire.AppendTag(s.buf, fieldV2Symbols, protowire.BytesType)
			s.buf = protowire.AppendVarint(s.buf, uint64(len(b)))
			s.spans = append(s.spans, uint64(len(s.buf))<<32|uint64(len(b)))
			s.buf = append(s.buf, b...)
			s.slots[h] = uint32(len(s.spans))
			return uint32(len(s.spans) - 1)
		}
		if bytes.Equal(s.sym(x-1), b) {
			return x - 1
		}
	}
}

func (s *symtab) sym(i uint32) []byte {
	sp := s.spans[i]
	off := sp >> 32
	return s.buf[off : off+sp&math.MaxUint32]
}

// grow doubles the hash table and puts every symbol back in it.
func (s *symtab) grow() {
	s.slots = make([]uint32, 2*len(s.slots))
	mask := uint64(len(s.slots) - 1)
	for i := range s.spans {
		h := maphash.Bytes(s.seed, s.sym(uint32(i))) & mask
		for s.slots[h] != 0 {
			h = (h + 1) & mask
		}
		s.slots[h] = uint32(i + 1)
	}
}
