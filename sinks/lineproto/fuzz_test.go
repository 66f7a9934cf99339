package lineproto_test

import (
	"math"
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
)

// FuzzEncoder: for any measurement, tag key, tag values, field name,
// values, timestamp and precision, either CheckSchema rejects the schema
// with a line-protocol error, or the encoder's output is accepted by
// InfluxData's reference decoder and reads back as written (tag values in
// their canonical form, see canonical).
func FuzzEncoder(f *testing.F) {
	f.Add("cpu", "hostname", "host_0", "host_1", "usage_user", 58.1, int64(7), int64(1451606400000000000), uint8(0))
	f.Add("my meas,x=y", "tag key", "a b,c=d", `back\slash`, "f=g h", -0.5, int64(-1), int64(-1), uint8(1))
	f.Add(`m\`, "k", `trailing\`, "", "v", math.Inf(1), int64(math.MaxInt64), int64(math.MinInt64), uint8(2))
	f.Add("#comment", "time", "new\nline", "tab\t", "_field", math.NaN(), int64(0), int64(0), uint8(3))
	f.Add("ünï", "emoji🚀", "bad\xff", `\`, "n", 1e300, int64(1), int64(999), uint8(4))
	f.Add("m", "k", `x\ \="`, `\,\=\ `, `f\"`, 0.1, int64(2), int64(123456789), uint8(0))
	f.Fuzz(func(t *testing.T, meas, tagKey, val0, val1, field string, fv float64, iv, ts int64, precSel uint8) {
		s := &sources.Schema{Measurement: meas, TagKeys: []string{tagKey, "k2"}, Tags: tagger{{val0, val1}, {val1, val0}},
			Fields: []sources.Field{{Name: field, Kind: sources.Float}, {Name: "n", Kind: sources.Int}}}
		if err := lineproto.CheckSchema(s); err != nil {
			if !strings.HasPrefix(err.Error(), "line protocol: ") {
				t.Fatalf("unclear CheckSchema error: %v", err)
			}
			return
		}
		prec := []string{"ns", "us", "ms", "s"}[precSel%4]
		p, err := lineproto.ParsePrecision(prec)
		if err != nil {
			t.Fatal(err)
		}
		tb := sources.NewTable(s)
		for dev := range 2 {
			tb.Device = append(tb.Device, uint32(dev))
			tb.Time = append(tb.Time, ts)
			tb.Floats[0] = append(tb.Floats[0], fv)
			tb.Ints[1] = append(tb.Ints[1], iv)
		}
		e := lineproto.Encoder{Precision: p}
		got := decode(t, e.AppendTable(nil, tb))
		if len(got) != 2 {
			t.Fatalf("%d lines, want 2", len(got))
		}
		div := map[string]int64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[prec]
		for dev, l := range got {
			if l.meas != meas {
				t.Errorf("measurement %q read back as %q", meas, l.meas)
			}
			for k, key := range s.TagKeys {
				in := string(s.Tags.AppendTag(nil, uint32(dev), k))
				want := canonical(in)
				v, ok := l.tags[key]
				if want == "" && ok || want != "" && v != want {
					t.Errorf("tag %q=%q read back as %q (present %v), want %q", key, in, v, ok, want)
				}
			}
			if v, ok := l.floats[field]; math.IsNaN(fv) || math.IsInf(fv, 0) {
				if ok {
					t.Errorf("non-finite %v written as %v", fv, v)
				}
			} else if v != fv {
				t.Errorf("float %v read back as %v", fv, v)
			}
			if l.ints["n"] != iv {
				t.Errorf("int %d read back as %d", iv, l.ints["n"])
			}
			if want := floorDiv(ts, div); l.ts != want {
				t.Errorf("time %d (%s) read back as %d, want %d", ts, prec, l.ts, want)
			}
		}
	})
}
