package iot

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

// emitted is a row with the round that emitted it.
type emitted struct {
	rowID
	round int64
}

// byRounds runs every stream with NextRound/FillUntil and returns the rows
// per stream in emission order with their rounds. Each stream must start
// exactly rounds rounds: for a finite data set, its span / INTERVAL steps
// plus a last round that flushes late and buffered readings.
func byRounds(t *testing.T, src sources.Source, parts int, rounds int64) [][]emitted {
	t.Helper()
	s := Unwrap(src)
	var out [][]emitted
	for p := 0; p < parts; p++ {
		st, err := s.OpenStream(p, parts)
		must(t, err)
		b := sources.NewSeriesBatch(s.Schemas())
		var rows []emitted
		var refs []RowRef
		for r := int64(0); ; r++ {
			if err := st.NextRound(); err != nil {
				if !errors.Is(err, sources.ErrDone) {
					t.Fatal(err)
				}
				if r != rounds {
					t.Fatalf("stream ended after %d rounds, want %d", r, rounds)
				}
				break
			}
			b.Reset()
			refs = st.FillUntil(b, math.MaxUint64, refs[:0])
			if len(refs) != b.Len() {
				t.Fatalf("%d refs for %d rows", len(refs), b.Len())
			}
			for _, ref := range refs {
				tb := b.Tables[ref.Table]
				rows = append(rows, emitted{rowID{int(ref.Table), tb.Device[ref.Row], tb.Time[ref.Row]}, r})
			}
		}
		out = append(out, rows)
	}
	return out
}

func TestOutOfOrderFractionAndLateness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		knob     string
		interval string
		frac     float64
		maxLate  time.Duration
	}{
		{"0.05:30s", "10s", 0.05, 30 * time.Second},
		{"20%:1m", "10s", 0.20, time.Minute},
		{"0.1:10s", "10s", 0.1, 10 * time.Second},
	} {
		t.Run(tc.knob, func(t *testing.T) {
			t.Parallel()
			const scale = 200
			src := build(t, "devops", cfg(t, scale, "24h", "OUT_OF_ORDER", tc.knob, "INTERVAL", tc.interval), 7, sources.Shard{})
			var lateRows, maxLate, n int64
			for p := 0; p < 2; p++ {
				st, _ := src.Stream(p, 2)
				b := sources.NewSeriesBatch(src.Schemas())
				last := make([]int64, scale)
				for {
					b.Reset()
					err := st.Fill(b, 5000, 0)
					tb := b.Tables[0]
					for i := 0; i < tb.Len(); i++ {
						d, ts := tb.Device[i], tb.Time[i]
						n++
						if ts < last[d] {
							lateRows++
							maxLate = max(maxLate, last[d]-ts)
						} else {
							last[d] = ts
						}
					}
					if errors.Is(err, sources.ErrDone) {
						break
					}
				}
			}
			if n != scale*8640 {
				t.Fatalf("%d rows, want %d", n, scale*8640)
			}
			frac := float64(lateRows) / float64(n)
			if math.Abs(frac-tc.frac) > 0.1*tc.frac {
				t.Errorf("%.4f of rows arrived out of order, want %.4f ±10%%", frac, tc.frac)
			}
			if d := time.Duration(maxLate); math.Abs(float64(d-tc.maxLate)) > 0.1*float64(tc.maxLate) {
				t.Errorf("max lateness %s, want %s ±10%%", d, tc.maxLate)
			}
		})
	}
}

