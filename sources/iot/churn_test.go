package iot

import (
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

func TestChurnParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Churn{
		"":            {},
		"none":        {},
		"0%/10m":      {},
		"10%/10m":     {PerMillion: 100_000, Every: 10 * time.Minute},
		"0.1/10m":     {PerMillion: 100_000, Every: 10 * time.Minute},
		" 5% / 1h ":   {PerMillion: 50_000, Every: time.Hour},
		"100%:30s":    {PerMillion: 1_000_000, Every: 30 * time.Second},
		"0.0001%/1m":  {PerMillion: 1, Every: time.Minute},
		"2.5%/1m30s":  {PerMillion: 25_000, Every: 90 * time.Second},
		"1e-2/10m0s":  {PerMillion: 10_000, Every: 10 * time.Minute},
		"12.5%/10m0s": {PerMillion: 125_000, Every: 10 * time.Minute},
	} {
		var c Churn
		if err := c.UnmarshalText([]byte(in)); err != nil || c != want {
			t.Errorf("CHURN %q = %+v, %v; want %+v", in, c, err, want)
			continue
		}
		text, _ := c.MarshalText()
		var back Churn
		if err := back.UnmarshalText(text); err != nil || back != c {
			t.Errorf("CHURN %q prints as %q, which parses to %+v, %v", in, text, back, err)
		}
	}
	for _, in := range []string{"10%", "10%/", "/10m", "10%/0s", "10%/-1m", "110%/10m", "x/10m", "10%/10", "0.00001%/1m", "10%/9000h"} {
		var c Churn
		if err := c.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("CHURN %q accepted as %+v", in, c)
		}
	}
	c := DefaultConfig()
	c.Churn = Churn{PerMillion: 100_000, Every: 5 * time.Second}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "CHURN") || !strings.Contains(err.Error(), "INTERVAL") {
		t.Errorf("CHURN shorter than INTERVAL: %v", err)
	}
	c.Churn.Every = 10 * time.Second
	if err := c.Validate(); err != nil {
		t.Errorf("CHURN of one INTERVAL: %v", err)
	}
}

// Settings whose churn would use up the 32-bit device numbers within the
// data set (or, endless, within 30 days of data time) are refused, naming
// CHURN: at SCALE 10,000,000 one slot has 429 numbers, 428 replacements,
// which 100%/10s makes in 4280 s.
func TestChurnRefusedBeforeDeviceNumbersComeRound(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 10_000_000
	c.Churn = Churn{PerMillion: 1_000_000, Every: 10 * time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "CHURN") || !strings.Contains(err.Error(), "1h11m20s") {
		t.Errorf("endless, numbers come round after 71 min: %v", err)
	}
	c.End = End{Set: true, Rel: time.Hour}
	if err := c.Validate(); err != nil {
		t.Errorf("a data set of an hour, numbers come round after 71 min: %v", err)
	}
	c.End = End{Set: true, Rel: 72 * time.Minute}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "CHURN") {
		t.Errorf("a data set of 72 min, numbers come round after 71 min: accepted")
	}
	c = DefaultConfig() // SCALE 100: 42,949,672 numbers a slot
	c.Churn = Churn{PerMillion: 1_000_000, Every: 10 * time.Second}
	if err := c.Validate(); err != nil {
		t.Errorf("SCALE 100, 100%%/10s, endless (13 years): %v", err)
	}
}

// identityOf is the churn schedule written out on its own, from the
// settings: slots are replaced round robin, floor(e × scale × share)
// replacements after e whole churn intervals, a slot's k-th replacement
// taking the number slot + k × scale.
func identityOf(slot, scale, perMillion int64, every, sinceStart time.Duration) uint32 {
	e := int64(sinceStart / every)
	done := e * scale * perMillion / 1_000_000
	k := int64(0)
	for m := slot; m < done; m += scale {
		k++
	}
	return uint32(slot + k*scale)
}

