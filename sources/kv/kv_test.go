package kv

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/caarlos0/env/v11"

	"github.com/soakd/soakd/sources"
)

func whole() sources.Shard { return sources.Shard{Index: 0, Count: 1} }

func mustSource(t testing.TB, c Config, shard sources.Shard) *Source {
	t.Helper()
	s, err := newSource(c, 7, shard)
	if err != nil {
		t.Fatalf("newSource: %v", err)
	}
	return s
}

func mustStream(t testing.TB, s sources.Source, part, parts int) sources.Stream {
	t.Helper()
	st, err := s.Stream(part, parts)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return st
}

func TestFNVMatchesYCSB(t *testing.T) {
	t.Parallel()
	for _, n := range []uint64{0, 1, 2, 41, 1000, 99999, 1 << 40} {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], n)
		h := fnv.New64a()
		h.Write(b[:])
		want := int64(h.Sum64())
		if want < 0 {
			want = -want
		}
		if got := fnv64(n); got != uint64(want) {
			t.Errorf("fnv64(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestZeta(t *testing.T) {
	t.Parallel()
	z := newZeta(zipfTheta)
	// YCSB's precomputed zeta for 10^10 items at theta 0.99.
	if got := z.at(scrambledItems); math.Abs(got-26.46902820178302) > 1e-9 {
		t.Errorf("zeta(1e10) = %.14f, want 26.46902820178302", got)
	}
	for _, n := range []uint64{1, 2, 10, 1024, 1025, 5000, 123457} {
		want := 0.0
		for i := uint64(1); i <= n; i++ {
			want += math.Pow(float64(i), -zipfTheta)
		}
		if got := z.at(n); math.Abs(got-want) > 1e-9*want {
			t.Errorf("zeta(%d) = %.12f, want %.12f", n, got, want)
		}
	}
}

func TestParseWorkload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     [sources.NumOps]float64
		err      string
	}{
		{name: "preset", in: "a", want: mix(0.5, 0.5, 0, 0, 0)},
		{name: "preset upper", in: " F ", want: mix(0.5, 0, 0, 0, 0.5)},
		{name: "load", in: "load", want: mix(0, 0, 1, 0, 0)},
		{name: "explicit", in: "read=0.9, update=0.1", want: mix(0.9, 0.1, 0, 0, 0)},
		{name: "all ops", in: "read=0.2,update=0.2,insert=0.2,scan=0.2,readmodifywrite=0.2", want: mix(0.2, 0.2, 0.2, 0.2, 0.2)},
		{name: "unknown preset", in: "g", err: "want load, a, b"},
		{name: "unknown op", in: "read=0.5,delete=0.5", err: `unknown operation "delete"`},
		{name: "sum", in: "read=0.95,update=0.5", err: "sum to 1.45"},
		{name: "negative", in: "read=-0.5,update=1.5", err: "between 0 and 1"},
		{name: "nan", in: "read=NaN", err: "between 0 and 1"},
		{name: "dup", in: "read=0.5,read=0.5", err: "given twice"},
		{name: "no value", in: "read=1,update", err: "not NAME=PROPORTION"},
		{name: "empty", in: "", err: "want load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := ParseWorkload(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseWorkload(%q) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseWorkload(%q): %v", tt.in, err)
			}
			if w.Mix != tt.want {
				t.Errorf("ParseWorkload(%q) = %v, want %v", tt.in, w.Mix, tt.want)
			}
		})
	}
}

