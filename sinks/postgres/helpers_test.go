package postgres

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// testTagger keeps tag values as strings: [device][tag].
type testTagger struct{ vals [][]string }

func (tg *testTagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	return append(dst, tg.vals[device][tag]...)
}

// newTagger makes devices with tag values derived from the device number,
// the device tag first-class ("host_7") and the others repeating.
func newTagger(devices int, keys []string, deviceTag int) *testTagger {
	tg := &testTagger{vals: make([][]string, devices)}
	for d := range devices {
		for k := range keys {
			v := keys[k] + "_" + strconv.Itoa(d%(3+k))
			switch {
			case k == deviceTag:
				v = "host_" + strconv.Itoa(d)
			case d%5 == 3 && k == len(keys)-1:
				v = "" // this device lacks the tag: stored as NULL
			}
			tg.vals[d] = append(tg.vals[d], v)
		}
	}
	return tg
}

// cpuSchema is shaped like TSBS cpu-only: tags then ten float fields.
func cpuSchema(name string, devices int) *sources.Schema {
	keys := []string{"hostname", "region", "datacenter"}
	s := &sources.Schema{Measurement: name, DeviceTag: 0, TagKeys: keys, Tags: newTagger(devices, keys, 0)}
	for _, f := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
		"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Float, Decimals: 2})
	}
	return s
}

// massiveSchema is shaped like the massive source's table: two tags and
// columns fields c0, c1, ... of kind.
func massiveSchema(devices, columns int, kind sources.FieldKind) *sources.Schema {
	keys := []string{"device", "group"}
	s := &sources.Schema{Measurement: "massive", DeviceTag: 0, TagKeys: keys, Tags: newTagger(devices, keys, 0)}
	for i := range columns {
		s.Fields = append(s.Fields, sources.Field{Name: "c" + strconv.Itoa(i), Kind: kind})
	}
	return s
}

// mixedSchema has int and float fields, a device tag that is not first,
// and names that need quoting.
func mixedSchema(name string, devices int) *sources.Schema {
	keys := []string{"fleet", "name", "Driver Name"}
	return &sources.Schema{Measurement: name, DeviceTag: 1, TagKeys: keys, Tags: newTagger(devices, keys, 1),
		Fields: []sources.Field{
			{Name: "fuel", Kind: sources.Float},
			{Name: "status", Kind: sources.Int},
			{Name: "load", Kind: sources.Int},
			{Name: "Speed km/h", Kind: sources.Float},
		}}
}

// fill appends rows rows to t: devices round-robin, device d's k-th row
// at base + k*interval, values a function of (device, time, field); every
// seventh value of the second field onwards is null when nulls is set.
func fill(t *sources.Table, devices, from, rows int, base time.Time, nulls bool) {
	s := t.Schema
	for i := from; i < from+rows; i++ {
		d := i % devices
		ts := base.Add(time.Duration(i/devices) * 10 * time.Second).UnixNano()
		t.Device = append(t.Device, uint32(d))
		t.Time = append(t.Time, ts)
		for f, fd := range s.Fields {
			null := nulls && f > 0 && (i+f)%7 == 0
			if null {
				if t.Null[f] == nil {
					t.Null[f] = make([]bool, len(t.Time)-1, cap(t.Time))
				}
			}
			if t.Null[f] != nil {
				t.Null[f] = append(t.Null[f], null)
			}
			if fd.Kind == sources.Int {
				t.Ints[f] = append(t.Ints[f], value(d, ts, f).i)
			} else {
				t.Floats[f] = append(t.Floats[f], value(d, ts, f).f)
			}
		}
	}
}

type val struct {
	f float64
	i int64
}

func value(d int, ts int64, f int) val {
	x := uint64(d)*1_000_003 + uint64(ts/1e9)*31 + uint64(f)*7
	return val{f: float64(x%100000)/100 - 300, i: int64(x%1_000_000) - 500_000}
}

// row is one stored row as text, for comparing what was written with
// what the server holds.
type row struct {
	key  string // device tag value + time
	cols []string
}

// expectRows renders t's rows the way readRows renders stored ones.
func expectRows(t *sources.Table) []row {
	s := t.Schema
	var out []row
	var buf []byte
	for i := range t.Len() {
		var cols []string
		// Independent of pgTime: PostgreSQL keeps microseconds, rounded down.
		us := time.Unix(0, t.Time[i]).UnixMicro()
		cols = append(cols, strconv.FormatInt(us, 10))
		for k := range s.TagKeys {
			buf = s.Tags.AppendTag(buf[:0], t.Device[i], k)
			if len(buf) == 0 {
				cols = append(cols, "NULL")
			} else {
				cols = append(cols, string(buf))
			}
		}
		for f, fd := range s.Fields {
			switch {
			case t.Null[f] != nil && t.Null[f][i]:
				cols = append(cols, "NULL")
			case fd.Kind == sources.Int:
				cols = append(cols, strconv.FormatInt(t.Ints[f][i], 10))
			default:
				cols = append(cols, strconv.FormatUint(math.Float64bits(t.Floats[f][i]), 16))
			}
		}
		buf = s.Tags.AppendTag(buf[:0], t.Device[i], s.DeviceTag)
		out = append(out, row{key: string(buf) + "@" + cols[0], cols: cols})
	}
	return out
}

// readRows reads every row of s's table, rendered like expectRows.
func readRows(t testing.TB, conn *pgx.Conn, s *sources.Schema) []row {
	t.Helper()
	cols := []string{"(extract(epoch from " + quote(timeColumn) + ") * 1000000)::bigint::text"}
	for _, k := range s.TagKeys {
		cols = append(cols, quote(k))
	}
	for _, f := range s.Fields {
		if f.Kind == sources.Int {
			cols = append(cols, quote(f.Name)+"::text")
		} else {
			// The exact bits, so that no float formatting hides a difference.
			cols = append(cols, "to_hex(('x' || encode(float8send("+quote(f.Name)+"), 'hex'))::bit(64)::bigint)")
		}
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + quote(s.Measurement)
	rs, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("cannot read %s: %v", s.Measurement, err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		vals := make([]*string, len(cols))
		dst := make([]any, len(cols))
		for i := range vals {
			dst[i] = &vals[i]
		}
		if err := rs.Scan(dst...); err != nil {
			t.Fatalf("scan %s: %v", s.Measurement, err)
		}
		r := row{}
		for _, v := range vals {
			if v == nil {
				r.cols = append(r.cols, "NULL")
			} else {
				r.cols = append(r.cols, *v)
			}
		}
		r.key = r.cols[1+s.DeviceTag] + "@" + r.cols[0]
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("read %s: %v", s.Measurement, err)
	}
	return out
}

// sameRows fails t unless got and want hold the same rows (any order).
func sameRows(t testing.TB, what string, got, want []row) {
	t.Helper()
	cmp := func(a, b row) int { return strings.Compare(a.key, b.key) }
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows stored, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i].cols, want[i].cols) {
			t.Fatalf("%s: row %d differs:\n got  %q\n want %q", what, i, got[i].cols, want[i].cols)
		}
	}
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// withParams appends query parameters to a URL string.
func withParams(raw string, kv ...string) string {
	var b strings.Builder
	b.WriteString(raw)
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "%s%s=%s", sep, kv[i], strings.ReplaceAll(url.QueryEscape(kv[i+1]), "+", "%20"))
		sep = "&"
	}
	return b.String()
}

func optionsFor(schemas ...*sources.Schema) sinks.Options {
	return sinks.Options{Kind: sources.Series, Workers: 1, Schemas: schemas}
}
