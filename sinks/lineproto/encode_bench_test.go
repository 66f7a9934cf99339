package lineproto

import (
	"testing"

	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// benchBatch fills one batch of n rows of the named source.
func benchBatch(b *testing.B, source string, scale, n int) *sources.Batch {
	b.Helper()
	c := iot.DefaultConfig()
	c.Scale = scale
	if err := c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")); err != nil {
		b.Fatal(err)
	}
	src, err := iot.New(source, c, 1, sources.Shard{})
	if err != nil {
		b.Fatal(err)
	}
	st, _ := src.Stream(0, 1)
	batch := sources.NewSeriesBatch(src.Schemas())
	for range 3 { // skip the first rounds
		batch.Reset()
		if err := st.Fill(batch, n, 0); err != nil {
			b.Fatal(err)
		}
	}
	return batch
}

// BenchmarkAppendTable measures encoding; b.N counts rows.
func BenchmarkAppendTable(b *testing.B) {
	for _, bc := range []struct {
		name, source string
		scale        int
	}{
		{"devops", "devops", 4000},
		{"devops-full", "devops-full", 400},
		{"iot", "iot", 4000},
		{"massive-100col", "massive", 100000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const rows = 5000
			batch := benchBatch(b, bc.source, bc.scale, rows)
			var e Encoder
			var buf []byte
			for _, t := range batch.Tables {
				buf = e.AppendTable(buf, t)
			}
			b.SetBytes(int64(len(buf)) / int64(batch.Len()))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch.Len() {
				buf = buf[:0]
				for _, t := range batch.Tables {
					buf = e.AppendTable(buf, t)
				}
			}
		})
	}
}
