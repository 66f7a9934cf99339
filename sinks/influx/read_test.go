package influx

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// tableRows renders device d's rows of t whose times, truncated to res, are
// in [from, to], sorted.
func tableRows(t *sources.Table, d uint32, from, to int64, res time.Duration) []string {
	var out []string
	for i := range t.Len() {
		ts := t.Time[i] / int64(res) * int64(res)
		if t.Device[i] != d || ts < from || ts > to {
			continue
		}
		s := fmt.Sprint(ts)
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
			if err := s.Readable(); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			g := &gen{devices: 2, start: time.Unix(1700000000, 123456789), step: time.Second}
			b := sources.NewSeriesBatch(schemas)
			var all []*sources.Table
			for range 5 { // 5 x 4100 rows: device 0 has 10250 rows per table, more than a page
				g.fill(b, 4100)
				for _, tb := range b.Tables {
					for i := 0; i < tb.Len(); i += 7 {
						tb.SetNull(1+i%2, i)
					}
					tb.PadNulls()
				}
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatal(err)
				}
				for _, tb := range b.Tables {
					c := sources.NewTable(tb.Schema)
					copyRows(c, tb)
					all = append(all, c)
				}
			}
			mid := g.start.Add(100 * time.Second).UnixNano()
			qs := []sinks.SeriesQuery{
				{Schema: schemas[0], Device: 0, From: -1 << 63, To: 1<<63 - 1},
				{Schema: schemas[1], Device: 1, From: mid, To: mid + int64(30*time.Second)},
				{Schema: schemas[1], Device: 7, From: -1 << 63, To: 1<<63 - 1},
			}
			out := []*sources.Table{sources.NewTable(schemas[0]), sources.NewTable(schemas[1]), sources.NewTable(schemas[1])}
			if err := s.ReadSeries(ctx, qs, out); err != nil {
				t.Fatal(err)
			}
			res := s.Resolution()
			for i, q := range qs {
				var want []string
				for _, tb := range all {
					if tb.Schema == q.Schema {
						want = append(want, tableRows(tb, q.Device, q.From, q.To, res)...)
					}
				}
				slices.Sort(want)
				got := tableRows(out[i], q.Device, -1<<63, 1<<63-1, time.Nanosecond)
				if !slices.Equal(got, want) {
					t.Fatalf("query %d: %d rows read, %d written; first read %q", i, len(got), len(want), first(got))
				}
			}
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

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// copyRows appends every row of src to dst.
func copyRows(dst, src *sources.Table) {
	for i := range src.Len() {
		j := dst.Len()
		dst.Device = append(dst.Device, src.Device[i])
		dst.Time = append(dst.Time, src.Time[i])
		for f, fd := range src.Schema.Fields {
			if fd.Kind == sources.Int {
				dst.Ints[f] = append(dst.Ints[f], src.Ints[f][i])
			} else {
				dst.Floats[f] = append(dst.Floats[f], src.Floats[f][i])
			}
			if src.Null[f] != nil && src.Null[f][i] {
				dst.SetNull(f, j)
			}
		}
	}
	dst.PadNulls()
}
