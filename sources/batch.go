package sources

// Kind says which shape of units a source produces and a sink accepts.
type Kind uint8

const (
	// Series units are rows of a time-series table.
	Series Kind = iota + 1
	// KV units are YCSB-style key-value operations.
	KV
	// Queries units are queries over a series data set (TSBS's query
	// types), each counted under its type.
	Queries
)

func (k Kind) String() string {
	switch k {
	case Series:
		return "series"
	case KV:
		return "kv"
	case Queries:
		return "query"
	}
	return "unknown"
}

// FieldKind is the type of a field column.
type FieldKind uint8

const (
	// Float fields are float64 columns.
	Float FieldKind = iota + 1
	// Int fields are int64 columns.
	Int
)

// Field describes one field column of a table.
type Field struct {
	Name string
	Kind FieldKind
	// Decimals is the number of decimal places Float values are rounded to
	// by the generator (0 = not rounded). Encoders may use it to format
	// values as fixed-point numbers, which is much faster than shortest
	// round-trip formatting and prints the same digits.
	Decimals int
	// Counter reports that the field only grows (a count of events, as
	// TSBS's disk reads and bytes sent): a sink that types its series
	// may call it a counter; any other field is a reading (a gauge).
	Counter bool
}

// Tagger gives the tag values of a device. Implementations either keep
// precomputed strings or compute values on the fly; both must be safe for
// concurrent use and must not allocate in AppendTag.
type Tagger interface {
	// AppendTag appends the value of tag number tag (an index into
	// Schema.TagKeys) of device to dst.
	AppendTag(dst []byte, device uint32, tag int) []byte
}

// Schema describes one measurement (table) of a series source. It is built
// once by the source and shared read-only by every batch and sink.
type Schema struct {
	Measurement string
	// DeviceTag is the index in TagKeys of the tag that names the device
	// (e.g. hostname or name); sinks use it for indexes and distribution.
	DeviceTag int
	TagKeys   []string
	Fields    []Field
	Tags      Tagger
	// NumericTags[k] reports that the values of tag k are numbers (TSBS's
	// trucks' capacities, which TSBS types float32): a sink that types its
	// tag columns may store them as numbers. nil: every tag is text.
	NumericTags []bool
}

// Table holds the rows of one measurement in a batch, column by column.
// Row i is (Device[i], Time[i], field values at index i). For field f,
// exactly one of Floats[f] and Ints[f] is used, as Schema.Fields[f].Kind
// says. Null[f] is nil when no value of field f in this table is null;
// otherwise Null[f][i] reports that row i has no value for f (its slot in
// Floats/Ints holds a zero).
type Table struct {
	Schema *Schema
	Device []uint32
	Time   []int64 // Unix nanoseconds, UTC
	Floats [][]float64
	Ints   [][]int64
	Null   [][]bool

	// nullStore keeps the Null columns' storage across Reset (which sets
	// Null[f] to nil), so SetNull does not allocate in steady state.
	nullStore [][]bool
}

// NewTable returns an empty table for s with its column slices allocated.
func NewTable(s *Schema) *Table {
	t := &Table{
		Schema: s,
		Floats: make([][]float64, len(s.Fields)),
		Ints:   make([][]int64, len(s.Fields)),
		Null:   make([][]bool, len(s.Fields)),
	}
	return t
}

// SetNull marks field f of row i (0 <= i < Len()) as null. When Null[f]
// is nil it is created, all false, from storage the table keeps across
// Resets, so sources that mark nulls do not allocate in steady state.
// Rows appended after a SetNull must be covered by PadNulls before the
// batch is handed to a sink.
func (t *Table) SetNull(f, i int) {
	if t.nullStore == nil {
		t.nullStore = make([][]bool, len(t.Null))
	}
	n := t.Null[f]
	if n == nil {
		n = t.nullStore[f][:0]
	}
	for len(n) <= i {
		n = append(n, false)
	}
	n[i] = true
	t.Null[f] = n
	if cap(n) > cap(t.nullStore[f]) {
		t.nullStore[f] = n
	}
}

