package sinks

import (
	"context"
	"time"

	"github.com/soakd/soakd/sources"
)

// Optional capabilities. A sink implements Sink (sink.go) and, beside it,
// any of the interfaces below; the engine and soakd's commands find them
// with a type assertion and do without when a sink lacks one. This file
// lists every one, so that a new sink can see what it may offer:
//
//   - Preparer: creates the target's schema before the first write.
//   - Pinger: tells whether the target is reachable, for /readyz.
//   - Versioner: asks the target for its version, for reports.
//   - Resetter: empties what soakd wrote, for soakd sweep's resets.
//   - Prober: counts the keys a KV batch reads that exist, for the load phase.
//   - SeriesReader: reads series rows back, for verification.
//   - KVReader: reads KV records back, for verification.
//   - ConnCounter: counts its open connections, for soakd_target_connections.
//   - Querier: runs a query workload's queries alone, for tests that compare targets.
//   - TargetWatcher: reads the target's own memory, storage, CPU, keys and series, for soakd_target_*.
//   - Noter: what the target made of the settings, for the summary (notes.go).

// Preparer is implemented by sinks that create their schema (tables,
// databases, buckets) before the first write. The engine calls Prepare
// once, retrying with backoff while it fails with a connection or timeout
// error; it must be idempotent.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Pinger is implemented by sinks that can tell whether their target is
// reachable; /readyz reports false while Ping fails.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Versioner is implemented by sinks that can ask their target for its
// version (for reports: SELECT version(), INFO server, /ping headers).
type Versioner interface {
	ServerVersion(ctx context.Context) (string, error)
}

// Resetter is implemented by sinks that can empty what soakd wrote to
// their target, and only that (its own tables, keys under its prefix):
// soakd sweep does it before each point when SOAKD_SWEEP_RESET=true asks.
type Resetter interface {
	Reset(ctx context.Context) error
}

// Prober is implemented by KV sinks for the load phase (see
// sources.Preloader): Present returns how many of the keys read by b's
// operations exist in the target. When the target holds records the
// workload's settings cannot use (e.g. of another DATA_TYPE), Present
// returns a *sources.SettingError naming the setting, and the engine
// stops the run as misconfigured before any operation is sent.
type Prober interface {
	Present(ctx context.Context, b *sources.Batch) (int, error)
}

// Settler is implemented by sinks whose target makes what it acknowledged
// readable only some seconds later (VictoriaMetrics makes rows searchable
// as it flushes them, every few seconds): soakd verify calls Settle
// before reading a finished run back, so the run's last rows are not
// taken for lost. An error says the newest rows may not be readable yet.
type Settler interface {
	Settle(ctx context.Context) error
}

// SeriesReader is implemented by series sinks that can read rows back
// (VERIFY, package readback). The read-back checker calls it from one
// goroutine per workload while Write runs in others; soakd verify calls
// it alone.
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

// KVReader is implemented by KV sinks that can read records back
// (VERIFY, package readback). Like SeriesReader, the read-back checker
// calls it from one goroutine while Write runs.
type KVReader interface {
	// ReadRecords reads the record under keys[i] into out[i] (which it
	// overwrites), in one round trip where the protocol allows.
	ReadRecords(ctx context.Context, keys []string, shape RecordShape, out []sources.StoredRecord) error
}

// ConnCounter is implemented by sinks that count the connections they
// have open (most with Conns); the engine exports the count as
// soakd_target_connections, and keeps asking after the sink is closed.
type ConnCounter interface {
	OpenConns() int64
}

// Querier is implemented by sinks that accept query workloads
// (sources.Queries, query.go): besides running a batch's queries in
// Write, they run one query alone and say what they send, for tests that
// compare targets. QueryState gives a sink every method but QueryRows.
type Querier interface {
	// QueryRows runs q alone, sets q.Rows, and returns what it returned.
	QueryRows(ctx context.Context, q *sources.Query) (*QueryResult, error)
	// QueryText renders q as the sink sends it (SQL, InfluxQL), over the
	// data range it saw last.
	QueryText(q *sources.Query) (string, error)
	// DataRange is the data's time range as the sink saw it last.
	DataRange() sources.DataRange
	// RefreshRange reads the data's time range now.
	RefreshRange(ctx context.Context) error
}

