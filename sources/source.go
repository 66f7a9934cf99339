package sources

import (
	"errors"
	"time"
)

// ErrDone is returned by Stream.Fill when the stream has no more units (a
// finite data set has been generated to its end). Units appended by that
// same call are valid and must be written.
var ErrDone = errors.New("source exhausted")

// Source is a data set generator. It is built once per workload from the
// workload's settings and must be cheap to build (no I/O, no per-device
// state proportional to the scale).
type Source interface {
	// Name is the source name as configured (devops, iot, massive, kv, ...).
	Name() string
	// Kind says whether the source makes rows or key-value operations.
	Kind() Kind
	// Schemas lists the tables of a series source in a fixed order; nil for
	// KV sources. Sinks use them to create tables before the run.
	Schemas() []*Schema
	// Stream returns cursor number part of parts. The streams of one source
	// cover disjoint parts of its data set (for series: disjoint devices)
	// whose union is the whole data set of this shard. Streams are used by
	// one goroutine each.
	Stream(part, parts int) (Stream, error)
}

// Stream generates the units of one part of a source's data set.
type Stream interface {
	// Fill appends up to max units to b (whose tables are the source's
	// schemas, see NewSeriesBatch) and returns ErrDone once the part has no
	// more units. now is the batch's intended start (Unix nanoseconds);
	// sources with a wall clock stamp rows with it. In steady state Fill
	// must not allocate.
	Fill(b *Batch, max int, now int64) error
}

// Sized is implemented by finite sources that know how many units their
// data set holds (for progress bars and summaries).
type Sized interface {
	// Total is the number of units the whole data set (this shard) holds.
	Total() int64
}

// UnitSizer is implemented by sources that know about how many bytes one
// unit of their batches takes in memory (a KV operation: its key and its
// values). The engine uses it to refuse settings whose batches would not
// fit in the machine's memory.
type UnitSizer interface {
	UnitBytes() int64
}

// Batcher is implemented by sources whose batches need fields set before
// the first Fill (KV record shape); the engine calls NewBatch once per
// worker instead of building the batch itself.
type Batcher interface {
	NewBatch() *Batch
}

// KVShape is how a KV source's records are stored: what a sink needs to
// know about them besides each batch's FIELDS and FIELD_LENGTH.
type KVShape struct {
	// DataType is how a record is stored (DATA_TYPE).
	DataType DataType
	// KeyPrefix is on every key the source makes (KEY_PREFIX); a sink
	// names its own keys (e.g. a scan index) with it and cleans up under
	// it.
	KeyPrefix string
	// Scans says the workload scans records in key order (YCSB E): a
	// sink that keeps a scan index for that must keep it.
	Scans bool
}

// Spaced is implemented by series sources whose rows of one device are a
// fixed time apart (their INTERVAL): a target that keeps times more
// coarsely would take a device's readings as one.
type Spaced interface {
	Interval() time.Duration
}

// WallStamped is implemented by series sources that may stamp rows with
// the time they are sent (CLOCK=wall): a device's rows then follow each
// other as fast as the rate makes them, not INTERVAL apart, and a batch
// may hold several of one device's.
type WallStamped interface {
	// WallClock reports whether rows are stamped with the time they are
	// sent, and over how many devices (SCALE) the rate is spread.
	WallClock() (wall bool, devices int)
	// KeepApart has the source stamp a device's rows at least d apart
	// (the times the target keeps: InfluxDB's precision=, remote
	// write's milliseconds), so that the target keeps each of them. It
	// is called before the source's first stream is opened.
	KeepApart(d time.Duration)
}

// Shaped is implemented by KV sources. The engine hands Shape to the
// sink when it opens it (sinks.Options.Shape).
type Shaped interface {
	Shape() KVShape
}

// Preloader is implemented by sources whose workload reads records that a
// load phase must insert first (YCSB LOAD=auto). The engine calls Preload
// before the run: it fills a batch with probe (read) operations for a
// sample of the records, asks the sink (sinks.Prober) how many are
// present, and runs load, a finite source of inserts, closed-loop when any
// is missing.
type Preloader interface {
	// Preload returns the load source and the probe filler, or a nil load
	// source when no load phase is configured (whose probe, when given,
	// still checks what the target holds).
	Preload() (load Source, probe func(b *Batch), err error)
}

// AlwaysLoader is implemented by Preloaders that can be set to run their
// load phase whatever the probe finds (kv LOAD=on): the probe then only
// checks that the target holds no records of a type the workload cannot
// use, and the load inserts every record again.
type AlwaysLoader interface {
	AlwaysLoad() bool
}