// PadNulls extends every non-nil Null[f] with false up to Len() rows, so
// that each has one entry per row as sinks expect.
func (t *Table) PadNulls() {
	rows := t.Len()
	for f, n := range t.Null {
		if n == nil || len(n) == rows {
			continue
		}
		for len(n) < rows {
			n = append(n, false)
		}
		t.Null[f] = n
		if cap(n) > cap(t.nullStore[f]) {
			t.nullStore[f] = n
		}
	}
}

// Len is the number of rows in the table.
func (t *Table) Len() int { return len(t.Time) }

// Reset truncates every column, keeping capacity.
func (t *Table) Reset() {
	t.Device = t.Device[:0]
	t.Time = t.Time[:0]
	for i := range t.Floats {
		if t.Floats[i] != nil {
			t.Floats[i] = t.Floats[i][:0]
		}
		if t.Ints[i] != nil {
			t.Ints[i] = t.Ints[i][:0]
		}
		t.Null[i] = nil
	}
}

// Op is the kind of a key-value operation (YCSB core workload).
type Op uint8

const (
	// OpRead reads a record (all fields, or one).
	OpRead Op = iota
	// OpUpdate overwrites one field (or all) of an existing record.
	OpUpdate
	// OpInsert creates a new record.
	OpInsert
	// OpScan reads ScanLen records in key order starting at the key.
	OpScan
	// OpRMW reads a record, then updates it.
	OpRMW
	// NumOps is the number of operation kinds.
	NumOps
)

var opNames = [NumOps]string{"read", "update", "insert", "scan", "rmw"}

// String returns the metric label of the op: read, update, insert, scan, rmw.
func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return "unknown"
}

// KVOp is one key-value operation. Its key is Keys[KeyOff:KeyOff+KeyLen]
// of the batch. For writes (update, insert, rmw) the field values are
// Values[ValOff:ValOff+ValLen]: the batch's FieldLength-byte values of the
// written fields, back to back.
type KVOp struct {
	Op      Op
	Field   int16 // field index for single-field read/update; -1 = all fields
	ScanLen int32 // records to scan (OpScan)
	KeyOff  uint32
	KeyLen  uint32
	ValOff  uint32
	ValLen  uint32
	// Record is the record number the key was built from (the YCSB key
	// number before hashing); sinks that keep a scan index use it.
	Record uint64
}

// Batch is one unit of work: the rows of a write or the operations of a
// pipeline. The worker that owns a batch resets and refills it for every
// write; a sink must not keep any part of it after Write returns.
type Batch struct {
	// Series: one table per schema of the source, in Schemas order. Tables
	// with no rows are skipped by sinks.
	Tables []*Table
	// Query: the queries to run, one after the other; the sink sets each
	// one's Rows.
	Queries []Query
	// KV: operations with their keys and values in the arenas.
	Ops    []KVOp
	Keys   []byte
	Values []byte
	// Fields and FieldLength describe KV records: field names are
	// "field0".."field<Fields-1>", each value FieldLength bytes.
	Fields      int
	FieldLength int
	// NumValues counts the non-null field values the source put in this
	// batch (series), for soakd_values_total.
	NumValues int
}

// NewSeriesBatch returns a batch with one empty table per schema.
func NewSeriesBatch(schemas []*Schema) *Batch {
	b := &Batch{Tables: make([]*Table, len(schemas))}
	for i, s := range schemas {
		b.Tables[i] = NewTable(s)
	}
	return b
}

// Reset empties the batch, keeping every buffer's capacity.
func (b *Batch) Reset() {
	for _, t := range b.Tables {
		t.Reset()
	}
	b.Ops = b.Ops[:0]
	b.Queries = b.Queries[:0]
	b.Keys = b.Keys[:0]
	b.Values = b.Values[:0]
	b.NumValues = 0
}

// Len is the number of units in the batch: rows for series, operations
// for KV, queries for query batches.
func (b *Batch) Len() int {
	n := len(b.Ops) + len(b.Queries)
	for _, t := range b.Tables {
		n += t.Len()
	}
	return n
}

// Key returns the key of op as a slice of the batch's key arena.
func (b *Batch) Key(op *KVOp) []byte { return b.Keys[op.KeyOff : op.KeyOff+op.KeyLen] }

// Value returns the field values written by op.
func (b *Batch) Value(op *KVOp) []byte { return b.Values[op.ValOff : op.ValOff+op.ValLen] }
