package influx

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// tsbsTagger gives the ten tags of TSBS's cpu-only hosts.
type tsbsTagger struct{}

var tsbsTagKeys = []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"}

func (tsbsTagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	d := uint64(device)
	switch tag {
	case 0:
		return strconv.AppendUint(append(dst, "host_"...), d, 10)
	case 1:
		return append(dst, [...]string{"eu-central-1", "us-west-2", "ap-northeast-1"}[d%3]...)
	case 2:
		return append(dst, [...]string{"eu-central-1a", "us-west-2b", "ap-northeast-1c"}[d%3]...)
	case 3:
		return strconv.AppendUint(dst, d%100, 10)
	case 4:
		return append(dst, [...]string{"Ubuntu16.10", "Ubuntu15.10", "Ubuntu16.04LTS"}[d%3]...)
	case 5:
		return append(dst, [...]string{"x64", "x86"}[d%2]...)
	case 6:
		return append(dst, [...]string{"SF", "NYC", "LON", "CHI"}[d%4]...)
	case 7:
		return strconv.AppendUint(dst, d%20, 10)
	case 8:
		return strconv.AppendUint(dst, d%2, 10)
	}
	return append(dst, [...]string{"production", "staging", "test"}[d%3]...)
}

func tsbsCPUSchema() *sources.Schema {
	s := &sources.Schema{Measurement: "cpu", TagKeys: tsbsTagKeys, Tags: tsbsTagger{}}
	for _, f := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
		"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Float, Decimals: 2})
	}
	return s
}

func benchBatch(rows int, more ...*sources.Schema) ([]*sources.Schema, *sources.Batch) {
	schemas := append([]*sources.Schema{tsbsCPUSchema()}, more...)
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 100, start: time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), step: 10 * time.Second}).fill(b, rows)
	return schemas, b
}

// The write path's encoding: a TSBS cpu-only batch of 10,000 rows into a
// reused buffer, plain and gzip (level 1, as gzip=true), and a batch of two
// tables (as iot's readings and diagnostics). 0 allocs/op, so 0 per row.
func BenchmarkEncode(b *testing.B) {
	const rows = 10000
	_, one := benchBatch(rows)
	_, two := benchBatch(rows/2, cpuSchema("diagnostics"))
	for _, tc := range []struct {
		name  string
		batch *sources.Batch
		level int
	}{{"gzip=0", one, 0}, {"gzip=1", one, 1}, {"tables=2", two, 0}} {
		batch, level := tc.batch, tc.level
		b.Run(tc.name, func(b *testing.B) {
			st := &state{}
			var n int
			encode := func() {
				st.buf = st.buf[:0]
				for _, t := range batch.Tables {
					st.buf = st.enc.AppendTable(st.buf, t)
				}
				n = len(st.buf)
				if level > 0 {
					n = len(st.compress(level))
				}
			}
			encode() // grow the buffers once
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				encode()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len()), "ns/row")
			b.ReportMetric(float64(n)/float64(batch.Len()), "bytes/row")
		})
	}
}

// Whole writes of 10,000 rows into a real InfluxDB 1.8 (the server's time
// dominates; allocs/row shows the client side stays per batch, not per row).
func BenchmarkWriteV1(b *testing.B) {
	srv := testserver.Influx(b)
	const rows = 10000
	schemas, batch := benchBatch(rows)
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			raw := fmt.Sprintf("influx1://%s?db=bench&gzip=%v", srv.Addr, gz)
			s0, err := Open(context.Background(), mustParse(b, raw), sinks.Options{Kind: sources.Series, Schemas: schemas, Workers: 1, Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			s := s0.(*Sink)
			defer s.Close(context.Background())
			if err := s.Prepare(context.Background()); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Write(context.Background(), batch); err != nil { // grow the buffers once
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := s.Write(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			allocs := testing.AllocsPerRun(1, func() { _, _ = s.Write(context.Background(), batch) })
			b.ReportMetric(allocs/rows, "allocs/row")
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
