package postgres

import (
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// ReadSeries gives back exactly the rows written for each device and time
// range, with their nulls, and a row written twice twice; queries of
// several tables go in one call.
func TestReadSeries(t *testing.T) {
	srv := testserver.Postgres(t)
	for _, method := range []string{"copy", "insert"} {
		t.Run(method, func(t *testing.T) {
			db := newDB(t, srv, "read_"+method)
			cpu, trucks := cpuSchema("cpu", 6), mixedSchema("Trucks", 4) // cpu device 5 has no rows
			s := openSink(t, withParams(db, "insert", method), nil, cpu, trucks)
			if s.Resolution() != time.Microsecond {
				t.Errorf("Resolution = %v", s.Resolution())
			}
			b := sources.NewSeriesBatch([]*sources.Schema{cpu, trucks})
			fill(b.Tables[0], 5, 0, 60, testBase, false)
			fill(b.Tables[1], 4, 0, 40, testBase, true)
			mid := testBase.Add(30 * time.Second).UnixNano()
			qs := []sinks.SeriesQuery{
				{Schema: cpu, Device: 2, From: -1 << 63, To: 1<<63 - 1},
				{Schema: trucks, Device: 3, From: mid, To: mid + int64(20*time.Second)},
				{Schema: trucks, Device: 1, From: -1 << 63, To: 1<<63 - 1},
				{Schema: cpu, Device: 5, From: -1 << 63, To: 1<<63 - 1},
			}
			// The second write stores every row again (no dedup).
			out := sinktest.ReadSeries(t, s, []*sources.Batch{b, b}, qs)
			if out[2].Null[1] == nil {
				t.Error("nulls not read back")
			}
		})
	}
}
