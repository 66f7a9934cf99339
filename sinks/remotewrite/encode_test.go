package remotewrite

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/soakd/soakd/sources"
)

// decoded is a TimeSeries read back from the wire.
type decoded struct {
	labels  [][2]string
	samples [][2]float64 // [ms, value]
}

// decodeRequest parses a WriteRequest with protowire, failing t on any
// malformed or unexpected field: what a receiver would read.
func decodeRequest(t *testing.T, b []byte) []decoded {
	t.Helper()
	var out []decoded
	each(t, b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) {
		if num != fieldTimeseries || typ != protowire.BytesType {
			t.Fatalf("WriteRequest field %d type %d", num, typ)
		}
		var ts decoded
		each(t, v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) {
			switch {
			case num == fieldLabels && typ == protowire.BytesType:
				var l [2]string
				each(t, v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) { l[num-1] = string(v) })
				ts.labels = append(ts.labels, l)
			case num == fieldSamples && typ == protowire.BytesType:
				var s [2]float64
				each(t, v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) {
					if num == fieldSampleValue && typ == protowire.Fixed64Type {
						s[1] = math.Float64frombits(n)
					} else {
						s[0] = float64(int64(n))
					}
				})
				ts.samples = append(ts.samples, s)
			default:
				t.Fatalf("TimeSeries field %d type %d", num, typ)
			}
		})
		out = append(out, ts)
	})
	return out
}

// each calls fn for every field of the message b: its bytes (for bytes
// fields) or its number (varint, fixed64).
func each(t *testing.T, b []byte, fn func(protowire.Number, protowire.Type, []byte, uint64)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				t.Fatalf("bad bytes: %v", protowire.ParseError(m))
			}
			fn(num, typ, v, 0)
			b = b[m:]
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				t.Fatal("bad varint")
			}
			fn(num, typ, nil, v)
			b = b[m:]
		case protowire.Fixed64Type:
			v, m := protowire.ConsumeFixed64(b)
			if m < 0 {
				t.Fatal("bad fixed64")
			}
			fn(num, typ, nil, v)
			b = b[m:]
		default:
			t.Fatalf("field %d of type %d", num, typ)
		}
	}
}

// Every non-null value becomes one sample of its own series entry: the
// metric name and the device's tags as labels, sorted by name (a tag key
// sorting before __name__ included), the empty tag left out, the
// constant labels added, times in ms.
func TestEncode(t *testing.T) {
	t.Parallel()
	s := cpuSchema("cpu-1")
	s.TagKeys = []string{"hostname", "Zone"} // Zone sorts before __name__
	b := sources.NewSeriesBatch([]*sources.Schema{s})
	start := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	g := &gen{devices: 4, start: start, step: 1500 * time.Microsecond}
	e := Encoder{Labels: []Label{{"run", "r1"}}}
	for round := range 2 { // the second round reads device labels from the cache
		g.seq = 0
		g.fill(b, 8)
		buf, n := e.AppendTable(nil, b.Tables[0])
		got := decodeRequest(t, buf)
		if n != len(got) || n != b.NumValues {
			t.Fatalf("round %d: %d samples said, %d series entries, %d values", round, n, len(got), b.NumValues)
		}
		k := 0
		for seq := range int64(8) {
			dev := seq % 4
			ms := start.Add(time.Duration(seq/4) * 1500 * time.Microsecond).UnixMilli()
			for f, fd := range s.Fields {
				if f == 1 && seq%7 == 0 {
					continue
				}
				ts := got[k]
				k++
				want := [][2]string{{"__name__", MetricName("cpu-1", fd.Name)}, {"hostname", "host_" + string(rune('0'+dev))}, {"run", "r1"}}
				if dev != 3 {
					want = append([][2]string{{"Zone", [...]string{"eu-west-1", "us-east-1", "ap-south-1"}[dev%3]}}, want...)
				}
				if !slices.Equal(ts.labels, want) {
					t.Fatalf("row %d field %d: labels %q, want %q", seq, f, ts.labels, want)
				}
				if len(ts.samples) != 1 || ts.samples[0] != [2]float64{float64(ms), value(seq, f, fd.Kind)} {
					t.Fatalf("row %d field %d: samples %v, want [%d %v]", seq, f, ts.samples, ms, value(seq, f, fd.Kind))
				}
			}
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ meas, field, want string }{
		{"cpu", "usage_user", "cpu_usage_user"},
		{"cpu-1", "usage.system", "cpu_1_usage_system"},
		{"1m", "load:avg", "_1m_load:avg"},
		{"température", "x", "temp_rature_x"},
	} {
		if got := MetricName(c.meas, c.field); got != c.want {
			t.Errorf("MetricName(%q, %q) = %q, want %q", c.meas, c.field, got, c.want)
		}
	}
	if got := LabelName("load:avg"); got != "load_avg" {
		t.Errorf("LabelName: %q", got)
	}
	for _, c := range []struct {
		schema *sources.Schema
		labels []Label
		want   string
	}{
		{&sources.Schema{Measurement: "m", Fields: []sources.Field{{Name: "a.b"}, {Name: "a_b"}}}, nil, "both become metric m_a_b"},
		{&sources.Schema{Measurement: "m", TagKeys: []string{"a-b", "a_b"}, Tags: hostTagger{}, Fields: []sources.Field{{Name: "f"}}}, nil, "become label a_b"},
		{&sources.Schema{Measurement: "m", TagKeys: []string{"__x"}, Tags: hostTagger{}, Fields: []sources.Field{{Name: "f"}}}, nil, "reserved"},
		{&sources.Schema{Measurement: "m", TagKeys: []string{"run"}, Tags: hostTagger{}, Fields: []sources.Field{{Name: "f"}}}, []Label{{"run", "x"}}, "label=run"},
	} {
		err := CheckSchema(c.schema, c.labels)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckSchema(%+v): %v, want %q", c.schema, err, c.want)
		}
	}
	if err := CheckSchema(cpuSchema("cpu"), []Label{{"run", "x"}}); err != nil {
		t.Errorf("CheckSchema(cpu): %v", err)
	}
}

