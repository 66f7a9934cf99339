package readback

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/logthrottle"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// With CHURN the devices read back are picked, and replayed, by slot:
// however many devices churn brings in, the checker keeps one cursor per
// slot, and finds each device's reading in its slot's replay.
func TestChurnCursorsPerSlot(t *testing.T) {
	c := iot.DefaultConfig()
	c.Scale = 4
	if err := c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if err := c.End.UnmarshalText([]byte("+1h")); err != nil {
		t.Fatal(err)
	}
	if err := c.Churn.UnmarshalText([]byte("50%/1m")); err != nil {
		t.Fatal(err)
	}
	src, err := iot.New("devops", c, 1, sources.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	v := &verifier{log: zap.NewNop(), errLog: logthrottle.New(time.Second), schemas: src.Schemas(),
		replay: src.(sources.Replayer), churn: src.(sources.Churner), cursors: map[uint32]*cursor{}, mod: 3, thr: ^uint64(0)}
	for _, s := range src.Schemas() {
		v.exp = append(v.exp, sources.NewTable(s))
	}
	for d := range uint32(400) {
		if v.picked(d, 1) != v.picked(d%4, 1) {
			t.Fatalf("device %d is picked unlike its slot %d", d, d%4)
		}
	}
	// Every row of the data set, checked: the cursors stay one per slot.
	st, _ := src.Stream(0, 1)
	b := sources.NewSeriesBatch(src.Schemas())
	devices := map[uint32]bool{}
	for {
		b.Reset()
		err := st.Fill(b, 7, 0)
		end := st.(sources.Positioner).Position()
		tb := b.Tables[0]
		for i := range tb.Len() {
			devices[tb.Device[i]] = true
			for _, e := range v.exp {
				e.Reset()
			}
			var idx [64]int
			s := vsample{device: tb.Device[i], ts: tb.Time[i], tables: 1, before: end}
			if v.expect(&s, &idx) != 1 || v.exp[0].DiffField(0, tb, i) >= 0 {
				t.Fatalf("device %d at %d: not found in its slot's replay", s.device, s.ts)
			}
		}
		if errors.Is(err, sources.ErrDone) {
			break
		}
	}
	if len(devices) < 20 || len(v.cursors) != 4 {
		t.Fatalf("%d devices checked with %d cursors, want many devices and one cursor per slot (4)", len(devices), len(v.cursors))
	}
}