func TestOfflineDevicesBackfillInBursts(t *testing.T) {
	t.Parallel()
	const frac, scale = 0.1, 200
	const steps = 24 * 360 // 24 h at the default INTERVAL, 10 s
	src := build(t, "devops", cfg(t, scale, "24h", "OFFLINE", "0.1:10m"), 3, sources.Shard{})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() // cfg's START
	interval := int64(10 * time.Second)
	seen := make([]bool, scale*steps)
	var delayed, total int64
	for _, rows := range byRounds(t, src, 2, steps+1) {
		lastRound := map[uint32]int64{}
		for _, e := range rows {
			step := (e.ts - start) / interval
			if e.ts < start || step >= steps || (e.ts-start)%interval != 0 || int(e.dev) >= scale {
				t.Fatalf("row %+v is outside the data set", e.rowID)
			}
			if seen[int64(e.dev)*steps+step] {
				t.Fatalf("row %+v emitted twice", e.rowID)
			}
			seen[int64(e.dev)*steps+step] = true
			total++
			if step > e.round {
				t.Fatalf("row %+v emitted in round %d, before its time", e.rowID, e.round)
			}
			if step < e.round {
				delayed++
				// a burst: the device sent nothing since this reading's round
				if last, ok := lastRound[e.dev]; ok && last >= step && last < e.round {
					t.Fatalf("device %d sent in round %d but its reading of round %d came only in round %d", e.dev, last, step, e.round)
				}
			}
			lastRound[e.dev] = e.round
		}
	}
	if want := int64(scale * steps); total != want { // one table
		t.Fatalf("%d rows, want %d", total, want)
	}
	if f := float64(delayed) / float64(total); math.Abs(f-frac) > 0.1*frac {
		t.Fatalf("%.4f of rows were backfilled, want %.2f ±10%%", f, frac)
	}
}

func TestLateRowsWithinLatenessInRounds(t *testing.T) {
	t.Parallel()
	const steps = 12 * 360 // 12 h at the default INTERVAL, 10 s
	src := build(t, "iot", cfg(t, 30, "12h", "OUT_OF_ORDER", "0.3:1m", "MISSING", "none"), 5, sources.Shard{})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() // cfg's START
	interval := int64(10 * time.Second)
	maxRounds := int64(time.Minute) / interval
	for _, rows := range byRounds(t, src, 3, steps+1) {
		for _, e := range rows {
			lag := e.round - (e.ts-start)/interval
			// rounds 0..steps-1 emit the readings; round steps flushes
			if lag < 0 || (lag > maxRounds && e.round != steps) {
				t.Fatalf("row %+v emitted %d rounds late (max %d)", e.rowID, lag, maxRounds)
			}
		}
	}
}

func TestShardsAreDisjointAndCoverTheDataSet(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := cfg(t, 23, "2h", "OUT_OF_ORDER", "0.1:1m", "OFFLINE", "0.1:10m", "MISSING", "0.05", "COLUMNS", "5")
			whole := collect(t, build(t, name, c, 9, sources.Shard{}), 1, 1000)
			union := map[rowID]uint64{}
			for i := 0; i < 3; i++ {
				part := collect(t, build(t, name, c, 9, sources.Shard{Index: i, Count: 3}), 2, 333)
				for id, h := range part.rows {
					if _, dup := union[id]; dup {
						t.Fatalf("row %+v is in two shards", id)
					}
					if int(id.dev)%3 != i {
						t.Fatalf("shard %d/3 has device %d", i, id.dev)
					}
					union[id] = h
				}
			}
			if len(union) != len(whole.rows) {
				t.Fatalf("shards hold %d rows, the whole data set %d", len(union), len(whole.rows))
			}
			for id, h := range whole.rows {
				if uh, ok := union[id]; !ok || uh != h {
					t.Fatalf("row %+v differs between the shards and the whole data set", id)
				}
			}
		})
	}
}

func TestDeterministicWhateverTheStreams(t *testing.T) {
	t.Parallel()
	c := cfg(t, 20, "2h", "OUT_OF_ORDER", "0.1:1m", "OFFLINE", "0.05:10m", "MISSING", "0.02")
	a := collect(t, build(t, "devops-full", c, 11, sources.Shard{}), 1, 777)
	b := collect(t, build(t, "devops-full", c, 11, sources.Shard{}), 4, 100)
	if len(a.rows) != len(b.rows) {
		t.Fatalf("%d rows vs %d", len(a.rows), len(b.rows))
	}
	for id, h := range a.rows {
		if b.rows[id] != h {
			t.Fatalf("row %+v differs between 1 and 4 streams", id)
		}
	}
	// emission order per device and table (batches interleave tables)
	type devTable struct {
		dev   uint32
		table int
	}
	perDev := func(c *collected) map[devTable][]rowID {
		m := map[devTable][]rowID{}
		for _, o := range c.order {
			for _, id := range o {
				k := devTable{id.dev, id.table}
				m[k] = append(m[k], id)
			}
		}
		return m
	}
	pa, pb := perDev(a), perDev(b)
	for d, seq := range pa {
		for i := range seq {
			if pb[d][i] != seq[i] {
				t.Fatalf("device %d: row %d is %+v with 1 stream, %+v with 4", d, i, seq[i], pb[d][i])
			}
		}
	}
	other := collect(t, build(t, "devops-full", c, 12, sources.Shard{}), 1, 777)
	same := 0
	for id, h := range a.rows {
		if other.rows[id] == h {
			same++
		}
	}
	if same > len(a.rows)/100 {
		t.Fatalf("seeds 11 and 12 share %d of %d rows", same, len(a.rows))
	}
}

