package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// deviceRows renders device d's rows of t with times in [from, to] in time
// order, values and nulls included, each as often as it appears.
func deviceRows(t *sources.Table, d uint32, from, to int64) []string {
	var out []string
	for i := range t.Len() {
		if t.Device[i] != d || t.Time[i] < from || t.Time[i] > to {
			continue
		}
		s := fmt.Sprint(t.Time[i])
		for f, fd := range t.Schema.Fields {
			switch {
			case t.Null[f] != nil && t.Null[f][i]:
				s += " null"
			case fd.Kind == sources.Int:
				s += fmt.Sprint(" ", t.Ints[f][i])
			default:
				s += fmt.Sprint(" ", t.Floats[f][i])
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// ReadSeries gives back exactly the rows written for each device and time
// range, with their nulls, and a row written twice twice; queries of
// several tables go in one call.
func TestReadSeries(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := t.Context()
	for _, method := range []string{"copy", "insert"} {
		t.Run(method, func(t *testing.T) {
			db := newDB(t, srv, "read_"+method)
			cpu, trucks := cpuSchema("cpu", 6), mixedSchema("Trucks", 4) // cpu device 5 has no rows
			s := openSink(t, withParams(db, "insert", method), nil, cpu, trucks)
			if err := s.Readable(); err != nil {
				t.Fatal(err)
			}
			if s.Resolution() != time.Microsecond {
				t.Errorf("Resolution = %v", s.Resolution())
			}
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			b := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
			fill(b.Tables[0], 5, 0, 60, testBase, false)
			fill(b.Tables[1], 4, 0, 40, testBase, true)
			for range 2 { // the second time stores every row again (no dedup)
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			mid := testBase.Add(30 * time.Second).UnixNano()
			qs := []sinks.SeriesQuery{
				{Schema: cpu, Device: 2, From: -1 << 63, To: 1<<63 - 1},
				{Schema: trucks, Device: 3, From: mid, To: mid + int64(20*time.Second)},
				{Schema: trucks, Device: 1, From: -1 << 63, To: 1<<63 - 1},
				{Schema: cpu, Device: 5, From: -1 << 63, To: 1<<63 - 1},
			}
			out := []*sources.Table{sources.NewTable(cpu), sources.NewTable(trucks), sources.NewTable(trucks), sources.NewTable(cpu)}
			if err := s.ReadSeries(ctx, qs, out); err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				want := deviceRows(b.Tables[slices.Index([]*sources.Schema{cpu, trucks}, q.Schema)], q.Device, q.From, q.To)
				want = append(want, want...)
				slices.Sort(want)
				got := deviceRows(out[i], q.Device, q.From, q.To)
				if out[i].Len() != len(got) {
					t.Fatalf("query %d: %d rows, %d of the device in range", i, out[i].Len(), len(got))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("query %d (%s device %d): read\n%v\nwant\n%v", i, q.Schema.Measurement, q.Device, got, want)
				}
				if i == 2 && !slices.IsSortedFunc(out[i].Time, func(a, b int64) int { return int(a - b) }) {
					t.Errorf("rows not in time order")
				}
			}
			if out[2].Null[1] == nil {
				t.Error("nulls not read back")
			}
		})
	}
}
