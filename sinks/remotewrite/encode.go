package remotewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/soakd/soakd/sinks/devcache"
	"github.com/soakd/soakd/sources"
)

// Remote-Write 1.0's protobuf messages, written straight from a batch's
// columns with protowire (no message structs to fill and marshal):
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; } // ms
const (
	fieldTimeseries  = 1
	fieldLabels      = 1
	fieldSamples     = 2
	fieldLabelName   = 1
	fieldLabelValue  = 2
	fieldSampleValue = 1
	fieldSampleTime  = 2
)

// nameLabel is the label that holds the metric name.
const nameLabel = "__name__"

// TagCacheBytes bounds the encoded label sets an Encoder keeps per
// worker (1 MiB holds some 10,000 devices' labels).
const TagCacheBytes = 1 << 20

// Encoder appends a batch's rows to a WriteRequest as one series per
// device × field: the metric name is MEASUREMENT_FIELD, the labels are
// the device's tags (and the URL's constant labels), one sample per row
// with the row's time in milliseconds. A null value sends no sample.
// Each row's samples go in a TimeSeries entry of their own, as Prometheus'
// own remote-write client sends them, rows in time order (rowOrder), so a
// device's samples are in time order. An Encoder is not safe for
// concurrent use; give each worker one.
type Encoder struct {
	// Labels are constant labels of every series.
	Labels []Label

	schemas []*schemaEnc
	budget  devcache.Budget
	dev     []byte // the current row's device labels
	scratch []byte
	order   []int32 // rowOrder's
}

// schemaEnc is what an Encoder keeps per schema.
type schemaEnc struct {
	schema *sources.Schema
	// names[f] is field f's __name__ label, encoded as a TimeSeries
	// labels entry.
	names [][]byte
	// labels are the device's labels other than __name__, sorted by name
	// as the protocol asks; before of them sort before __name__.
	labels []labelSrc
	before int
	// cache holds each device's encoded labels: a 2-byte length of the
	// part before __name__, then the labels.
	cache devcache.Cache
}

// labelSrc is a label of a series: a tag of the device (tag >= 0) or a
// constant.
type labelSrc struct {
	name  string
	tag   int
	value string
}

// MetricName is the metric name of a field of a measurement: both joined
// with _, every character Prometheus does not allow in a name replaced by
// _, and _ put before a leading digit.
func MetricName(measurement, field string) string {
	return sanitize(measurement+"_"+field, true)
}

// LabelName is the label name of a tag key, sanitized as MetricName does
// (without the colons a metric name may hold).
func LabelName(tagKey string) string { return sanitize(tagKey, false) }

