package seq

import (
	"errors"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

// Every n from 0 to ROWS-1 appears exactly once across all streams and
// shards, and Total agrees with what is generated.
func TestStreamsCoverRowsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		devices, parts, shards int
		rows                   int64
	}{{10, 4, 1, 1000}, {7, 3, 2, 1001}, {1, 1, 1, 5}, {5, 8, 1, 23}, {3, 2, 3, 100}} {
		seen := make([]int, tc.rows)
		var total int64
		for sh := 0; sh < tc.shards; sh++ {
			src, err := New(Config{Devices: tc.devices, Rows: tc.rows, Interval: 1}, sources.Shard{Index: sh, Count: tc.shards})
			if err != nil {
				t.Fatal(err)
			}
			total += src.Total()
			for p := 0; p < tc.parts; p++ {
				st, _ := src.Stream(p, tc.parts)
				b := sources.NewSeriesBatch(src.Schemas())
				lastTime := map[uint32]int64{}
				for {
					b.Reset()
					err := st.Fill(b, 7, 0)
					tb := b.Tables[0]
					for i, n := range tb.Ints[0] {
						seen[n]++
						if prev, ok := lastTime[tb.Device[i]]; ok && tb.Time[i] <= prev {
							t.Fatalf("device %d time went back", tb.Device[i])
						}
						lastTime[tb.Device[i]] = tb.Time[i]
					}
					if errors.Is(err, sources.ErrDone) {
						break
					}
				}
			}
		}
		for n, c := range seen {
			if c != 1 {
				t.Fatalf("%+v: n=%d seen %d times", tc, n, c)
			}
		}
		if total != tc.rows {
			t.Fatalf("%+v: Total = %d, want %d", tc, total, tc.rows)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	var se *sources.SettingError
	if err := (Config{Devices: 0, Interval: 1}).Validate(); !errors.As(err, &se) || se.Setting != "DEVICES" {
		t.Fatalf("got %v, want a DEVICES setting error", err)
	}
	if err := (Config{Devices: 1, Rows: -1, Interval: 1}).Validate(); !errors.As(err, &se) || se.Setting != "ROWS" {
		t.Fatalf("got %v, want a ROWS setting error", err)
	}
}

// Timestamps are int64 nanoseconds from 2026 on: a data set whose last
// round would pass April 2262 is refused naming INTERVAL. Bug caught: 240
// rows a leap year apart wrapped round to 1677.
func TestValidateTimesPast2262(t *testing.T) {
	t.Parallel()
	var se *sources.SettingError
	year := 8784 * time.Hour
	if err := (Config{Devices: 1, Rows: 240, Interval: year}).Validate(); !errors.As(err, &se) || se.Setting != "INTERVAL" {
		t.Fatalf("got %v, want an INTERVAL setting error", err)
	}
	if err := (Config{Devices: 10, Rows: 2400, Interval: year}).Validate(); !errors.As(err, &se) || se.Setting != "INTERVAL" {
		t.Fatalf("10 devices: got %v, want an INTERVAL setting error", err)
	}
	// The last of 236 rounds is in 2261, and an endless data set has no
	// last round.
	for _, c := range []Config{{Devices: 1, Rows: 236, Interval: year}, {Devices: 10, Rows: 2360, Interval: year}, {Devices: 1, Interval: year}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestFinite(t *testing.T) {
	t.Parallel()
	var se *sources.SettingError
	if err := (Config{Devices: 1, Interval: 1}).Finite(); !errors.As(err, &se) || se.Setting != "ROWS" {
		t.Fatalf("got %v, want a ROWS setting error", err)
	}
	if err := (Config{Devices: 1, Rows: 10, Interval: 1}).Finite(); err != nil {
		t.Fatalf("ROWS=10: %v", err)
	}
}

func BenchmarkFill(b *testing.B) {
	src, _ := New(Config{Devices: 1000, Interval: 1}, sources.Shard{})
	st, _ := src.Stream(0, 1)
	batch := sources.NewSeriesBatch(src.Schemas())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		_ = st.Fill(batch, 1000, 0)
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "rows/s")
}

// Each device replayed alone gives its rows with positions inside the
// batch that carried them, and AppendRow recomputes any row.
func TestReplayAndAppendRow(t *testing.T) {
	t.Parallel()
	src, err := New(Config{Devices: 7, Rows: 200, Interval: 10}, sources.Shard{Index: 1, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ from, to sources.Position }
	type row struct {
		ts, n int64
		sp    span
	}
	byDev := map[uint32][]row{}
	for p := range 3 {
		st, _ := src.Stream(p, 3)
		b := sources.NewSeriesBatch(src.Schemas())
		for {
			b.Reset()
			from := st.(sources.Positioner).Position()
			err := st.Fill(b, 4, 0)
			to := st.(sources.Positioner).Position()
			tb := b.Tables[0]
			for i := range tb.Len() {
				byDev[tb.Device[i]] = append(byDev[tb.Device[i]], row{tb.Time[i], tb.Ints[0][i], span{from, to}})
			}
			if errors.Is(err, sources.ErrDone) {
				break
			}
		}
	}
	one := sources.NewTable(src.Schemas()[0])
	for d := range src.AllDevices() {
		r, err := src.Replay(d)
		if d%2 != 1 {
			if err == nil {
				t.Fatalf("Replay(%d) of the other shard succeeded", d)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b := sources.NewSeriesBatch(src.Schemas())
		for i := 0; ; i++ {
			b.Reset()
			_, pos, err := r.Next(b)
			if errors.Is(err, sources.ErrDone) {
				if i != len(byDev[d]) {
					t.Fatalf("device %d: replayed %d rows, streams made %d", d, i, len(byDev[d]))
				}
				break
			}
			w := byDev[d][i]
			tb := b.Tables[0]
			if tb.Time[0] != w.ts || tb.Ints[0][0] != w.n {
				t.Fatalf("device %d row %d: replay (%d, %d), stream (%d, %d)", d, i, tb.Time[0], tb.Ints[0][0], w.ts, w.n)
			}
			if pos.Less(w.sp.from) || !pos.Less(w.sp.to) {
				t.Fatalf("device %d row %d at %+v outside its batch %+v", d, i, pos, w.sp)
			}
			one.Reset()
			if !src.AppendRow(one, 0, d, w.ts) || one.Ints[0][0] != w.n {
				t.Fatalf("AppendRow(%d, %d) does not give n=%d", d, w.ts, w.n)
			}
		}
	}
	if src.AppendRow(one, 0, 1, epoch+5) || src.AppendRow(one, 0, 1, epoch+10*1000) {
		t.Error("AppendRow made a row the data set does not have")
	}
}