// Every row carries the device the schedule says held its slot at its
// time, whatever the streams, and a finite data set keeps its rows and
// readings (replaced devices send what they still hold), with exactly
// scale + floor(e × scale × share) devices over e churn intervals.
func TestChurnSchedule(t *testing.T) {
	t.Parallel()
	const scale = 10
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, source, churn string
		ppm                 int64
		every               time.Duration
		knobs               []string
	}{
		{"devops", "devops", "20%/1m", 200_000, time.Minute, nil},
		{"devops-knobs", "devops", "15%/2m", 150_000, 2 * time.Minute, []string{"OUT_OF_ORDER", "0.2:40s", "OFFLINE", "0.2:1m", "MISSING", "0.1"}},
		{"iot", "iot", "100%/3m", 1_000_000, 3 * time.Minute, nil},
		{"massive", "massive", "5%/1m", 50_000, time.Minute, []string{"COLUMNS", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			knobs := append([]string{"CHURN", tc.churn}, tc.knobs...)
			src := build(t, tc.source, cfg(t, scale, "20m", knobs...), 5, sources.Shard{})
			plain := build(t, tc.source, cfg(t, scale, "20m", tc.knobs...), 5, sources.Shard{})
			one := collect(t, src, 1, 1000)
			many := collect(t, src, 3, 7)
			if len(one.rows) != len(many.rows) {
				t.Fatalf("1 stream: %d rows, 3 streams: %d", len(one.rows), len(many.rows))
			}
			for id, h := range one.rows {
				if many.rows[id] != h {
					t.Fatalf("row %+v differs between 1 and 3 streams", id)
				}
			}
			if want := plain.(sources.Sized).Total(); one.n != want || src.(sources.Sized).Total() != want {
				t.Fatalf("%d rows (Total %d), without churn %d", one.n, src.(sources.Sized).Total(), want)
			}
			devices := map[uint32]bool{}
			var lastTs int64
			for id := range one.rows {
				devices[id.dev] = true
				lastTs = max(lastTs, id.ts)
				slot := int64(id.dev % scale)
				if want := identityOf(slot, scale, tc.ppm, tc.every, time.Unix(0, id.ts).Sub(start)); id.dev != want {
					t.Fatalf("row %+v: device %d, the schedule says %d held slot %d then", id, id.dev, want, slot)
				}
			}
			// Readings are made every 10s up to 20m (exclusive): the last
			// one's churn interval bounds the replacements. A device
			// replaced before it ever reported (offline) has no row, so
			// count with the knobs off only.
			if len(tc.knobs) == 0 || tc.source == "massive" {
				e := int64(20*time.Minute-10*time.Second) / int64(tc.every)
				want := scale + e*scale*tc.ppm/1_000_000
				if int64(len(devices)) != want {
					t.Fatalf("%d devices in the data set, the schedule makes %d", len(devices), want)
				}
				if got := Unwrap(src).Replaced(); got != 2*(want-scale) { // collected twice
					t.Errorf("Replaced = %d after two passes, want %d", got, 2*(want-scale))
				}
			}
			if len(devices) <= scale {
				t.Fatalf("only %d devices: nothing replaced", len(devices))
			}
		})
	}
}

