package sinktest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/kv"
)

// finite is a source of a finite data set.
type finite interface {
	sources.Source
	sources.Sized
}

// prefixes numbers the KV key prefixes, so that every sink the suite opens
// writes keys of its own.
var prefixes atomic.Int64

// dataSet returns a small finite data set of kind and the options to open
// a sink for it. Series: TSBS trucks from sources/iot, two tables with
// null fields and late readings, 10 trucks for 10 minutes (1200 rows).
// KV: the load phase of sources/kv, 600 inserts of distinct records (each
// one key) under a key prefix no other call uses.
func dataSet(t *testing.T, kind sources.Kind) (finite, sinks.Options) {
	t.Helper()
	o := sinks.Options{Workload: "sinktest", Kind: kind, Workers: workers, BatchSize: batchSize}
	switch kind {
	case sources.Series:
		c := iot.DefaultConfig()
		c.Scale = 10
		c.Interval = 10 * time.Second
		if err := c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")); err != nil {
			t.Fatal(err)
		}
		if err := c.End.UnmarshalText([]byte("+10m")); err != nil {
			t.Fatal(err)
		}
		src, err := iot.New("iot", c, 1, sources.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		o.Schemas = src.Schemas()
		return src.(finite), o
	case sources.KV:
		c := kv.DefaultConfig()
		c.Workload = kv.Workload{}
		if err := c.Workload.UnmarshalText([]byte("load")); err != nil {
			t.Fatal(err)
		}
		c.Records = 600
		c.Fields = 4
		c.FieldLength = 16
		c.KeyPrefix = "sinktest" + strconv.FormatInt(prefixes.Add(1), 10) + ":"
		src, err := kv.New(c, 1, sources.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		o.Shape = src.(sources.Shaped).Shape()
		return src.(finite), o
	}
	t.Fatalf("BUG: sinktest: no data set for %s workloads", kind)
	return nil, o
}