// TargetWatcher is implemented by sinks that can read the target's own
// figures: its memory, the storage soakd's data takes, its CPU time, and
// counts such as its keys or active series (TargetFigures.Stats).
// They are read at a low interval (SOAKD_<W>_WATCH_INTERVAL) from a
// goroutine of their own, never on the write path, while Write runs.
type TargetWatcher interface {
	// TargetFigures reads the target's figures now. A figure the sink
	// cannot read (a permission missing, a managed service that hides
	// it) is left out and named in Unavailable with why; an error means
	// none could be read this time (the target is down).
	TargetFigures(ctx context.Context) (TargetFigures, error)
}

// TargetFigures are a target's own figures at one reading. Kinds are short
// snake_case names a sink documents (used, rss for Redis' memory; table,
// index, wal, database for PostgreSQL's storage), exported as the kind
// label of soakd_target_memory_bytes and soakd_target_storage_bytes.
type TargetFigures struct {
	Memory  map[string]float64 // bytes, by kind
	Storage map[string]float64 // bytes, by kind
	// CPUSeconds is the target's CPU time so far (user + system), when
	// it reports one; HasCPU says whether it does.
	CPUSeconds float64
	HasCPU     bool
	// Stats are the target's figures that are neither bytes nor
	// seconds, by the names below, those it gives: each is exported as a
	// family of its own (soakd_target_keys, ...).
	Stats map[string]float64
	// Unavailable names each figure the sink could not read, with why.
	Unavailable map[string]string
	// Instance names the server process that answered (Redis: INFO
	// server's run_id, a cluster's masters' together), "" when the sink
	// cannot tell: another name at a later reading is a restart, after
	// which a target without persistence holds none of what it held.
	Instance string
}

// The names of TargetFigures.Stats, which are also the keys of those not
// read in TargetFigures.Unavailable. A sink gives those its kind of
// target has, and names the others unavailable only where its kind has
// them (a Redis that hides INFO keyspace, not a PostgreSQL).
const (
	// StatKeys is the number of keys the target holds, over all its
	// databases (Redis' INFO keyspace).
	StatKeys = "keys"
	// StatEvictions is the number of keys the target has evicted to stay
	// under its memory limit since it started: a counter (Redis'
	// evicted_keys).
	StatEvictions = "evictions"
	// StatFragmentation is the target's memory fragmentation ratio, the
	// memory the system gives it over what its allocator holds (Redis'
	// mem_fragmentation_ratio).
	StatFragmentation = "memory_fragmentation_ratio"
	// StatActiveSeries is the number of series the target holds in
	// memory as active (Prometheus' head series, VictoriaMetrics' series
	// written in the current hour).
	StatActiveSeries = "active_series"
	// StatDiscarded is the number of values (samples) the target
	// answered as written but did not store, since it started: a counter
	// (VictoriaMetrics' vm_rows_ignored_total, whatever the reason: a
	// timestamp older than its retention or more than two days ahead, too
	// many labels; and vm_rows_invalid_total, lines it could not parse).
	// Writes it discards are acknowledged without a word. A sink may give
	// the count by reason too, as StatDiscarded.REASON (AddDiscarded).
	StatDiscarded = "discarded"
	// StatFlushes is the number of commands that emptied a database of
	// the target since it started: a counter (Redis' FLUSHALL and
	// FLUSHDB calls, INFO commandstats); the target watch warns when it
	// rises during a run.
	StatFlushes = "flushes"
)

// Stats are the names of TargetFigures.Stats, in the order reports list
// them.
var Stats = []string{StatKeys, StatEvictions, StatFragmentation, StatActiveSeries, StatDiscarded, StatFlushes}
