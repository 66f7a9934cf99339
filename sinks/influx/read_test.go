package influx

import (
	"fmt"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// ReadSeries reads back through InfluxQL exactly what was written, nulls
// and precision included, across pages, through both APIs.
func TestReadSeries(t *testing.T) {
	srv := testserver.Influx(t)
	for _, tc := range []struct{ name, url string }{
		{"v1 ms", "influx1://%s?db=readv1&precision=ms"},
		{"v2 rp", "influx://%s?bucket=readv2/autogen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemas := []*sources.Schema{cpuSchema("cpu"), cpuSchema("mem")}
			s := openSink(t, fmt.Sprintf(tc.url, srv.Addr), sinks.Options{Schemas: schemas, Workers: 1})
			g := &gen{devices: 2, start: time.Unix(1700000000, 123456789), step: time.Second}
			var bs []*sources.Batch
			for range 5 { // 5 x 4100 rows: device 0 has 10250 rows per table, more than a page
				b := sources.NewSeriesBatch(schemas)
				g.fill(b, 4100)
				for _, tb := range b.Tables {
					for i := 0; i < tb.Len(); i += 7 {
						tb.SetNull(1+i%2, i)
					}
					tb.PadNulls()
				}
				bs = append(bs, b)
			}
			mid := g.start.Add(100 * time.Second).UnixNano()
			qs := []sinks.SeriesQuery{
				{Schema: schemas[0], Device: 0, From: -1 << 63, To: 1<<63 - 1},
				{Schema: schemas[1], Device: 1, From: mid, To: mid + int64(30*time.Second)},
				{Schema: schemas[1], Device: 7, From: -1 << 63, To: 1<<63 - 1},
			}
			out := sinktest.ReadSeries(t, s, bs, qs)
			if out[0].Len() <= readPage {
				t.Fatalf("device 0 has %d rows: the test does not cross a page", out[0].Len())
			}
		})
	}
	s := openSink(t, "influx1://"+srv.Addr+"?product=victoriametrics", sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
	if s.Readable() == nil {
		t.Error("victoriametrics is readable with InfluxQL")
	}
}
