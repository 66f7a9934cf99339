package iot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

func cfg(t testing.TB, scale int, span string, knobs ...string) Config {
	t.Helper()
	c := DefaultConfig()
	c.Scale = scale
	must(t, c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")))
	must(t, c.End.UnmarshalText([]byte("+"+span)))
	for i := 0; i+1 < len(knobs); i += 2 {
		var err error
		switch knobs[i] {
		case "OUT_OF_ORDER":
			err = c.OutOfOrder.UnmarshalText([]byte(knobs[i+1]))
		case "OFFLINE":
			err = c.Offline.UnmarshalText([]byte(knobs[i+1]))
		case "MISSING":
			err = c.Missing.UnmarshalText([]byte(knobs[i+1]))
		case "INTERVAL":
			c.Interval, err = time.ParseDuration(knobs[i+1])
		case "COLUMNS":
			_, err = fmt.Sscan(knobs[i+1], &c.Columns)
		case "COLUMN_TYPE":
			err = c.ColumnType.UnmarshalText([]byte(knobs[i+1]))
		case "CHURN":
			err = c.Churn.UnmarshalText([]byte(knobs[i+1]))
		default:
			t.Fatalf("unknown knob %s", knobs[i])
		}
		must(t, err)
	}
	return c
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rowID identifies a row of a data set.
type rowID struct {
	table int
	dev   uint32
	ts    int64
}

// collected is every row of a data set with a hash of its values and
// tags, in emission order per stream.
type collected struct {
	rows    map[rowID]uint64
	order   [][]rowID // per stream
	values  int64
	nulls   int64
	n       int64
	batches int
}

func rowHash(t *sources.Table, i int) uint64 {
	var buf []byte
	for k := range t.Schema.TagKeys {
		buf = t.Schema.Tags.AppendTag(buf, t.Device[i], k)
		buf = append(buf, 0)
	}
	for f, fd := range t.Schema.Fields {
		switch {
		case t.Null[f] != nil && t.Null[f][i]:
			buf = append(buf, 'N')
		case fd.Kind == sources.Int:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(t.Ints[f][i]))
		default:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(t.Floats[f][i]))
		}
	}
	h := fnv.New64a()
	h.Write(buf)
	return h.Sum64()
}

// collect runs every stream of src to the end with batches of batch rows.
func collect(t testing.TB, src sources.Source, parts, batch int) *collected {
	t.Helper()
	c := &collected{rows: map[rowID]uint64{}}
	for p := 0; p < parts; p++ {
		st, err := src.Stream(p, parts)
		must(t, err)
		b := sources.NewSeriesBatch(src.Schemas())
		var order []rowID
		for {
			b.Reset()
			err := st.Fill(b, batch, 0)
			if err != nil && !errors.Is(err, sources.ErrDone) {
				t.Fatal(err)
			}
			if b.Len() > batch {
				t.Fatalf("Fill appended %d rows, max %d", b.Len(), batch)
			}
			c.batches++
			c.values += int64(b.NumValues)
			for ti, tb := range b.Tables {
				for i := 0; i < tb.Len(); i++ {
					id := rowID{ti, tb.Device[i], tb.Time[i]}
					if _, dup := c.rows[id]; dup {
						t.Fatalf("row %+v emitted twice", id)
					}
					c.rows[id] = rowHash(tb, i)
					order = append(order, id)
					c.n++
					nn := 0
					for f := range tb.Schema.Fields {
						if tb.Null[f] != nil {
							if len(tb.Null[f]) != tb.Len() {
								t.Fatalf("table %s: len(Null[%d]) = %d, rows %d", tb.Schema.Measurement, f, len(tb.Null[f]), tb.Len())
							}
							if tb.Null[f][i] {
								nn++
							}
						}
					}
					if nn == len(tb.Schema.Fields) {
						t.Fatalf("row %+v has every field null", id)
					}
					c.nulls += int64(nn)
				}
			}
			if errors.Is(err, sources.ErrDone) {
				break
			}
		}
		if err := st.Fill(b, batch, 0); !errors.Is(err, sources.ErrDone) {
			t.Fatalf("Fill after ErrDone returned %v", err)
		}
		c.order = append(c.order, order)
	}
	return c
}