// Without CHURN the identity of a slot is the slot; tags of replaced
// devices are computed past the precomputed ones.
func TestChurnIdentities(t *testing.T) {
	t.Parallel()
	plain := Unwrap(build(t, "devops", cfg(t, 10, "1h"), 1, sources.Shard{}))
	if plain.Identity(3, plain.start+int64(30*time.Minute)) != 3 || plain.Slot(3) != 3 || plain.Churning() {
		t.Fatal("no CHURN: the identity of a slot is not the slot")
	}
	ch := Unwrap(build(t, "devops", cfg(t, 10, "1h", "CHURN", "50%/10m"), 1, sources.Shard{}))
	if got := ch.Identity(3, ch.start+int64(10*time.Minute)); got != 13 {
		t.Fatalf("slot 3 after one interval of 50%% of 10: device %d, want 13", got)
	}
	if got := ch.Identity(7, ch.start+int64(10*time.Minute)); got != 7 {
		t.Fatalf("slot 7 after one interval of 50%% of 10: device %d, want 7 (slots 0..4 go first)", got)
	}
	if ch.Slot(13) != 3 {
		t.Fatalf("Slot(13) = %d", ch.Slot(13))
	}
	s := ch.Schemas()[0]
	want := string(hostTags{1}.AppendTag(nil, 13, 0))
	if got := string(s.Tags.AppendTag(nil, 13, 0)); got != want || got != "host_13" {
		t.Fatalf("tag of device 13 = %q, want %q", got, want)
	}
	if st, ok := s.Tags.(StringTagger); ok && st.TagString(13, 0) != "host_13" {
		t.Fatalf("TagString(13) = %q", st.TagString(13, 0))
	}
}

func TestChurnFillDoesNotAllocate(t *testing.T) {
	src := build(t, "devops", cfg(t, 100, "240h", "CHURN", "10%/10s", "OUT_OF_ORDER", "0.1:30s", "OFFLINE", "0.1:1m"), 1, sources.Shard{})
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	for range 200 {
		b.Reset()
		_ = st.Fill(b, 1000, 0)
	}
	if n := testing.AllocsPerRun(100, func() { b.Reset(); _ = st.Fill(b, 1000, 0) }); n > 0 {
		t.Fatalf("Fill allocates %.1f times per batch with CHURN", n)
	}
}

// Under the wall clock devices are replaced as wall time passes churn
// intervals: every row carries the device that held its slot at the
// row's time, bursts of a replaced offline device included, and massive
// rows recompute from (device, time).
func TestChurnWallClock(t *testing.T) {
	t.Parallel()
	s, rs, st, b, exp := wallChurn(t, "30%/30s", "0.3:40s")
	devices := map[uint32]bool{}
	held := map[uint32]bool{} // each device that held a slot at a round's time
	now := time.Now().UnixNano()
	for range 120 { // 20 minutes of readings every 10 s
		for slot := range uint32(10) {
			held[s.Identity(slot, now)] = true
		}
		b.Reset()
		must(t, st.Fill(b, 1000, now))
		tb := b.Tables[0]
		for i := range tb.Len() {
			d, ts := tb.Device[i], tb.Time[i]
			devices[d] = true
			if want := s.Identity(s.Slot(d), ts); want != d {
				t.Fatalf("row of device %d at %d (batch time %d, churn origin %d): device %d held slot %d then", d, ts, now, s.churnOrigin, want, s.Slot(d))
			}
			exp.Reset()
			if !rs.AppendRow(exp, 0, d, ts) || exp.DiffField(0, tb, i) >= 0 {
				t.Fatalf("row of device %d at %d does not recompute", d, ts)
			}
		}
		now += int64(10 * time.Second)
	}
	// 20 minutes cross 39 or 40 interval starts of 30 s (by where the
	// wall clock stood in its interval): 3 devices replaced at each.
	if n := len(held); n != 10+3*39 && n != 10+3*40 {
		t.Fatalf("%d devices held a slot over 20 minutes of churn intervals of 3 replacements, want %d or %d", n, 10+3*39, 10+3*40)
	}
	// A replaced device sends what it buffered while offline, so each
	// one reported; only a device still holding its slot may not have
	// yet, being offline since it took the slot.
	last := now - int64(10*time.Second)
	for d := range held {
		if !devices[d] && s.Identity(s.Slot(d), last) != d {
			t.Errorf("device %d held slot %d and was replaced, but never reported", d, s.Slot(d))
		}
	}
}

