package sinks

import (
	"context"
	"time"

	"github.com/soakd/soakd/sources"
)

// Read-back for verification (SOAKD_<W>_VERIFY during a run, soakd verify
// after it). A sink that can read back what it wrote implements one of
// the readers below; the others cannot be verified.

// SeriesQuery asks for the rows of one device in one table over a time
// range.
type SeriesQuery struct {
	Schema *sources.Schema
	Device uint32
	// From and To bound the rows' times, inclusive, in Unix nanoseconds.
	From, To int64
	// Tags, when not nil, receives the stored tag values of the rows read,
	// as text: for each row appended to the table, one value per tag of
	// Schema.TagKeys, in that order, so that a changed tag is seen.
	Tags *[]string
}

// SeriesReader is implemented by series sinks that can read rows back.
// The engine calls it from one goroutine per workload while Write runs
// in others; soakd verify calls it alone.
type SeriesReader interface {
	// Readable returns nil when the target can be read back, otherwise why
	// not (e.g. a product without a query language soakd speaks). It does
	// no I/O.
	Readable() error
	// ReadSeries appends to out[i], a table of qs[i].Schema, the rows the
	// target holds for qs[i] in time order, each as many times as it is
	// stored. It reads all of qs in as few round trips as the protocol
	// allows. The sink keeps no part of out.
	ReadSeries(ctx context.Context, qs []SeriesQuery, out []*sources.Table) error
	// Resolution is the unit the target stores times in: rows come back
	// with their times truncated to it (1 µs for PostgreSQL).
	Resolution() time.Duration
}

// RecordShape is the shape of the KV records to read: FIELDS values of
// FIELD_LENGTH bytes.
type RecordShape struct {
	Fields, FieldLength int
}

// KVReader is implemented by KV sinks that can read records back. Like
// SeriesReader, the engine calls it from one goroutine while Write runs.
type KVReader interface {
	// ReadRecords reads the record under keys[i] into out[i] (which it
	// overwrites), in one round trip where the protocol allows.
	ReadRecords(ctx context.Context, keys []string, shape RecordShape, out []sources.StoredRecord) error
}
