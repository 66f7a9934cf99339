package sources

import "math"

// Verification: soakd checks what a target stored against what its
// generators must have made, without keeping a copy of the data. The
// engine records where each stream was when each batch was written
// (Positioner), so a verifier can tell which units a range of
// acknowledged or failed writes held; series sources regenerate one
// device's rows alone (Replayer) or any row from its identity (RowSource);
// KV sources check a stored record against what a write must have left
// (RecordChecker).

// Position is a place in a stream's sequence of units, between two units.
// Positions of one stream are ordered lexicographically (Round, then
// Device, then Unit) in the order the stream emits its units. Series
// streams emit rounds of devices in ascending order: a row is at
// (round, device, i), its device's i-th row of that round, and the
// position of a stream that has finished round r is (r, EndOfRound, 0).
// KV streams count operations: Round and Device are 0, Unit is the number
// of operations the stream generated before.
type Position struct {
	Round  int64 `json:"round"`
	Device int64 `json:"device"`
	Unit   int64 `json:"unit"`
}

// EndOfRound is the Device of a position after every device of a round.
const EndOfRound = math.MaxUint32

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	if p.Round != q.Round {
		return p.Round < q.Round
	}
	if p.Device != q.Device {
		return p.Device < q.Device
	}
	return p.Unit < q.Unit
}

// Positioner is implemented by streams that report their place in their
// sequence: the position after the last unit appended by Fill. The
// engine calls it between Fills, from the goroutine that holds the
// stream; it must not allocate.
type Positioner interface {
	Position() Position
}

// Replayer is implemented by series sources that can regenerate one
// device's rows on their own, exactly as the device's stream emitted
// them, whichever worker, shard or process made them. soakd verify
// replays every device; VERIFY replays the devices it samples.
type Replayer interface {
	// AllDevices is the number of devices of the whole data set, all shards
	// together: devices are numbered 0..Devices-1 and this shard owns
	// those its sources.Shard owns.
	AllDevices() uint32
	// Replay returns device's rows, or an error when the source cannot
	// replay them (e.g. rows stamped with the wall clock) or the device is
	// not this shard's.
	Replay(device uint32) (DeviceReplay, error)
}

// Churner is implemented by series sources whose devices are replaced
// over time (CHURN): a device number in a row names an identity (its tag
// values), and each identity holds one of the AllDevices slots for a
// while. Replay takes a slot (or any identity that held it) and replays
// every identity of that slot in turn, each row carrying its own device.
type Churner interface {
	// Churning reports whether devices are replaced at all.
	Churning() bool
	// Slot is the slot device d holds (d itself without churn).
	Slot(d uint32) uint32
}

// ChurnFigures is what CHURN did so far in one shard: the summary's and
// /status's "churn" field.
type ChurnFigures struct {
	// Setting is CHURN as it prints (10%/10m0s).
	Setting string `json:"setting"`
	// Devices is the number of devices reporting at any time (the
	// shard's share of SCALE); Replaced how many of them were replaced
	// so far, each by a new device.
	Devices  int64 `json:"devices"`
	Replaced int64 `json:"replaced"`
	// DevicesCreated is Devices + Replaced: every device that reported,
	// each with its own tag values. SeriesCreated is DevicesCreated ×
	// the field columns of a reading, the series of a target that keeps
	// one per device and field (Prometheus remote write); TableSeries is
	// DevicesCreated × tables, those of one per device and table
	// (InfluxDB's series, rows of layout=tsbs's tags table per table).
	DevicesCreated int64 `json:"devices_created"`
	SeriesCreated  int64 `json:"series_created"`
	TableSeries    int64 `json:"table_series_created"`
}

// ChurnReporter is implemented by Churners that count what churn did.
type ChurnReporter interface {
	Churner
	ChurnFigures() ChurnFigures
}

// DeviceReplay generates one device's rows in the order its stream emits
// them. It is used by one goroutine.
type DeviceReplay interface {
	// Next appends the device's next row to its table in b (a batch of the
	// source's schemas) and returns the table's index and the row's
	// position in the stream that owns the device. It returns ErrDone,
	// appending nothing, after the last row of a finite data set.
	Next(b *Batch) (table int, pos Position, err error)
}

// RowSource is implemented by series sources whose rows can be pure
// functions of (device, time): then any row can be recomputed on its own,
// without replaying the device. Its methods are safe for concurrent use.
type RowSource interface {
	// PureRows reports whether AppendRow recomputes rows with the
	// source's settings.
	PureRows() bool
	// AppendRow appends to t (a table of the source's schema number table)
	// the row device would have at ts, or reports false when the data set
	// has no such row.
	AppendRow(t *Table, table int, device uint32, ts int64) bool
}

// Resolved is implemented by sources some of whose settings are fixed
// only when the source is built (START=now). Resolved returns them as the
// values they took (names without the SOAKD_<W>_ prefix), so that a
// verifier rebuilds the same data set later.
type Resolved interface {
	Resolved() map[string]string
}

// StoredRecord is a KV record as a target holds it, read back for
// verification.
type StoredRecord struct {
	// Found is false when the target has no record under the key.
	Found bool
	// Values holds field i's value at index i (nil when the record lacks
	// the field), or, when Unordered, the record's members in no order
	// (DATA_TYPE=set keeps values, not fields).
	Values    [][]byte
	Unordered bool
	// Extra counts values beyond one per field: members of a sorted set
	// whose score names no field or a field already seen, hash fields
	// outside field0..field<FIELDS-1>, bytes of a string record past its
	// fields.
	Extra int
}

// Verdict is the result of checking one unit.
type Verdict uint8

// Verdicts.
const (
	// Intact: the unit is stored as it must be.
	Intact Verdict = iota
	// Missing: the unit is not stored.
	Missing
	// Mismatch: the unit is stored with other values.
	Mismatch
	// Duplicate: the unit is stored more than once.
	Duplicate
)

var verdictNames = [...]string{"intact", "missing", "mismatch", "duplicate"}

// String returns intact, missing, mismatch or duplicate (the kind label
// of soakd_verify_failures_total).
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "unknown"
}

// RecordChecker is implemented by KV sources whose written values can be
// checked: each write's values carry what is needed to recompute them.
// Methods are safe for concurrent use.
type RecordChecker interface {
	// Written returns the record op writes and the version of the values
	// it writes; ok is false for an op that writes nothing (read, scan).
	Written(b *Batch, op *KVOp) (record, version uint64, ok bool)
	// AppendKey appends record's key to dst.
	AppendKey(dst []byte, record uint64) []byte
	// Check compares got, what the target holds for record, with what an
	// acknowledged write of version to field (-1: every field) must have
	// left: Missing when there is no record, Mismatch when a value is not
	// one this source writes for that record and field, or is older than
	// version (as far as versions can be ordered), Intact otherwise.
	Check(record uint64, field int, version uint64, got *StoredRecord) Verdict
}