func FuzzParseWorkload(f *testing.F) {
	for _, s := range []string{"a", "load", "read=0.5,update=0.5", "scan=0.95,insert=0.05", "rmw=1", "read=1e-1,update=.9", ",=,", "read=0x1p-1,update=0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWorkload(s)
		if err != nil {
			return
		}
		if !w.valid() {
			t.Fatalf("ParseWorkload(%q) accepted an invalid mix %v", s, w.Mix)
		}
		// The printed form parses back to the same mix.
		w2, err := ParseWorkload(w.String())
		if err != nil || w2.Mix != w.Mix {
			t.Fatalf("round trip of %q via %q: %v, %v", s, w.String(), w2.Mix, err)
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	var c Config
	err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{
		"WORKLOAD": "read=0.25,scan=0.75", "DISTRIBUTION": "Uniform", "DATA_TYPE": "zset", "LOAD": "off",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Workload.Mix != mix(0.25, 0, 0, 0.75, 0) || c.Distribution != Uniform || c.DataType != sources.DataTypeZSet || c.Load != LoadOff {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var d Config
	if err := env.ParseWithOptions(&d, env.Options{Environment: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	if def := DefaultConfig(); d != def {
		t.Fatalf("env defaults %+v differ from DefaultConfig %+v", d, def)
	}
	for k, v := range map[string]string{"WORKLOAD": "x", "DISTRIBUTION": "pareto", "DATA_TYPE": "list", "LOAD": "maybe"} {
		var c Config
		err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{k: v}})
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("%s=%s: error %v, want one naming the value", k, v, err)
		}
	}
}

// Shape hands the sink DATA_TYPE, in its canonical lower case, and
// KEY_PREFIX; the load source of WORKLOAD=load has it too.
func TestShape(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.DataType, c.KeyPrefix = "ZSet", "usertable/"
	want := sources.KVShape{DataType: sources.DataTypeZSet, KeyPrefix: "usertable/"}
	for _, w := range []string{"a", "load"} {
		c.Workload, _ = ParseWorkload(w)
		src, err := New(c, 1, whole())
		if err != nil {
			t.Fatal(err)
		}
		sh, ok := src.(sources.Shaped)
		if !ok {
			t.Fatalf("WORKLOAD=%s: %T is not a sources.Shaped", w, src)
		}
		if got := sh.Shape(); got != want {
			t.Errorf("WORKLOAD=%s: Shape() = %+v, want %+v", w, got, want)
		}
	}
	// A workload that scans says so: the sink keeps its index for it.
	c.Workload, _ = ParseWorkload("e")
	src, err := New(c, 1, whole())
	if err != nil {
		t.Fatal(err)
	}
	if got := src.(sources.Shaped).Shape(); !got.Scans {
		t.Errorf("WORKLOAD=e: Shape() = %+v, want Scans", got)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Records = 0
	c.Fields = 0
	c.FieldLength = -1
	c.DataType = "list"
	c.ScanLength = 0
	c.Load = "x"
	c.Distribution = Hotspot
	c.HotspotData = 1
	c.Workload = Workload{}
	err := c.Validate()
	want := []string{"RECORDS", "FIELDS", "FIELD_LENGTH", "DATA_TYPE", "SCAN_LENGTH", "LOAD", "HOTSPOT_DATA", "WORKLOAD"}
	got := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *sources.SettingError
		if !errors.As(e, &se) {
			t.Fatalf("%v is not a *sources.SettingError", e)
		}
		got[se.Setting] = true
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no error for %s in %v", w, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	big := DefaultConfig()
	big.Fields, big.FieldLength = 1000, 1<<20
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "per record") {
		t.Errorf("huge record accepted: %v", err)
	}
	if _, err := New(DefaultConfig(), 1, sources.Shard{Index: 5, Count: 8}); err != nil {
		t.Errorf("shard 5/8: %v", err)
	}
	for _, sh := range []sources.Shard{{Index: 2, Count: 2}, {Index: 5, Count: 2}, {Index: -1, Count: 2}, {Index: 0, Count: -1}} {
		var se *sources.SettingError
		if _, err := New(DefaultConfig(), 1, sh); !errors.As(err, &se) || se.Setting != "SHARD" {
			t.Errorf("shard %+v: error %v, want one naming SHARD", sh, err)
		}
	}
	// A set or sorted set holds each member once: values too short to
	// carry their field's tag could be equal.
	for _, tc := range []struct {
		dt     sources.DataType
		length int
		ok     bool
	}{{"set", 1, false}, {"zset", minTagged - 1, false}, {"zset", minTagged, true}, {"hash", 1, true}, {"string", 1, true}} {
		c := DefaultConfig()
		c.DataType, c.FieldLength = tc.dt, tc.length
		if err := c.Validate(); (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "FIELD_LENGTH") {
			t.Errorf("DATA_TYPE=%s FIELD_LENGTH=%d: %v, want ok %v", tc.dt, tc.length, err, tc.ok)
		}
	}
	small := DefaultConfig()
	small.Records = 3
	if _, err := New(small, 1, sources.Shard{Index: 5, Count: 8}); err == nil || !strings.Contains(err.Error(), "RECORDS") {
		t.Errorf("3 records in 8 shards: %v", err)
	}
}

// fill runs n ops through one stream and returns the batches' ops and keys.
func fillN(t testing.TB, st sources.Stream, b *sources.Batch, n, pipeline int, each func(b *sources.Batch)) {
	t.Helper()
	for done := 0; done < n; done += pipeline {
		b.Reset()
		if err := st.Fill(b, min(pipeline, n-done), 0); err != nil {
			t.Fatalf("Fill: %v", err)
		}
		each(b)
	}
}

func TestProportions(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"a", "b", "d", "e", "f", "read=0.2,update=0.2,insert=0.2,scan=0.2,rmw=0.2"} {
		t.Run(w, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			c.Workload, _ = ParseWorkload(w)
			s := mustSource(t, c, whole())
			st := mustStream(t, s, 0, 1)
			var count [sources.NumOps]int
			const n = 100_000
			fillN(t, st, s.NewBatch(), n, 16, func(b *sources.Batch) {
				for _, op := range b.Ops {
					count[op.Op]++
				}
			})
			for op := range count {
				got := float64(count[op]) / n
				if want := c.Workload.Mix[op]; math.Abs(got-want) > 0.02 {
					t.Errorf("%s: %.4f of ops, want %.4f ± 0.02", sources.Op(op), got, want)
				}
			}
		})
	}
}

func TestOpShapes(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Workload, _ = ParseWorkload("read=0.2,update=0.2,insert=0.2,scan=0.2,rmw=0.2")
	c.Fields, c.FieldLength, c.ScanLength = 4, 7, 5
	c.ReadAll = false
	c.KeyPrefix = "t:"
	s := mustSource(t, c, whole())
	st := mustStream(t, s, 0, 1)
	b := s.NewBatch()
	if b.Fields != 4 || b.FieldLength != 7 {
		t.Fatalf("NewBatch fields %d x %d", b.Fields, b.FieldLength)
	}
	fillN(t, st, b, 5000, 32, func(b *sources.Batch) {
		for i := range b.Ops {
			op := &b.Ops[i]
			key := string(b.Key(op))
			if want := "t:user" + strconv.FormatUint(fnv64(op.Record), 10); key != want {
				t.Fatalf("key %q for record %d, want %q", key, op.Record, want)
			}
			val := b.Value(op)
			switch op.Op {
			case sources.OpInsert:
				if op.Field != -1 || len(val) != 28 {
					t.Fatalf("insert field %d value %d bytes", op.Field, len(val))
				}
			case sources.OpUpdate, sources.OpRMW:
				if op.Field < 0 || op.Field >= 4 || len(val) != 7 {
					t.Fatalf("%s field %d value %d bytes", op.Op, op.Field, len(val))
				}
			case sources.OpRead, sources.OpScan:
				if op.Field < 0 || op.Field >= 4 || len(val) != 0 {
					t.Fatalf("%s field %d value %d bytes", op.Op, op.Field, len(val))
				}
				if op.Op == sources.OpScan && (op.ScanLen < 1 || op.ScanLen > 5) {
					t.Fatalf("scan length %d", op.ScanLen)
				}
			}
			for _, ch := range val {
				if ch < '!' || ch > '~' {
					t.Fatalf("value byte %q is not printable", ch)
				}
			}
		}
	})
}

// keyCounts counts the records read by n ops of a read-only workload.
func keyCounts(t *testing.T, dist Distribution, records int64, n int) map[uint64]int {
	c := DefaultConfig()
	c.Workload, _ = ParseWorkload("c")
	c.Distribution = dist
	c.Records = records
	s := mustSource(t, c, whole())
	st := mustStream(t, s, 0, 1)
	counts := map[uint64]int{}
	fillN(t, st, s.NewBatch(), n, 64, func(b *sources.Batch) {
		for _, op := range b.Ops {
			if op.Record >= uint64(records) {
				t.Fatalf("record %d out of range", op.Record)
			}
			counts[op.Record]++
		}
	})
	return counts
}

func topShare(counts map[uint64]int, k, n int) float64 {
	v := make([]int, 0, len(counts))
	for _, c := range counts {
		v = append(v, c)
	}
	// partial selection sort is enough for small k
	sum := 0
	for i := 0; i < k && i < len(v); i++ {
		m := i
		for j := i + 1; j < len(v); j++ {
			if v[j] > v[m] {
				m = j
			}
		}
		v[i], v[m] = v[m], v[i]
		sum += v[i]
	}
	return float64(sum) / float64(n)
}

func TestZipfianHotKeys(t *testing.T) {
	t.Parallel()
	const n = 200_000
	zc := keyCounts(t, Zipfian, 100_000, n)
	uc := keyCounts(t, Uniform, 100_000, n)
	// YCSB's scrambled zipfian: rank i has probability (i+1)^-0.99 / zeta(1e10),
	// so the hottest record gets 1/26.47 = 3.78 % of the operations and the
	// ten hottest 11.1 %. Uniform over 100k records gives each ~0.001 %.
	z := newZeta(zipfTheta)
	want1 := 1 / z.at(scrambledItems)
	want10 := z.at(10) / z.at(scrambledItems)
	if got := topShare(zc, 1, n); math.Abs(got-want1) > 0.15*want1 {
		t.Errorf("zipfian: hottest record has %.4f of ops, want %.4f", got, want1)
	}
	if got := topShare(zc, 10, n); math.Abs(got-want10) > 0.1*want10 {
		t.Errorf("zipfian: 10 hottest records have %.4f of ops, want %.4f", got, want10)
	}
	if got := topShare(uc, 10, n); got > 0.002 {
		t.Errorf("uniform: 10 most read records have %.4f of ops, want < 0.002", got)
	}
	if len(uc) < 80_000 {
		t.Errorf("uniform touched %d distinct records of 100000 in %d reads", len(uc), n)
	}
}

// YCSB scrambles its zipfian: rank i is hashed before it is taken modulo
// the record count, so the hot records are spread over the key space
// instead of being records 0, 1, 2, ... (which would put the hottest data
// on one shard of a range-partitioned store). Unscrambled, the 10
// lowest-numbered records would be the 10 hottest, with
// zeta(10)/zeta(1e10) = 11.1 % of the operations, and the 20 hottest would
// all lie in the first tenth of the range. Scrambled, the 10
// lowest-numbered records get about their uniform share, 10/100000 of the
// operations, and 20 hot records placed at random fill at least 5 of the
// 10 tenths of the range but with a chance below 1e-5.
func TestZipfianScrambledSpread(t *testing.T) {
	t.Parallel()
	const n, records = 200_000, 100_000
	counts := keyCounts(t, Zipfian, records, n)
	low := 0
	for r := range uint64(10) {
		low += counts[r]
	}
	if got := float64(low) / n; got > 0.01 {
		t.Errorf("records 0..9 have %.4f of ops, want < 0.01: the hottest records are the lowest-numbered ones", got)
	}
	hot := make([]uint64, 0, len(counts))
	for r := range counts {
		hot = append(hot, r)
	}
	slices.SortFunc(hot, func(a, b uint64) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	hot = hot[:20]
	tenths := map[uint64]bool{}
	for _, r := range hot {
		tenths[r*10/records] = true
	}
	if len(tenths) < 5 {
		t.Errorf("the 20 hottest records %v fall in %d tenths of the %d records, want >= 5", hot, len(tenths), records)
	}
	if hot[0] == 0 {
		t.Errorf("the hottest record is record 0")
	}
}

func TestHotspot(t *testing.T) {
	t.Parallel()
	const n = 100_000
	counts := keyCounts(t, Hotspot, 10_000, n)
	hot := 0
	for r, c := range counts {
		if r < 2000 { // the first 20 % of the indexes
			hot += c
		}
	}
	if got := float64(hot) / n; math.Abs(got-0.8) > 0.02 {
		t.Errorf("hotspot: %.3f of ops on the hot 20 %%, want 0.8", got)
	}
}

func TestLatestFollowsInserts(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Workload, _ = ParseWorkload("d")
	c.Records = 1000
	s := mustSource(t, c, whole())
	if s.dist != Latest {
		t.Fatalf("workload d uses %s, want latest", s.dist)
	}
	st := mustStream(t, s, 0, 1)
	b := s.NewBatch()
	var maxInserted uint64
	reads, recent := 0, 0
	fillN(t, st, b, 50_000, 10, func(b *sources.Batch) {
		// The records present when the batch was filled: its own inserts
		// are still pending.
		present := s.present()
		for _, op := range b.Ops {
			switch op.Op {
			case sources.OpInsert:
				maxInserted = max(maxInserted, op.Record)
			case sources.OpRead:
				reads++
				if op.Record >= present {
					t.Fatalf("read record %d, only %d present", op.Record, present)
				}
				if op.Record+100 >= present {
					recent++
				}
			}
		}
	})
	if maxInserted < 1000+2000 {
		t.Fatalf("inserts reached record %d only", maxInserted)
	}
	// zipfian over recency: the 100 newest records get most reads
	// (zeta(100)/zeta(~3500) = 0.62).
	if got := float64(recent) / float64(reads); got < 0.5 {
		t.Errorf("latest: %.3f of reads on the 100 newest records, want > 0.5", got)
	}
}

func TestShardsDisjointAndLoadExact(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Records = 1001
	seen := map[string]int{}
	for i := range 3 {
		src, err := New(c, 9, sources.Shard{Index: i, Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		load, probe, err := src.(sources.Preloader).Preload()
		if err != nil || load == nil || probe == nil {
			t.Fatalf("Preload: %v %v", load, err)
		}
		total := load.(sources.Sized).Total()
		got := 0
		for part := range 4 {
			st := mustStream(t, load, part, 4)
			b := src.(sources.Batcher).NewBatch()
			for {
				b.Reset()
				err := st.Fill(b, 37, 0)
				for k := range b.Ops {
					op := &b.Ops[k]
					if op.Op != sources.OpInsert || op.Record%3 != uint64(i) || op.Record >= 1001 {
						t.Fatalf("shard %d load op %+v", i, op)
					}
					seen[string(b.Key(op))]++
					got++
				}
				if errors.Is(err, sources.ErrDone) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if int64(got) != total {
			t.Errorf("shard %d: load inserted %d records, Total says %d", i, got, total)
		}
		// Run-phase reads stay in the shard.
		st := mustStream(t, src, 0, 1)
		b := src.(sources.Batcher).NewBatch()
		fillN(t, st, b, 2000, 20, func(b *sources.Batch) {
			for _, op := range b.Ops {
				if op.Record%3 != uint64(i) {
					t.Fatalf("shard %d op on record %d", i, op.Record)
				}
			}
		})
		b.Reset()
		probe(b)
		if want := min(int(total), probeSamples); len(b.Ops) != want {
			t.Errorf("shard %d: probe has %d ops, want %d", i, len(b.Ops), want)
		}
	}
	if len(seen) != 1001 {
		t.Errorf("loads of 3 shards inserted %d distinct keys, want 1001", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("key %s inserted %d times", k, n)
		}
	}
}

func TestConcurrentInsertsUnique(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Workload, _ = ParseWorkload("read=0.5,insert=0.5")
	c.Distribution = Uniform
	c.Records = 100
	s := mustSource(t, c, sources.Shard{Index: 1, Count: 2})
	const workers = 8
	var mu sync.Mutex
	inserted := map[uint64]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		st := mustStream(t, s, w, workers)
		wg.Go(func() {
			b := s.NewBatch()
			mine := []uint64{}
			for range 500 {
				b.Reset()
				_ = st.Fill(b, 8, 0)
				for _, op := range b.Ops {
					if op.Op == sources.OpInsert {
						mine = append(mine, op.Record)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range mine {
				if inserted[r] || r%2 != 1 || r < 100 {
					t.Errorf("insert of record %d (duplicate, other shard or loaded)", r)
				}
				inserted[r] = true
			}
		})
	}
	wg.Wait()
	if len(inserted) < workers*500*8/3 {
		t.Errorf("only %d inserts", len(inserted))
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	run := func() []byte {
		s := mustSource(t, DefaultConfig(), whole())
		st := mustStream(t, s, 1, 3)
		b := s.NewBatch()
		var out []byte
		fillN(t, st, b, 1000, 50, func(b *sources.Batch) {
			out = append(out, b.Keys...)
			out = append(out, b.Values...)
		})
		return out
	}
	if a, b := run(), run(); string(a) != string(b) {
		t.Error("two runs with the same seed differ")
	}
}

func TestFillDoesNotAllocate(t *testing.T) {
	for _, w := range []string{"a", "d", "e", "f", "load"} {
		c := DefaultConfig()
		c.Workload, _ = ParseWorkload(w)
		c.Records = 1 << 40
		src, err := New(c, 1, whole())
		if err != nil {
			t.Fatal(err)
		}
		st := mustStream(t, src, 0, 1)
		b := src.(sources.Batcher).NewBatch()
		for range 10 {
			b.Reset()
			_ = st.Fill(b, 64, 0)
		}
		allocs := testing.AllocsPerRun(200, func() {
			b.Reset()
			_ = st.Fill(b, 64, 0)
		})
		if allocs != 0 {
			t.Errorf("workload %s: %v allocs per Fill of 64 ops", w, allocs)
		}
	}
}

func BenchmarkFill(b *testing.B) {
	for _, tc := range []struct {
		w    string
		dist Distribution
	}{
		{"a", Zipfian}, {"a", Uniform}, {"c", Zipfian}, {"c", Uniform},
		{"d", Latest}, {"d", Uniform}, {"e", Zipfian}, {"e", Uniform},
	} {
		b.Run(tc.w+"/"+string(tc.dist), func(b *testing.B) {
			c := DefaultConfig()
			c.Workload, _ = ParseWorkload(tc.w)
			c.Distribution = tc.dist
			src, err := New(c, 1, whole())
			if err != nil {
				b.Fatal(err)
			}
			st, _ := src.Stream(0, 1)
			bt := src.(sources.Batcher).NewBatch()
			b.ReportAllocs()
			const pipeline = 16
			for b.Loop() {
				bt.Reset()
				_ = st.Fill(bt, pipeline, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pipeline), "ns/op-kv")
		})
	}
}