// Encoding a batch allocates nothing once the buffers and the label
// cache are warm.
func TestEncodeAllocs(t *testing.T) {
	s := cpuSchema("cpu")
	b := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(b, 1000)
	var e Encoder
	buf, _ := e.AppendTable(nil, b.Tables[0])
	if n := testing.AllocsPerRun(20, func() { buf, _ = e.AppendTable(buf[:0], b.Tables[0]) }); n != 0 {
		t.Errorf("%v allocations per batch", n)
	}
}

// Compress writes snappy's block format (what a plain snappy decoder
// reads back), into the buffer it is given once that is large enough,
// without allocating.
func TestCompress(t *testing.T) {
	s := cpuSchema("cpu")
	b := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(b, 1000)
	var e Encoder
	buf, _ := e.AppendTable(nil, b.Tables[0])
	z := Compress(nil, buf)
	got, err := snappy.DecodeStrict(nil, z) // plain snappy: no S2 extensions, which Prometheus refuses
	if err != nil || !slices.Equal(got, buf) {
		t.Fatalf("snappy reads back %d bytes of %d (%v)", len(got), len(buf), err)
	}
	if len(z) >= len(buf)/2 {
		t.Errorf("%d bytes compressed to %d", len(buf), len(z))
	}
	if n := testing.AllocsPerRun(10, func() { z = Compress(z[:cap(z)], buf) }); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

func BenchmarkEncode(b *testing.B) {
	s := cpuSchema("cpu")
	batch := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(batch, 1000)
	var e Encoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.AppendTable(buf[:0], batch.Tables[0])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.NumValues), "ns/sample")
}

// BenchmarkRequest is a request's whole client-side cost: encoding a
// batch of 1000 rows of 3 fields and compressing it with snappy
// (Compress).
func BenchmarkRequest(b *testing.B) {
	s := cpuSchema("cpu")
	batch := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(batch, 1000)
	var e Encoder
	var buf, z []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.AppendTable(buf[:0], batch.Tables[0])
		z = Compress(z[:cap(z)], buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.NumValues), "ns/sample")
	b.ReportMetric(float64(len(z))/float64(batch.NumValues), "bytes/sample")
}
