package iot

import (
	"testing"

	"github.com/soakd/soakd/sources"
)

// BenchmarkFill measures batch filling per source; b.N counts rows.
func BenchmarkFill(b *testing.B) {
	for _, bc := range []struct {
		name, source string
		scale        int
		knobs        bool
	}{
		{"devops", "devops", 4000, false},
		{"devops-knobs", "devops", 4000, true},
		{"devops-full", "devops-full", 4000, false},
		{"iot", "iot", 4000, false},
		{"massive-100col", "massive", 100000, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := DefaultConfig()
			c.Scale = bc.scale
			if bc.knobs {
				must(b, c.OutOfOrder.UnmarshalText([]byte("0.05:30s")))
				must(b, c.Offline.UnmarshalText([]byte("0.01:10m")))
				must(b, c.Missing.UnmarshalText([]byte("0.01")))
			}
			src, err := New(bc.source, c, 1, sources.Shard{})
			must(b, err)
			st, _ := src.Stream(0, 1)
			batch := sources.NewSeriesBatch(src.Schemas())
			const size = 1000
			for range 50 {
				batch.Reset()
				must(b, st.Fill(batch, size, 0))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += size {
				batch.Reset()
				if err := st.Fill(batch, size, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}
