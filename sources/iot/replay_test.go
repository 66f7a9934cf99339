package iot

import (
	"errors"
	"testing"

	"github.com/soakd/soakd/sources"
)

// batchSpan is where a stream was before and after one Fill.
type batchSpan struct{ from, to sources.Position }

// emittedRow is a row of a run with the batch that carried it.
type emittedRow struct {
	id    rowID
	hash  uint64
	part  int
	batch int
}

// runStreams fills every stream of src to the end with batches of batch
// rows, as the engine does, and returns each device's rows in emission
// order and each stream's batch positions.
func runStreams(t *testing.T, src sources.Source, parts, batch int) (map[uint32][]emittedRow, [][]batchSpan) {
	t.Helper()
	byDev := map[uint32][]emittedRow{}
	spans := make([][]batchSpan, parts)
	for p := range parts {
		st, err := src.Stream(p, parts)
		must(t, err)
		pos := st.(sources.Positioner)
		b := sources.NewSeriesBatch(src.Schemas())
		for {
			b.Reset()
			from := pos.Position()
			err := st.Fill(b, batch, 0)
			if err != nil && !errors.Is(err, sources.ErrDone) {
				t.Fatal(err)
			}
			to := pos.Position()
			if to.Less(from) {
				t.Fatalf("stream %d went back from %+v to %+v", p, from, to)
			}
			bi := len(spans[p])
			spans[p] = append(spans[p], batchSpan{from, to})
			// Rows of one device in one batch are in table order here; the
			// replay is compared per table below, so that is enough.
			for ti, tb := range b.Tables {
				for i := range tb.Len() {
					id := rowID{ti, tb.Device[i], tb.Time[i]}
					slot := Unwrap(src).Slot(id.dev) // a device's slot: with CHURN its replay holds each device of the slot
					byDev[slot] = append(byDev[slot], emittedRow{id, rowHash(tb, i), p, bi})
				}
			}
			if errors.Is(err, sources.ErrDone) {
				break
			}
		}
	}
	return byDev, spans
}

// Every device replayed on its own gives the rows its stream emitted, the
// same values in the same order per table, and each row's position falls
// in the batch that carried it: what soakd verify relies on to say which
// rows an acknowledged or a failed write held.
func TestReplayMatchesStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, source string
		knobs        []string
		parts, batch int
	}{
		{"devops", "devops", nil, 3, 37},
		{"devops-knobs", "devops", []string{"OUT_OF_ORDER", "0.2:40s", "OFFLINE", "0.2:1m", "MISSING", "0.1"}, 2, 50},
		{"iot", "iot", []string{"OFFLINE", "0.1:30s"}, 4, 7},
		{"devops-full", "devops-full", []string{"OUT_OF_ORDER", "0.1:20s"}, 2, 101},
		{"massive", "massive", []string{"COLUMNS", "5", "MISSING", "0.2", "OFFLINE", "0.1:1m"}, 3, 64},
		{"devops-churn", "devops", []string{"CHURN", "25%/2m", "OUT_OF_ORDER", "0.2:40s", "OFFLINE", "0.2:1m"}, 3, 7},
		{"iot-churn", "iot", []string{"CHURN", "50%/1m", "OFFLINE", "0.1:30s"}, 2, 13},
		{"devops-full-churn", "devops-full", []string{"CHURN", "10%/30s"}, 2, 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := build(t, tc.source, cfg(t, 12, "20m", tc.knobs...), 7, sources.Shard{})
			byDev, spans := runStreams(t, src, tc.parts, tc.batch)
			rp := src.(sources.Replayer)
			if rp.AllDevices() != 12 {
				t.Fatalf("AllDevices = %d, want 12", rp.AllDevices())
			}
			total := 0
			for d := range uint32(12) {
				r, err := rp.Replay(d)
				must(t, err)
				b := sources.NewSeriesBatch(src.Schemas())
				want := byDev[d]
				// per table, the emitted rows of d in order
				perTable := map[int][]emittedRow{}
				for _, e := range want {
					perTable[e.id.table] = append(perTable[e.id.table], e)
				}
				next := map[int]int{}
				var last sources.Position
				for n := 0; ; n++ {
					b.Reset()
					m, pos, err := r.Next(b)
					if errors.Is(err, sources.ErrDone) {
						break
					}
					must(t, err)
					if n > 0 && !last.Less(pos) {
						t.Fatalf("device %d: position %+v not after %+v", d, pos, last)
					}
					last = pos
					tb := b.Tables[m]
					if tb.Len() != 1 {
						t.Fatalf("device %d: Next appended %d rows to table %d", d, tb.Len(), m)
					}
					i := next[m]
					if i >= len(perTable[m]) {
						t.Fatalf("device %d: replay has more rows in table %d than the run (%d)", d, m, len(perTable[m]))
					}
					e := perTable[m][i]
					next[m]++
					if got := (rowID{m, tb.Device[0], tb.Time[0]}); got != e.id || rowHash(tb, 0) != e.hash {
						t.Fatalf("device %d row %d of table %d: replay %+v, run %+v (or values differ)", d, i, m, got, e.id)
					}
					sp := spans[e.part][e.batch]
					if pos.Less(sp.from) || !pos.Less(sp.to) {
						t.Fatalf("device %d: row %+v at %+v is outside its batch [%+v, %+v)", d, e.id, pos, sp.from, sp.to)
					}
					total++
				}
				for m, rows := range perTable {
					if next[m] != len(rows) {
						t.Fatalf("device %d table %d: replayed %d rows, the run emitted %d", d, m, next[m], len(rows))
					}
				}
			}
			if total == 0 {
				t.Fatal("nothing replayed")
			}
		})
	}
}

