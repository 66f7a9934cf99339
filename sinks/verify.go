package sinks

import (
	"github.com/soakd/soakd/sources"
)

// Read-back for verification (SOAKD_<W>_VERIFY during a run, soakd verify
// after it). A sink that can read back what it wrote implements
// SeriesReader or KVReader (capabilities.go) with the types below; the
// others cannot be verified.

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

// RecordShape is the shape of the KV records to read: FIELDS values of
// FIELD_LENGTH bytes.
type RecordShape struct {
	Fields, FieldLength int
}
