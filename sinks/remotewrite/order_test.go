package remotewrite

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

// A batch whose rows are not in time order (a device's late reading after
// a newer one, OUT_OF_ORDER) is encoded in time order, by both protocol
// versions: each series' samples in a request are in time order, every
// sample sent once. Sent in the batch's order, Prometheus stored the
// newer sample and dropped the older one at commit, answering 204.
func TestSamplesInTimeOrder(t *testing.T) {
	t.Parallel()
	s := cpuSchema("cpu")
	b := sources.NewSeriesBatch([]*sources.Schema{s})
	g := &gen{devices: 3, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second}
	g.fill(b, 12)
	tb := b.Tables[0]
	want := map[string][]float64{} // series and times → value, as the batch holds them
	// Each device's rows newest first: its late readings.
	for i := range tb.Len() {
		tb.Time[i] = g.start.Add(time.Duration(tb.Len()-i) * time.Second).UnixNano()
	}
	for i := range tb.Len() {
		for f := range s.Fields {
			if v, ok := tb.Float(f, i); ok {
				k := fmt.Sprint(tb.Device[i], f, Millis(tb.Time[i]))
				want[k] = append(want[k], v)
			}
		}
	}
	e1, e2 := Encoder{}, EncoderV2{}
	buf, _ := e1.AppendTable(nil, tb)
	e2.Reset()
	e2.AppendTable(tb)
	for name, got := range map[string][]decoded{"1.0": decodeRequest(t, buf), "2.0": decodeV2(t, e2.AppendRequest(nil))} {
		last := map[string]float64{}
		n := 0
		for _, ts := range got {
			key := fmt.Sprint(ts.labels)
			for _, smp := range ts.samples {
				if at, ok := last[key]; ok && smp[0] < at {
					t.Fatalf("%s: series %s has a sample at %v after one at %v", name, key, smp[0], at)
				}
				last[key] = smp[0]
				n++
			}
		}
		total := 0
		for _, vs := range want {
			total += len(vs)
		}
		if n != total {
			t.Errorf("%s: %d samples sent, want the batch's %d", name, n, total)
		}
	}
	// A batch in time order keeps its order, unsorted.
	in := &sources.Table{Time: []int64{1, 2, 2, 3}}
	in.Device = make([]uint32, 4)
	if got := rowOrder(in, nil); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Errorf("rows in time order: %v", got)
	}
}
