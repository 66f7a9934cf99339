package lineproto_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
)

// tagger serves fixed tag values: vals[device][tag].
type tagger [][]string

func (t tagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	return append(dst, t[device][tag]...)
}

// line is one decoded line-protocol entry.
type line struct {
	meas   string
	tags   map[string]string
	floats map[string]float64
	ints   map[string]int64
	ts     int64
}

// decode parses buf with InfluxData's reference decoder and fails the test
// on any syntax error.
func decode(t *testing.T, buf []byte) []line {
	t.Helper()
	var out []line
	dec := lineprotocol.NewDecoderWithBytes(buf)
	for dec.Next() {
		l := line{tags: map[string]string{}, floats: map[string]float64{}, ints: map[string]int64{}}
		m, err := dec.Measurement()
		if err != nil {
			t.Fatalf("reference decoder rejects measurement: %v\n%q", err, buf)
		}
		l.meas = string(m)
		for {
			k, v, err := dec.NextTag()
			if err != nil {
				t.Fatalf("reference decoder rejects tag: %v\n%q", err, buf)
			}
			if k == nil {
				break
			}
			if _, dup := l.tags[string(k)]; dup {
				t.Fatalf("tag %q written twice:\n%q", k, buf)
			}
			l.tags[string(k)] = string(v)
		}
		for {
			k, v, err := dec.NextField()
			if err != nil {
				t.Fatalf("reference decoder rejects field: %v\n%q", err, buf)
			}
			if k == nil {
				break
			}
			switch v.Kind() {
			case lineprotocol.Float:
				l.floats[string(k)] = v.FloatV()
			case lineprotocol.Int:
				l.ints[string(k)] = v.IntV()
			default:
				t.Fatalf("field %q decoded as %v, want float or int:\n%q", k, v.Kind(), buf)
			}
		}
		tb, err := dec.TimeBytes()
		if err != nil {
			t.Fatalf("reference decoder rejects timestamp: %v\n%q", err, buf)
		}
		if l.ts, err = strconv.ParseInt(string(tb), 10, 64); err != nil {
			t.Fatalf("timestamp %q: %v", tb, err)
		}
		out = append(out, l)
	}
	if err := dec.Err(); err != nil {
		t.Fatalf("reference decoder: %v\n%q", err, buf)
	}
	return out
}