// Shards of a churned data set are disjoint and make the whole: a slot's
// devices all belong to the shard that owns the slot.
func TestChurnShards(t *testing.T) {
	t.Parallel()
	c := cfg(t, 10, "30m", "CHURN", "30%/2m", "OFFLINE", "0.2:1m")
	whole := collect(t, build(t, "iot", c, 3, sources.Shard{}), 2, 11)
	got := map[rowID]uint64{}
	for i := range 3 {
		sh := sources.Shard{Index: i, Count: 3}
		part := collect(t, build(t, "iot", c, 3, sh), 2, 11)
		for id, h := range part.rows {
			if !sh.Owns(uint64(id.dev % 10)) {
				t.Fatalf("shard %s emitted device %d of slot %d", sh, id.dev, id.dev%10)
			}
			if _, dup := got[id]; dup {
				t.Fatalf("row %+v in two shards", id)
			}
			got[id] = h
		}
	}
	if len(got) != len(whole.rows) {
		t.Fatalf("shards hold %d rows, the whole %d", len(got), len(whole.rows))
	}
	for id, h := range whole.rows {
		if got[id] != h {
			t.Fatalf("row %+v differs between the shards and the whole", id)
		}
	}
}

// Under the wall clock a stream whose first batch comes churn intervals
// after the source was built (a target that was not up) starts each slot
// on the device that holds it then: no replacement is counted for the
// devices before, which never sent a row, and from then on each interval
// counts its own.
func TestChurnWallClockLateStart(t *testing.T) {
	t.Parallel()
	s, rs, st, b, exp := wallChurn(t, "10%/1m", "")
	now := s.churnOrigin + int64(5*time.Minute) + int64(time.Second) // five intervals on: 5 slots moved on
	must(t, st.Fill(b, 10, now))
	tb := b.Tables[0]
	if tb.Len() != 10 {
		t.Fatalf("%d rows in the first round, want one per slot", tb.Len())
	}
	moved := 0
	for i := range tb.Len() {
		d := tb.Device[i]
		if want := s.Identity(s.Slot(d), tb.Time[i]); want != d {
			t.Errorf("slot %d sent as device %d, which held it before device %d", s.Slot(d), d, want)
		}
		if d >= 10 {
			moved++
		}
		exp.Reset()
		if !rs.AppendRow(exp, 0, d, tb.Time[i]) || exp.DiffField(0, tb, i) >= 0 {
			t.Errorf("row of device %d does not recompute", d)
		}
	}
	if moved != 5 {
		t.Errorf("%d slots on a later device after 5 intervals of 1 replacement, want 5", moved)
	}
	if r := s.Replaced(); r != 0 {
		t.Errorf("%d replacements counted before any device reported", r)
	}
	for range 12 { // two more minutes, a reading every 10 s: 2 replacements
		now += int64(10 * time.Second)
		b.Reset()
		must(t, st.Fill(b, 10, now))
	}
	if r := s.Replaced(); r != 2 {
		t.Errorf("%d replacements over two more intervals of 1, want 2", r)
	}
}

// wallChurn builds a massive source of 10 devices and 3 columns under the
// wall clock with CHURN churn (and OFFLINE offline, unless empty), and
// returns it, its one stream, a batch for it and a table to recompute
// rows into.
func wallChurn(t *testing.T, churn, offline string) (*Source, sources.RowSource, sources.Stream, *sources.Batch, *sources.Table) {
	t.Helper()
	c := DefaultConfig()
	c.Scale = 10
	c.Clock = Wall
	c.Columns = 3
	must(t, c.Churn.UnmarshalText([]byte(churn)))
	if offline != "" {
		must(t, c.Offline.UnmarshalText([]byte(offline)))
	}
	src := build(t, "massive", c, 1, sources.Shard{})
	st, err := src.Stream(0, 1)
	must(t, err)
	return Unwrap(src), src.(sources.RowSource), st, sources.NewSeriesBatch(src.Schemas()), sources.NewTable(src.Schemas()[0])
}