// Massive rows are recomputed one by one from (device, time).
func TestAppendRowMatchesStreams(t *testing.T) {
	t.Parallel()
	src := build(t, "massive", cfg(t, 10, "10m", "COLUMNS", "7", "COLUMN_TYPE", "float", "MISSING", "0.3",
		"OUT_OF_ORDER", "0.2:30s"), 3, sources.Shard{Index: 1, Count: 2})
	rs := src.(sources.RowSource)
	if !rs.PureRows() {
		t.Fatal("massive: PureRows = false")
	}
	c := collect(t, src, 2, 33)
	tb := sources.NewTable(src.Schemas()[0])
	for id, h := range c.rows {
		tb.Reset()
		if !rs.AppendRow(tb, id.table, id.dev, id.ts) {
			t.Fatalf("AppendRow(%+v) = false", id)
		}
		if rowHash(tb, 0) != h {
			t.Fatalf("AppendRow(%+v) differs from the stream's row", id)
		}
	}
	for _, bad := range []rowID{{0, 0, c.order[0][0].ts}, {0, 1, c.order[0][0].ts + 1}, {1, 1, c.order[0][0].ts}} {
		tb.Reset()
		if rs.AppendRow(tb, bad.table, bad.dev, bad.ts) {
			t.Errorf("AppendRow(%+v) = true for a row the data set does not have", bad)
		}
	}
	// With CHURN a row exists only for the device that held its slot at
	// its time.
	ch := build(t, "massive", cfg(t, 10, "10m", "COLUMNS", "3", "CHURN", "30%/1m", "OUT_OF_ORDER", "0.2:30s", "OFFLINE", "0.2:1m"), 3, sources.Shard{})
	crs := ch.(sources.RowSource)
	cc := collect(t, ch, 3, 17)
	tb = sources.NewTable(ch.Schemas()[0])
	replacements := 0
	for id, h := range cc.rows {
		if id.dev >= 10 {
			replacements++
		}
		tb.Reset()
		if !crs.AppendRow(tb, id.table, id.dev, id.ts) || rowHash(tb, 0) != h {
			t.Fatalf("churn: AppendRow(%+v) does not give the stream's row", id)
		}
		tb.Reset()
		if other := id.dev + 10; crs.AppendRow(tb, id.table, other, id.ts) {
			t.Fatalf("churn: AppendRow gives a row of device %d, which did not hold slot %d at %d", other, id.dev%10, id.ts)
		}
	}
	if replacements == 0 {
		t.Fatal("churn: no row of a replacement device")
	}
	dv := build(t, "devops", cfg(t, 10, "10m"), 3, sources.Shard{})
	if dv.(sources.RowSource).PureRows() {
		t.Error("devops: PureRows = true, but its walks keep state")
	}
}

func TestReplayRefusesWallClockAndOtherShards(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 4
	must(t, c.Clock.UnmarshalText([]byte("wall")))
	src := build(t, "devops", c, 1, sources.Shard{})
	if _, err := src.(sources.Replayer).Replay(0); err == nil {
		t.Error("Replay under CLOCK=wall succeeded")
	}
	sh := build(t, "devops", cfg(t, 4, "1m"), 1, sources.Shard{Index: 1, Count: 2})
	if _, err := sh.(sources.Replayer).Replay(0); err == nil {
		t.Error("Replay of another shard's device succeeded")
	}
	if _, err := sh.(sources.Replayer).Replay(9); err == nil {
		t.Error("Replay of a device beyond SCALE succeeded")
	}
	if _, err := sh.(sources.Replayer).Replay(3); err != nil {
		t.Errorf("Replay of the shard's device: %v", err)
	}
}

// START=now is recorded as the time it resolved to.
func TestResolvedStart(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	src := build(t, "devops", c, 1, sources.Shard{})
	r := src.(sources.Resolved).Resolved()
	var c2 Config = DefaultConfig()
	must(t, c2.Start.UnmarshalText([]byte(r["START"])))
	if got, want := c2.Start.T.UnixNano(), Unwrap(src).start; got != want {
		t.Fatalf("resolved START %q = %d, source started at %d", r["START"], got, want)
	}
	if r := build(t, "devops", cfg(t, 2, "1m"), 1, sources.Shard{}).(sources.Resolved).Resolved(); r != nil {
		t.Errorf("a given START is resolved again: %v", r)
	}
}