func build(t testing.TB, name string, c Config, seed uint64, shard sources.Shard) sources.Source {
	t.Helper()
	src, err := New(name, c, seed, shard)
	must(t, err)
	return src
}

func fieldsPerReading(src sources.Source) int {
	n := 0
	for _, s := range src.Schemas() {
		n += len(s.Fields)
	}
	return n
}

func TestCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, source, span string
		scale              int
		knobs              []string
		rows               int64
	}{
		{"devops scale 100 6h", "devops", "6h", 100, nil, 216_000},
		{"devops-full", "devops-full", "1h", 10, nil, 10 * 360 * 9},
		{"iot with its default irregularity", "iot", "1h", 10, nil, 10 * 360 * 2},
		{"iot without irregularity", "iot", "1h", 10, []string{"OUT_OF_ORDER", "none", "MISSING", "none"}, 10 * 360 * 2},
		{"massive", "massive", "10m", 1000, []string{"COLUMNS", "100"}, 1000 * 60},
		{"massive float", "massive", "10m", 100, []string{"COLUMNS", "7", "COLUMN_TYPE", "float"}, 100 * 60},
		{"interval 1m odd span", "devops", "1h30s", 7, []string{"INTERVAL", "1m"}, 7 * 60},
		{"devops all knobs", "devops", "6h", 50, []string{"OUT_OF_ORDER", "0.1:1m", "OFFLINE", "0.05:10m", "MISSING", "0.05"}, 50 * 2160},
		{"devops-full all knobs", "devops-full", "2h", 7, []string{"OUT_OF_ORDER", "0.2:30s", "OFFLINE", "0.1:5m", "MISSING", "0.1"}, 7 * 720 * 9},
		{"massive all knobs", "massive", "1h", 40, []string{"COLUMNS", "3", "OUT_OF_ORDER", "0.1:30s", "OFFLINE", "0.1:2m", "MISSING", "0.5"}, 40 * 360},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := build(t, tc.source, cfg(t, tc.scale, tc.span, tc.knobs...), 42, sources.Shard{})
			sz, ok := src.(sources.Sized)
			if !ok {
				t.Fatalf("finite source %T is not sources.Sized", src)
			}
			if sz.Total() != tc.rows {
				t.Fatalf("Total() = %d, want %d", sz.Total(), tc.rows)
			}
			c := collect(t, src, 3, 997)
			if c.n != tc.rows {
				t.Fatalf("generated %d rows, want %d", c.n, tc.rows)
			}
			perReading := int64(fieldsPerReading(src))
			wantValues := tc.rows/int64(len(src.Schemas()))*perReading - c.nulls
			if c.values != wantValues {
				t.Fatalf("NumValues sum = %d, want %d (nulls %d)", c.values, wantValues, c.nulls)
			}
			// every (table, device, step) exactly once
			cf := Unwrap(src).cfg
			start := cf.Start.T.UnixNano()
			steps := Unwrap(src).Steps()
			for id := range c.rows {
				off := id.ts - start
				if off < 0 || off%int64(cf.Interval) != 0 || off/int64(cf.Interval) >= steps || int(id.dev) >= tc.scale {
					t.Fatalf("row %+v is outside the data set", id)
				}
			}
		})
	}
}

func TestDevopsMatchesTSBSValueCount(t *testing.T) {
	t.Parallel()
	src := build(t, "devops", cfg(t, 100, "24h"), 123, sources.Shard{})
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	var rows, values int
	for {
		b.Reset()
		err := st.Fill(b, 10000, 0)
		rows += b.Len()
		values += b.NumValues
		if errors.Is(err, sources.ErrDone) {
			break
		}
		must(t, err)
	}
	if rows != 864_000 || values != 8_640_000 {
		t.Fatalf("rows %d values %d, want 864000 and 8640000 (TSBS cpu-only scale 100, 1 day at 10s)", rows, values)
	}
}

