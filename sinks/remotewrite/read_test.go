package remotewrite

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// readBatches are 3 batches of 2 tables, 4 devices, a row a second from
// a time with sub-millisecond digits (read back truncated to ms), every
// 7th row's second field null.
func readBatches(schemas []*sources.Schema) (*gen, []*sources.Batch) {
	g := &gen{devices: 4, start: time.Now().Add(-30 * time.Minute).Truncate(time.Second).Add(123456789), step: time.Second}
	var bs []*sources.Batch
	for range 3 {
		b := sources.NewSeriesBatch(schemas)
		g.fill(b, 400)
		bs = append(bs, b)
	}
	return g, bs
}

// ReadSeries reads back through PromQL exactly what was written: values,
// nulls (no sample), times truncated to ms, only the device asked for,
// only this sink's series (label=), within the time range asked.
func TestReadSeries(t *testing.T) {
	tg := prometheusTarget(t, 0)
	schemas := []*sources.Schema{cpuSchema("cpu"), cpuSchema("mem")}
	// Another sink's series of the same devices must not be read.
	other := openSink(t, tg.write+"?label=run:other", sinks.Options{Schemas: schemas})
	_, obs := readBatches(schemas)
	for _, b := range obs {
		if _, err := other.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	s := openSink(t, tg.write+"?label=run:read", sinks.Options{Schemas: schemas})
	g, bs := readBatches(schemas)
	mid := g.start.Add(40 * time.Second).UnixNano()
	var tags []string
	qs := []sinks.SeriesQuery{
		{Schema: schemas[0], Device: 0, From: -1 << 63, To: 1<<63 - 1, Tags: &tags},
		{Schema: schemas[1], Device: 1, From: mid, To: mid + int64(30*time.Second)},
		{Schema: schemas[1], Device: 3, From: -1 << 63, To: 1<<63 - 1},
		{Schema: schemas[1], Device: 7, From: -1 << 63, To: 1<<63 - 1},
	}
	out := sinktest.ReadSeries(t, s, bs, qs)
	if out[0].Len() != 300 || out[1].Len() == 0 || out[3].Len() != 0 {
		t.Errorf("rows read: %d, %d, %d, %d", out[0].Len(), out[1].Len(), out[2].Len(), out[3].Len())
	}
	if len(tags) != 2*out[0].Len() || !slices.Equal(tags[:2], []string{"host_0", "eu-west-1"}) {
		t.Errorf("tags read: %d, first %q", len(tags), tags[:min(2, len(tags))])
	}
}