func TestTagCardinalityAndValueBounds(t *testing.T) {
	t.Parallel()
	type bound struct{ lo, hi float64 }
	bounds := map[string]bound{
		"usage_user": {0, 100}, "usage_guest_nice": {0, 100}, "used_percent": {0, 100},
		"available_percent": {0, 100}, "latitude": {-90, 90}, "longitude": {-180, 180},
		"elevation": {0, 5000}, "velocity": {0, 100}, "heading": {0, 360}, "grade": {0, 100},
		"fuel_consumption": {0, 50}, "fuel_state": {0, 1}, "current_load": {0, 5000}, "status": {0, 5},
		"active": {0, 100}, "numbackends": {0, 1000}, "c0": {-100, 8191 + 100}, "c4": {-100, 8191 + 100},
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const scale = 250
			src := build(t, name, cfg(t, scale, "1h", "COLUMNS", "5"), 1, sources.Shard{})
			st, err := src.Stream(0, 1)
			must(t, err)
			b := sources.NewSeriesBatch(src.Schemas())
			distinct := make([]map[string]bool, len(src.Schemas()))
			for i := range distinct {
				distinct[i] = map[string]bool{}
			}
			checked := 0
			for {
				b.Reset()
				err := st.Fill(b, 4096, 0)
				for ti, tb := range b.Tables {
					s := tb.Schema
					for i := 0; i < tb.Len(); i++ {
						distinct[ti][string(s.Tags.AppendTag(nil, tb.Device[i], s.DeviceTag))] = true
						for f, fd := range s.Fields {
							bd, ok := bounds[fd.Name]
							if !ok || (tb.Null[f] != nil && tb.Null[f][i]) {
								continue
							}
							v := tb.Floats[f]
							var x float64
							if fd.Kind == sources.Int {
								x = float64(tb.Ints[f][i])
							} else {
								x = v[i]
							}
							if x < bd.lo || x > bd.hi {
								t.Fatalf("%s.%s = %v, outside [%v, %v]", s.Measurement, fd.Name, x, bd.lo, bd.hi)
							}
							checked++
						}
					}
				}
				if errors.Is(err, sources.ErrDone) {
					break
				}
			}
			if checked == 0 {
				t.Fatal("no bounded field checked")
			}
			for ti, d := range distinct {
				if len(d) != scale {
					t.Fatalf("table %s: %d distinct device tags, want %d", src.Schemas()[ti].Measurement, len(d), scale)
				}
			}
		})
	}
}

func TestFloatsHaveTheirDecimals(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"devops-full", "iot"} {
		src := build(t, name, cfg(t, 20, "1h"), 1, sources.Shard{})
		st, _ := src.Stream(0, 1)
		b := sources.NewSeriesBatch(src.Schemas())
		must(t, st.Fill(b, 500, 0))
		for _, tb := range b.Tables {
			for f, fd := range tb.Schema.Fields {
				if fd.Kind != sources.Float {
					continue
				}
				p := math.Pow10(fd.Decimals)
				for _, v := range tb.Floats[f] {
					if r := math.Round(v*p) / p; r != v {
						t.Fatalf("%s.%s = %v has more than %d decimals", tb.Schema.Measurement, fd.Name, v, fd.Decimals)
					}
				}
			}
		}
	}
}