// canonical is what a tag value must read back as: line protocol cannot
// carry control characters (they become spaces), invalid UTF-8 (each bad
// byte becomes U+FFFD) or a trailing backslash (dropped).
func canonical(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return strings.TrimRight(b.String(), `\`)
}

var nasty = []string{
	"plain", "with space", "comma,here", "equals=sign", `back\slash`, `two\\backslashes`,
	`back\ space`, `back\,comma`, `back\=equals`, `\leading`, `trailing\`, `trailing\\`,
	`\`, `"quoted"`, "tab\there", "new\nline", "cr\rreturn", "nul\x00byte", "del\x7f",
	"ünïcödé", "emoji 🚀", "bad\xffutf8", "\xc3", "#hash", " leading space", "trailing space ",
	"a=b,c=d e", "=", ",", " ",
}

// Every tag value, however nasty, reads back as its canonical form through
// the reference decoder; names with spaces, commas and equals signs too.
func TestRoundTripTagValues(t *testing.T) {
	for _, name := range []struct{ meas, key, field string }{
		{"cpu", "host", "usage"},
		{"my measurement,x=y", "tag key,=", "field name, =x"},
		{`back\slash`, `k\ey`, `f\ield`},
	} {
		vals := make(tagger, len(nasty))
		for i, v := range nasty {
			vals[i] = []string{v, "fixed"}
		}
		s := &sources.Schema{Measurement: name.meas, TagKeys: []string{name.key, "other"}, Tags: vals,
			Fields: []sources.Field{{Name: name.field, Kind: sources.Float}, {Name: "n", Kind: sources.Int}}}
		if err := lineproto.CheckSchema(s); err != nil {
			t.Fatalf("CheckSchema(%+v): %v", name, err)
		}
		tb := sources.NewTable(s)
		for i := range nasty {
			tb.Device = append(tb.Device, uint32(i))
			tb.Time = append(tb.Time, int64(i))
			tb.Floats[0] = append(tb.Floats[0], float64(i)+0.25)
			tb.Ints[1] = append(tb.Ints[1], int64(-i))
		}
		var e lineproto.Encoder
		buf := e.AppendTable(nil, tb)
		got := decode(t, buf)
		if len(got) != len(nasty) {
			t.Fatalf("%d lines decoded, want %d:\n%s", len(got), len(nasty), buf)
		}
		for i, l := range got {
			if l.meas != name.meas {
				t.Errorf("measurement %q read back as %q", name.meas, l.meas)
			}
			want := canonical(nasty[i])
			v, ok := l.tags[name.key]
			switch {
			case want == "" && ok:
				t.Errorf("tag value %q: want no tag (empty after canonicalisation), got %q", nasty[i], v)
			case want != "" && v != want:
				t.Errorf("tag value %q read back as %q, want %q", nasty[i], v, want)
			}
			if l.tags["other"] != "fixed" || l.floats[name.field] != float64(i)+0.25 || l.ints["n"] != int64(-i) || l.ts != int64(i) {
				t.Errorf("row %d read back as %+v", i, l)
			}
		}
	}
}

// Nulls, NaN and infinities are left out; a row with nothing left is
// skipped; timestamps follow the precision (floor division).
func TestRoundTripValues(t *testing.T) {
	s := &sources.Schema{Measurement: "m", TagKeys: []string{"id"}, Tags: tagger{{"a"}, {""}},
		Fields: []sources.Field{
			{Name: "f", Kind: sources.Float},
			{Name: "d2", Kind: sources.Float, Decimals: 2},
			{Name: "i", Kind: sources.Int},
		}}
	tb := sources.NewTable(s)
	add := func(dev uint32, ts int64, f, d2 float64, i int64, null ...int) {
		r := tb.Len()
		tb.Device = append(tb.Device, dev)
		tb.Time = append(tb.Time, ts)
		tb.Floats[0] = append(tb.Floats[0], f)
		tb.Floats[1] = append(tb.Floats[1], d2)
		tb.Ints[2] = append(tb.Ints[2], i)
		for _, n := range null {
			if tb.Null[n] == nil {
				tb.Null[n] = make([]bool, 16)
			}
			tb.Null[n][r] = true
		}
	}
	add(0, 1_500_000_123_456_789, 1.5, 58.1, math.MaxInt64)
	add(1, -1_500_000_001, math.NaN(), -0.05, math.MinInt64) // NaN left out, empty tag left out
	add(0, 0, math.Inf(1), math.Inf(-1), 7, 2)               // nothing left: skipped
	add(0, 42, 1e300, 123456789.12, 0, 0)                    // f null
	add(1, 1, math.Copysign(0, -1), 0.001, 1, 1)             // d2 null
	add(0, 2, math.SmallestNonzeroFloat64, 12.345, -1)       // d2 rounds to 12.35 (or .34 by binary repr)
	add(0, 3, 0.1+0.2, 999_999_999.99, 5)
	add(1, 4, 2.5, 1.25, 58) // two digits
	add(0, 5, 3, 2, 100)

	for _, p := range []string{"ns", "us", "ms", "s"} {
		prec, err := lineproto.ParsePrecision(p)
		if err != nil {
			t.Fatal(err)
		}
		div := map[string]int64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[p]
		e := lineproto.Encoder{Precision: prec}
		got := decode(t, e.AppendTable(nil, tb))
		if len(got) != tb.Len()-1 {
			t.Fatalf("%s: %d lines, want %d (all-empty row skipped)", p, len(got), tb.Len()-1)
		}
		j := 0
		for r := 0; r < tb.Len(); r++ {
			if r == 2 {
				continue
			}
			l := got[j]
			j++
			if want := floorDiv(tb.Time[r], div); l.ts != want {
				t.Errorf("%s row %d: time %d, want %d", p, r, l.ts, want)
			}
			if tb.Device[r] == 1 && len(l.tags) != 0 {
				t.Errorf("row %d: empty tag value written: %v", r, l.tags)
			}
			checkFloat := func(f int, exact bool) {
				name := s.Fields[f].Name
				v, ok := l.floats[name]
				in := tb.Floats[f][r]
				null := tb.Null[f] != nil && tb.Null[f][r]
				if null || math.IsNaN(in) || math.IsInf(in, 0) {
					if ok {
						t.Errorf("row %d: %s=%v written for a null/NaN/Inf value", r, name, v)
					}
					return
				}
				if !ok {
					t.Errorf("row %d: %s missing", r, name)
					return
				}
				if exact && v != in {
					t.Errorf("row %d: %s=%v read back as %v", r, name, in, v)
				}
				if !exact && math.Abs(v-in) > 0.005+1e-9*math.Abs(in) {
					t.Errorf("row %d: %s=%v read back as %v (want within 0.005)", r, name, in, v)
				}
			}
			checkFloat(0, true)
			checkFloat(1, false)
			if tb.Null[2] == nil || !tb.Null[2][r] {
				if l.ints["i"] != tb.Ints[2][r] {
					t.Errorf("row %d: i=%d read back as %d", r, tb.Ints[2][r], l.ints["i"])
				}
			}
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Schema names InfluxDB cannot store as named are reported, each naming
// the culprit.
func TestCheckSchema(t *testing.T) {
	ok := func() *sources.Schema {
		return &sources.Schema{Measurement: "cpu", TagKeys: []string{"host"}, Tags: tagger{{"h"}},
			Fields: []sources.Field{{Name: "usage", Kind: sources.Float}}}
	}
	if err := lineproto.CheckSchema(ok()); err != nil {
		t.Fatalf("valid schema: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*sources.Schema)
		want string
	}{
		{"empty measurement", func(s *sources.Schema) { s.Measurement = "" }, `measurement "" is empty`},
		{"comment", func(s *sources.Schema) { s.Measurement = "#cpu" }, "comment"},
		{"trailing backslash", func(s *sources.Schema) { s.TagKeys[0] = `host\` }, "ends with a backslash"},
		{"control", func(s *sources.Schema) { s.Fields[0].Name = "a\nb" }, "control character"},
		{"utf8", func(s *sources.Schema) { s.Measurement = "\xff" }, "not valid UTF-8"},
		{"reserved tag", func(s *sources.Schema) { s.TagKeys[0] = "time" }, `tag key "time" is reserved`},
		{"reserved field", func(s *sources.Schema) { s.Fields[0].Name = "_field" }, "reserved"},
		{"duplicate", func(s *sources.Schema) { s.Fields = append(s.Fields, s.Fields[0]) }, `field "usage" appears twice`},
		{"no fields", func(s *sources.Schema) { s.Fields = nil }, "no fields"},
		{"no tagger", func(s *sources.Schema) { s.Tags = nil }, "no Tagger"},
		{"quote", func(s *sources.Schema) { s.Fields[0].Name = `a\"b` }, `contains \"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok()
			tc.edit(s)
			err := lineproto.CheckSchema(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckSchema = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func ExampleEncoder() {
	s := &sources.Schema{Measurement: "cpu", TagKeys: []string{"host"}, Tags: tagger{{"web 1,eu"}},
		Fields: []sources.Field{{Name: "usage", Kind: sources.Float, Decimals: 2}, {Name: "procs", Kind: sources.Int}}}
	tb := sources.NewTable(s)
	tb.Device = append(tb.Device, 0)
	tb.Time = append(tb.Time, 1_700_000_000_000_000_000)
	tb.Floats[0] = append(tb.Floats[0], 58.10)
	tb.Ints[1] = append(tb.Ints[1], 12)
	e := lineproto.Encoder{Precision: lineproto.Second}
	fmt.Printf("%s", e.AppendTable(nil, tb))
	// Output: cpu,host=web\ 1\,eu usage=58.1,procs=12i 1700000000
}
