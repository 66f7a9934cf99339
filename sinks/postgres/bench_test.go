package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sources"
)

// boxedSource is the pgx.CopyFromSource a straightforward sink would
// write: one reused []any row, every value boxed.
type boxedSource struct {
	t    *sources.Table
	i    int
	vals []any
	tag  []byte
}

func (b *boxedSource) Next() bool { b.i++; return b.i < b.t.Len() }
func (b *boxedSource) Err() error { return nil }
func (b *boxedSource) Values() ([]any, error) {
	s, i := b.t.Schema, b.i
	b.vals = b.vals[:0]
	b.vals = append(b.vals, time.Unix(0, b.t.Time[i]))
	for k := range s.TagKeys {
		b.tag = s.Tags.AppendTag(b.tag[:0], b.t.Device[i], k)
		b.vals = append(b.vals, string(b.tag))
	}
	for f := range s.Fields {
		b.vals = append(b.vals, b.t.Floats[f][i])
	}
	return b.vals, nil
}

// BenchmarkWrite writes 10,000-row TSBS-cpu-shaped batches (10 tags, 10
// float fields) into a live PostgreSQL: one op = one batch, one worker.
// "pgx-CopyFrom" is pgx.Conn.CopyFrom with a boxed CopyFromSource, for
// comparison with this package's own COPY encoding. Server and client
// share the machine, so compare the sub-benchmarks with each other.
func BenchmarkWrite(b *testing.B) {
	srv := testserver.Postgres(b)
	const rows = 10000
	tb := benchTable(rows)
	batch := &sources.Batch{Tables: []*sources.Table{tb}}
	for _, method := range []string{"copy", "insert", "unnest"} {
		b.Run(method, func(b *testing.B) {
			s, err := New(mustURL(b, withParams(srv.URL, "insert", method)), optionsFor(tb.Schema))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			ctx := context.Background()
			if err := s.Prepare(ctx); err != nil {
				b.Fatal(err)
			}
			var bytes int
			b.ReportAllocs()
			for b.Loop() {
				n, err := s.Write(ctx, batch)
				if err != nil {
					b.Fatal(err)
				}
				bytes = n
			}
			b.SetBytes(int64(bytes))
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
			if _, err := s.pool.Exec(ctx, "TRUNCATE cpu"); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("pgx-CopyFrom", func(b *testing.B) {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		cols := []string{timeColumn}
		cols = append(cols, tb.Schema.TagKeys...)
		for _, f := range tb.Schema.Fields {
			cols = append(cols, f.Name)
		}
		src := &boxedSource{t: tb}
		b.ReportAllocs()
		for b.Loop() {
			src.i = -1
			if _, err := c.CopyFrom(ctx, pgx.Identifier{"cpu"}, cols, src); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	})
}