func TestWallClock(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 5
	c.Clock = Wall
	src := build(t, "devops", c, 1, sources.Shard{})
	if _, sized := src.(sources.Sized); sized {
		t.Fatal("an endless source must not be Sized")
	}
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	last := map[uint32]int64{}
	now := int64(1_800_000_000_000_000_000)
	for i := 0; i < 50; i++ {
		b.Reset()
		must(t, st.Fill(b, 7, now))
		tb := b.Tables[0]
		for j := 0; j < tb.Len(); j++ {
			if tb.Time[j] < now {
				t.Fatalf("row stamped %d before the batch time %d", tb.Time[j], now)
			}
			if tb.Time[j] <= last[tb.Device[j]] {
				t.Fatalf("device %d: timestamp %d not after %d", tb.Device[j], tb.Time[j], last[tb.Device[j]])
			}
			last[tb.Device[j]] = tb.Time[j]
		}
		if i%3 == 0 {
			now += int64(time.Second)
		}
	}
}

func TestWallClockFiniteDrains(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 10
	c.Clock = Wall
	must(t, c.End.UnmarshalText([]byte("2000-01-01T00:00:00Z")))
	must(t, c.OutOfOrder.UnmarshalText([]byte("0.5:1h")))
	src := build(t, "devops", c, 1, sources.Shard{})
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	if err := st.Fill(b, 100, time.Now().UnixNano()); !errors.Is(err, sources.ErrDone) {
		t.Fatalf("a wall-clock source past its END returned %v, want ErrDone", err)
	}
}

func TestFillDoesNotAllocate(t *testing.T) {
	for _, name := range Names() {
		c := DefaultConfig()
		c.Scale = 300
		c.Columns = 50
		must(t, c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")))
		must(t, c.OutOfOrder.UnmarshalText([]byte("0.1:1m")))
		must(t, c.Offline.UnmarshalText([]byte("0.1:10m")))
		must(t, c.Missing.UnmarshalText([]byte("0.05")))
		src := build(t, name, c, 1, sources.Shard{})
		st, _ := src.Stream(0, 1)
		b := sources.NewSeriesBatch(src.Schemas())
		fill := func() {
			b.Reset()
			if err := st.Fill(b, 1000, 0); err != nil {
				t.Fatal(err)
			}
		}
		for range 2000 { // past a few offline windows and the late lists' growth
			fill()
		}
		if a := testing.AllocsPerRun(100, fill); a != 0 {
			t.Errorf("%s: Fill allocates %.1f times per batch", name, a)
		}
	}
}

// TestWallClockKnobsLoseNothing runs a wall-clock source with every knob
// until END and checks that each round gave one reading per device.
func TestWallClockKnobsLoseNothing(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := DefaultConfig()
	c.Scale = 13
	c.Clock = Wall
	c.End = End{Set: true, T: start.Add(20 * time.Second)}
	must(t, c.OutOfOrder.UnmarshalText([]byte("0.2:2s")))
	must(t, c.Offline.UnmarshalText([]byte("0.3:1s")))
	must(t, c.Missing.UnmarshalText([]byte("0.1")))
	src := build(t, "iot", c, 1, sources.Shard{})
	st, _ := Unwrap(src).OpenStream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	now := start.UnixNano()
	seen := map[rowID]bool{}
	for i := 0; ; i++ {
		b.Reset()
		err := st.Fill(b, 7, now)
		for ti, tb := range b.Tables {
			for j := 0; j < tb.Len(); j++ {
				id := rowID{ti, tb.Device[j], tb.Time[j]}
				if seen[id] {
					t.Fatalf("row %+v twice", id)
				}
				seen[id] = true
			}
		}
		if errors.Is(err, sources.ErrDone) {
			break
		}
		must(t, err)
		now += int64(50 * time.Millisecond)
		if i > 100000 {
			t.Fatal("no end")
		}
	}
	if want := 13 * 2 * int(st.round); len(seen) != want {
		t.Fatalf("%d rows for %d rounds of 13 trucks, want %d", len(seen), st.round, want)
	}
}

// TestWallClockAllOffline checks that Fill returns when every device is
// offline at the given time instead of spinning through empty rounds.
func TestWallClockAllOffline(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 2
	c.Clock = Wall
	must(t, c.Offline.UnmarshalText([]byte("0.9:1m")))
	src := build(t, "devops", c, 1, sources.Shard{})
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	rows := 0
	for i := 0; i < 100; i++ {
		b.Reset()
		must(t, st.Fill(b, 1000, now))
		rows += b.Len()
		now += int64(time.Minute)
	}
	if rows == 0 {
		t.Fatal("no rows in 100 minutes")
	}
}