func sanitize(s string, metric bool) string {
	var b strings.Builder
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || metric && r == ':' || i > 0 && r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
		case i == 0 && r >= '0' && r <= '9':
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func validLabelName(s string) bool { return s != "" && sanitize(s, false) == s }

// CheckSchema reports a schema whose series cannot be named apart: two
// fields or two tags that sanitize to one name, a tag named like a
// constant label, or a tag key that becomes a reserved __ label.
func CheckSchema(s *sources.Schema, labels []Label) error {
	var errs []error
	if len(s.Fields) == 0 {
		errs = append(errs, fmt.Errorf("remote write: measurement %q has no fields", s.Measurement))
	}
	if len(s.TagKeys) > 0 && s.Tags == nil {
		errs = append(errs, fmt.Errorf("remote write: measurement %q has tag keys but no Tagger", s.Measurement))
	}
	metrics := map[string]string{}
	for _, f := range s.Fields {
		n := MetricName(s.Measurement, f.Name)
		if o, dup := metrics[n]; dup {
			errs = append(errs, fmt.Errorf("remote write: fields %q and %q of measurement %q both become metric %s", o, f.Name, s.Measurement, n))
		}
		metrics[n] = f.Name
	}
	names := map[string]string{}
	for _, l := range labels {
		names[l.Name] = "label=" + l.Name
	}
	for _, k := range s.TagKeys {
		n := LabelName(k)
		if strings.HasPrefix(n, "__") {
			errs = append(errs, fmt.Errorf("remote write: tag key %q of measurement %q becomes label %s; labels starting with __ are reserved", k, s.Measurement, n))
		}
		if o, dup := names[n]; dup {
			errs = append(errs, fmt.Errorf("remote write: tag key %q of measurement %q and %s both become label %s", k, s.Measurement, o, n))
		}
		names[n] = fmt.Sprintf("tag key %q", k)
	}
	return errors.Join(errs...)
}

func (e *Encoder) schemaEnc(s *sources.Schema) *schemaEnc {
	for _, se := range e.schemas {
		if se.schema == s {
			return se
		}
	}
	se := &schemaEnc{schema: s}
	for _, f := range s.Fields {
		se.names = append(se.names, appendLabel(nil, nameLabel, MetricName(s.Measurement, f.Name)))
	}
	for i, k := range s.TagKeys {
		se.labels = append(se.labels, labelSrc{name: LabelName(k), tag: i})
	}
	for _, l := range e.Labels {
		se.labels = append(se.labels, labelSrc{name: l.Name, tag: -1, value: l.Value})
	}
	slices.SortFunc(se.labels, func(a, b labelSrc) int { return strings.Compare(a.name, b.name) })
	for se.before < len(se.labels) && se.labels[se.before].name < nameLabel {
		se.before++
	}
	e.schemas = append(e.schemas, se)
	return se
}

// appendLabel appends a TimeSeries labels entry; value is a string or
// bytes (a tag's, encoded in scratch).
func appendLabel[V string | []byte](dst []byte, name string, value V) []byte {
	n := protowire.SizeTag(fieldLabelName) + protowire.SizeBytes(len(name)) +
		protowire.SizeTag(fieldLabelValue) + protowire.SizeBytes(len(value))
	dst = protowire.AppendTag(dst, fieldLabels, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = protowire.AppendTag(dst, fieldLabelName, protowire.BytesType)
	dst = protowire.AppendString(dst, name)
	dst = protowire.AppendTag(dst, fieldLabelValue, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// deviceLabels sets e.dev to device d's encoded labels (from the cache
// when it has them): 2 bytes of the length of the part before __name__,
// then the labels. A tag with an empty value is left out, as Prometheus
// reads an empty label as no label.
func (e *Encoder) deviceLabels(se *schemaEnc, d uint32) {
	var ok bool
	if e.dev, ok = se.cache.Append(e.dev[:0], d); ok {
		return
	}
	e.dev = append(e.dev[:0], 0, 0)
	for i, l := range se.labels {
		if i == se.before {
			binary.LittleEndian.PutUint16(e.dev, uint16(min(len(e.dev)-2, math.MaxUint16)))
		}
		v := l.value
		if l.tag >= 0 {
			e.scratch = se.schema.Tags.AppendTag(e.scratch[:0], d, l.tag)
			if len(e.scratch) == 0 {
				continue
			}
			e.dev = appendLabel(e.dev, l.name, e.scratch)
			continue
		}
		e.dev = appendLabel(e.dev, l.name, v)
	}
	if se.before == len(se.labels) {
		binary.LittleEndian.PutUint16(e.dev, uint16(min(len(e.dev)-2, math.MaxUint16)))
	}
	se.cache.Put(d, e.dev, &e.budget)
}

// Millis is a row time (Unix ns) as the protocol's milliseconds, rounded
// down.
func Millis(ns int64) int64 {
	ms := ns / 1e6
	if ns < 0 && ns%1e6 != 0 {
		ms--
	}
	return ms
}

// sampleSize is the length of a Sample at time ts (ms).
func sampleSize(ts uint64) int {
	return protowire.SizeTag(fieldSampleValue) + 8 + protowire.SizeTag(fieldSampleTime) + protowire.SizeVarint(ts)
}

// appendSample appends a series' Sample (field number field: 1.0's and
// 2.0's differ) of length sampleLen (sampleSize), value v at time ts.
func appendSample(dst []byte, field protowire.Number, sampleLen int, v float64, ts uint64) []byte {
	dst = protowire.AppendTag(dst, field, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(sampleLen))
	dst = protowire.AppendTag(dst, fieldSampleValue, protowire.Fixed64Type)
	dst = protowire.AppendFixed64(dst, math.Float64bits(v))
	dst = protowire.AppendTag(dst, fieldSampleTime, protowire.VarintType)
	return protowire.AppendVarint(dst, ts)
}

// AppendTable appends t's samples to dst, a WriteRequest being built, and
// returns it with the number of samples appended.
func (e *Encoder) AppendTable(dst []byte, t *sources.Table) ([]byte, int) {
	if e.budget.Limit == 0 {
		e.budget.Limit = TagCacheBytes
	}
	se := e.schemaEnc(t.Schema)
	samples := 0
	e.order = rowOrder(t, e.order)
	for _, row := range e.order {
		i := int(row)
		e.deviceLabels(se, t.Device[i])
		split := 2 + int(binary.LittleEndian.Uint16(e.dev))
		pre, post := e.dev[2:split], e.dev[split:]
		ts := uint64(Millis(t.Time[i]))
		sampleLen := sampleSize(ts)
		for f := range t.Schema.Fields {
			v, ok := t.Float(f, i)
			if !ok {
				continue
			}
			name := se.names[f]
			n := len(pre) + len(name) + len(post) + protowire.SizeTag(fieldSamples) + protowire.SizeBytes(sampleLen)
			dst = protowire.AppendTag(dst, fieldTimeseries, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(n))
			dst = append(dst, pre...)
			dst = append(dst, name...)
			dst = append(dst, post...)
			dst = appendSample(dst, fieldSamples, sampleLen, v, ts)
			samples++
		}
	}
	return dst, samples
}