func TestPrecomputedTagsMatchComputed(t *testing.T) {
	for _, name := range Names() {
		small := build(t, name, cfg(t, 300, "1h", "COLUMNS", "3"), 5, sources.Shard{})
		big := build(t, name, cfg(t, precomputedMax+1, "1h", "COLUMNS", "3"), 5, sources.Shard{})
		for i, s := range small.Schemas() {
			st, ok := s.Tags.(StringTagger)
			if !ok {
				t.Fatalf("%s: scale 300 tags are not precomputed", name)
			}
			if _, ok := big.Schemas()[i].Tags.(StringTagger); ok {
				t.Fatalf("%s: scale %d tags are precomputed", name, precomputedMax+1)
			}
			for d := uint32(0); d < 300; d++ {
				for k := range s.TagKeys {
					want := string(big.Schemas()[i].Tags.AppendTag(nil, d, k))
					if got := st.TagString(d, k); got != want {
						t.Fatalf("%s.%s device %d: precomputed %q, computed %q", s.Measurement, s.TagKeys[k], d, got, want)
					}
					if got := string(s.Tags.AppendTag(nil, d, k)); got != want {
						t.Fatalf("%s.%s device %d: AppendTag %q, computed %q", s.Measurement, s.TagKeys[k], d, got, want)
					}
				}
			}
		}
		var st StringTagger = small.Schemas()[0].Tags.(StringTagger)
		if a := testing.AllocsPerRun(100, func() { _ = st.TagString(7, 0) }); a != 0 {
			t.Fatalf("TagString allocates %.0f times", a)
		}
	}
}

// A field said to be a counter only grows, device by device, and grows
// over an hour; TSBS's counters (disk reads, bytes received) are said
// to be ones, and no field of the cpu-only devops data set is.
func TestCounterFields(t *testing.T) {
	t.Parallel()
	counters := map[string]int{}
	for _, name := range Names() {
		src := build(t, name, cfg(t, 5, "1h", "OUT_OF_ORDER", "none", "MISSING", "none", "COLUMNS", "3"), 9, sources.Shard{})
		st, err := src.Stream(0, 1)
		must(t, err)
		type key struct {
			meas string
			f    int
			dev  uint32
		}
		last, grew := map[key]float64{}, map[key]bool{}
		b := sources.NewSeriesBatch(src.Schemas())
		for done := false; !done; {
			b.Reset()
			if err := st.Fill(b, 1000, 0); errors.Is(err, sources.ErrDone) {
				done = true
			} else {
				must(t, err)
			}
			for _, tb := range b.Tables {
				for f, fd := range tb.Schema.Fields {
					if !fd.Counter {
						continue
					}
					for i := range tb.Len() {
						v, _ := tb.Float(f, i)
						k := key{tb.Schema.Measurement, f, tb.Device[i]}
						if p, ok := last[k]; ok && v < p {
							t.Fatalf("%s: %s %s of device %d went from %v to %v", name, tb.Schema.Measurement, fd.Name, k.dev, p, v)
						} else if ok && v > p {
							grew[k] = true
						}
						last[k] = v
					}
				}
			}
		}
		for k := range last {
			if !grew[k] {
				t.Errorf("%s: counter %s field %d of device %d never grew", name, k.meas, k.f, k.dev)
			}
		}
		for _, s := range src.Schemas() {
			for _, fd := range s.Fields {
				if fd.Counter {
					counters[name+" "+s.Measurement+" "+fd.Name]++
				}
			}
		}
	}
	for _, c := range []string{"devops-full diskio reads", "devops-full net bytes_recv"} {
		if counters[c] == 0 {
			t.Errorf("%s is not said to be a counter", c)
		}
	}
	for c := range counters {
		if strings.HasPrefix(c, "devops ") {
			t.Errorf("%s is said to be a counter", c)
		}
	}
}
