package kv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/soakd/soakd/sources"
)

// Source is the YCSB core workload. It implements sources.Source,
// sources.Batcher, sources.Preloader and sources.Shaped.
//
// Records are numbered 0..RECORDS-1; a shard i/N owns the records r with
// r mod N == i, and works on them through their index j (r = j*N + i), so
// shards never touch each other's keys. Record r's key is KEY_PREFIX +
// "user" + fnv64(r). Run-phase inserts take the next index from a counter
// shared by all streams of the source, so they continue the key space
// without collisions; an insert counts as present for reads once the
// stream that generated it has been asked for its next batch (the worker
// has finished writing the batch holding it), as YCSB's acknowledged
// counter does.
type Source struct {
	cfg   Config
	seed  uint64
	shard sources.Shard
	dist  Distribution
	// owned is the number of records of this shard loaded by the load phase.
	owned uint64
	// cum is the cumulative operation mix, for choosing an op with one draw.
	cum    [sources.NumOps]float64
	shape  sources.KVShape
	prefix []byte
	// pool is random printable bytes that values are copied from (see
	// values.go).
	pool []byte
	zeta *zeta

	inserts   bool
	nextIndex atomic.Uint64 // next record index an insert takes
	mu        sync.Mutex
	streams   atomic.Pointer[[]*stream]
}

var (
	_ sources.Source    = (*Source)(nil)
	_ sources.Batcher   = (*Source)(nil)
	_ sources.Preloader = (*Source)(nil)
	_ sources.Shaped    = (*Source)(nil)
	_ sources.UnitSizer = (*Source)(nil)
)

// New builds the source for one shard. It is cheap (no I/O; a value pool
// of 64 KiB, or twice FIELD_LENGTH when that is larger, and a few hundred
// floats of zipfian constants).
// With WORKLOAD=load it returns a *LoadSource, a finite source.
func New(c Config, seed uint64, shard sources.Shard) (sources.Source, error) {
	s, err := newSource(c, seed, shard)
	if err != nil {
		return nil, err
	}
	if c.Workload.Name == "load" {
		return &LoadSource{s}, nil
	}
	return s, nil
}

func newSource(c Config, seed uint64, shard sources.Shard) (*Source, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	shard, err := shard.Checked()
	if err != nil {
		return nil, err
	}
	// Validate accepted it; this makes it lower case.
	dt, _ := sources.ParseDataType(string(c.DataType))
	owned := ownedCount(uint64(c.Records), shard)
	if owned == 0 {
		return nil, sources.Invalid("RECORDS", "%d records cannot be split into %d shards: shard %s owns none", c.Records, shard.Count, shard)
	}
	s := &Source{
		cfg:     c,
		seed:    seed,
		shard:   shard,
		dist:    c.dist(),
		owned:   owned,
		prefix:  []byte(c.KeyPrefix),
		shape:   sources.KVShape{DataType: dt, KeyPrefix: c.KeyPrefix, Scans: c.Workload.Has(sources.OpScan)},
		inserts: c.Workload.Has(sources.OpInsert) && c.Workload.Name != "load",
	}
	acc := 0.0
	for op := range s.cum {
		acc += c.Workload.Mix[op]
		s.cum[op] = acc
	}
	s.cum[sources.NumOps-1] = math.Inf(1) // rounding never falls off the end
	z := newZeta(zipfTheta)
	s.zeta = &z
	// Values are copied one field at a time, so the pool only needs room
	// for a field at many offsets.
	s.pool = valuePool(seed, max(64<<10, 2*c.FieldLength))
	s.nextIndex.Store(owned)
	empty := []*stream{}
	s.streams.Store(&empty)
	return s, nil
}

// ownedCount is the number of records r < records with r mod N == i.
func ownedCount(records uint64, sh sources.Shard) uint64 {
	n, i := uint64(sh.Count), uint64(sh.Index)
	if i >= records {
		return 0
	}
	return (records - i + n - 1) / n
}

// valuePool returns n random printable ASCII bytes (a function of seed).
func valuePool(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x76616c756573))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(' ' + 1 + r.IntN('~'-' ')) // '!'..'~'
	}
	return p
}

// Name returns "kv".
func (s *Source) Name() string { return "kv" }

// Kind returns sources.KV.
func (s *Source) Kind() sources.Kind { return sources.KV }

// Schemas returns nil: KV sources have no tables.
func (s *Source) Schemas() []*sources.Schema { return nil }

// Shape returns DATA_TYPE and KEY_PREFIX, for the sink.
func (s *Source) Shape() sources.KVShape { return s.shape }

// NewBatch returns an empty batch describing this source's records.
func (s *Source) NewBatch() *sources.Batch {
	return &sources.Batch{Fields: s.cfg.Fields, FieldLength: s.cfg.FieldLength}
}

// Stream returns the operation stream of worker part of parts. Every
// stream chooses among all records of the shard, with its own random
// sequence (a function of SEED, the shard and part).
func (s *Source) Stream(part, parts int) (sources.Stream, error) {
	if parts < 1 || part < 0 || part >= parts {
		return nil, fmt.Errorf("kv: stream %d of %d: want 0 <= part < parts", part, parts)
	}
	st := &stream{
		src:  s,
		part: part,
		rng:  rand.New(rand.NewPCG(s.seed, streamSalt(s.shard, part, parts))),
	}
	st.pending.Store(math.MaxUint64)
	switch s.dist {
	case Uniform:
		st.choose = uniformChooser{}
	case Latest:
		st.choose = latestChooser{g: newZipf(s.zeta, 1)}
	case Hotspot:
		st.choose = hotspotChooser{data: s.cfg.HotspotData, ops: s.cfg.HotspotOps}
	default:
		st.choose = scrambledChooser{g: newZipf(s.zeta, scrambledItems)}
	}
	if s.inserts {
		s.mu.Lock()
		old := *s.streams.Load()
		next := make([]*stream, len(old), len(old)+1)
		copy(next, old)
		next = append(next, st)
		s.streams.Store(&next)
		s.mu.Unlock()
	}
	return st, nil
}

func streamSalt(sh sources.Shard, part, parts int) uint64 {
	return fnv64(uint64(sh.Index)<<40 ^ uint64(sh.Count)<<20 ^ uint64(part)<<8 ^ uint64(parts))
}

// present is the number of record indexes that reads may choose: the
// loaded ones plus the inserts whose batches have been written, i.e. below
// the lowest index still pending in any stream.
func (s *Source) present() uint64 {
	if !s.inserts {
		return s.owned
	}
	n := s.nextIndex.Load()
	for _, st := range *s.streams.Load() {
		if p := st.pending.Load(); p < n {
			n = p
		}
	}
	return n
}

// record maps a record index of this shard to its record number.
func (s *Source) record(j uint64) uint64 {
	return j*uint64(s.shard.Count) + uint64(s.shard.Index)
}

// appendKey appends the key of record r: KEY_PREFIX + "user" + fnv64(r).
func (s *Source) appendKey(b *sources.Batch, op *sources.KVOp, r uint64) {
	op.Record = r
	op.KeyOff = uint32(len(b.Keys))
	b.Keys = append(b.Keys, s.prefix...)
	b.Keys = append(b.Keys, "user"...)
	b.Keys = strconv.AppendUint(b.Keys, fnv64(r), 10)
	op.KeyLen = uint32(len(b.Keys)) - op.KeyOff
}

// stream is one worker's operation generator.
type stream struct {
	src    *Source
	rng    *rand.Rand
	part   int
	seq    uint64 // operations generated so far: the next one's sequence number
	choose chooser
	// pending is the lowest insert index handed out in the batch being
	// written, MaxUint64 when none; present() keeps reads below it.
	pending atomic.Uint64
}

// Fill appends max operations drawn from the workload mix. It never
// returns ErrDone: the run is as long as the engine says.
func (st *stream) Fill(b *sources.Batch, max int, _ int64) error {
	s := st.src
	c := &s.cfg
	// The previous batch of this stream has been written: its inserts are
	// now visible to reads.
	st.pending.Store(math.MaxUint64)
	n := s.present()
	for range max {
		seq := st.seq
		st.seq++
		u := st.rng.Float64()
		op := sources.Op(0)
		for u >= s.cum[op] {
			op++
		}
		b.Ops = append(b.Ops, sources.KVOp{Op: op, Field: -1})
		o := &b.Ops[len(b.Ops)-1]
		if op == sources.OpInsert {
			if st.pending.Load() == math.MaxUint64 {
				// A lower bound first, so present() never counts the
				// index taken below as written.
				st.pending.Store(s.nextIndex.Load())
			}
			j := s.nextIndex.Add(1) - 1
			r := s.record(j)
			s.appendKey(b, o, r)
			s.appendValues(b, o, r, 0, c.Fields, 0)
			continue
		}
		r := s.record(st.choose.next(st.rng, n))
		s.appendKey(b, o, r)
		switch op {
		case sources.OpRead, sources.OpScan:
			if !c.ReadAll {
				o.Field = int16(st.rng.IntN(c.Fields))
			}
			if op == sources.OpScan {
				o.ScanLen = int32(1 + st.rng.IntN(c.ScanLength))
			}
		case sources.OpUpdate, sources.OpRMW:
			v := updateVersion(st.part, seq)
			if c.WriteAll {
				s.appendValues(b, o, r, 0, c.Fields, v)
			} else {
				o.Field = int16(st.rng.IntN(c.Fields))
				s.appendValues(b, o, r, int(o.Field), 1, v)
			}
		}
	}
	return nil
}

// Position is the number of operations the stream has generated (see
// sources.Position).
func (st *stream) Position() sources.Position { return sources.Position{Unit: int64(st.seq)} }

// loadStream inserts the record indexes [lo, hi) of the shard in order.
// A record's values are the same whichever stream inserts it.
type loadStream struct {
	src    *Source
	lo, hi uint64
}

func (s *Source) loadStream(part, parts int) *loadStream {
	lo := s.owned * uint64(part) / uint64(parts)
	hi := s.owned * uint64(part+1) / uint64(parts)
	return &loadStream{src: s, lo: lo, hi: hi}
}

// Fill appends up to max inserts and returns sources.ErrDone with the
// last of them.
func (ls *loadStream) Fill(b *sources.Batch, max int, _ int64) error {
	s := ls.src
	for i := 0; i < max && ls.lo < ls.hi; i++ {
		b.Ops = append(b.Ops, sources.KVOp{Op: sources.OpInsert, Field: -1})
		o := &b.Ops[len(b.Ops)-1]
		r := s.record(ls.lo)
		s.appendKey(b, o, r)
		s.appendValues(b, o, r, 0, s.cfg.Fields, 0)
		ls.lo++
	}
	if ls.lo >= ls.hi {
		return sources.ErrDone
	}
	return nil
}

// Position is the index of the next record the load inserts (see
// sources.Position): the records of index [from.Unit, to.Unit) of the
// shard are those between two positions.
func (ls *loadStream) Position() sources.Position { return sources.Position{Unit: int64(ls.lo)} }

// LoadSource is the finite load phase: it inserts every record of the
// shard once, split between the streams in order. It is what
// WORKLOAD=load runs and what Preload returns.
type LoadSource struct{ *Source }

var (
	_ sources.Source = (*LoadSource)(nil)
	_ sources.Sized  = (*LoadSource)(nil)
)

// Stream returns part of parts of the load.
func (l *LoadSource) Stream(part, parts int) (sources.Stream, error) {
	if parts < 1 || part < 0 || part >= parts {
		return nil, fmt.Errorf("kv: load stream %d of %d: want 0 <= part < parts", part, parts)
	}
	return l.loadStream(part, parts), nil
}

// Total is the number of records the load inserts (this shard's).
func (l *LoadSource) Total() int64 { return int64(l.owned) }

// Preload returns nil: a load has no load phase before it.
func (l *LoadSource) Preload() (sources.Source, func(b *sources.Batch), error) { return nil, nil, nil }

// probeSamples is how many records the load probe reads.
const probeSamples = 1000

// Preload returns the load phase (LOAD=auto): a finite source inserting
// the shard's records, and a probe that reads up to 1000 of them spread
// evenly over the shard (including the first and the last). It returns a
// nil load for LOAD=off. (WORKLOAD=load is a *LoadSource, whose Preload
// returns nil.)
func (s *Source) Preload() (sources.Source, func(b *sources.Batch), error) {
	if s.cfg.Load == LoadOff {
		// No load, but the probe still checks that the records there
		// are of this DATA_TYPE.
		return nil, s.probe, nil
	}
	return &LoadSource{s}, s.probe, nil
}

// AlwaysLoad reports LOAD=on: the load phase runs even when the probe
// finds every record.
func (s *Source) AlwaysLoad() bool { return s.cfg.Load == LoadOn }

func (s *Source) probe(b *sources.Batch) {
	n := min(s.owned, probeSamples)
	for k := range n {
		j := uint64(0)
		if n > 1 {
			j = k * (s.owned - 1) / (n - 1)
		}
		b.Ops = append(b.Ops, sources.KVOp{Op: sources.OpRead, Field: -1})
		s.appendKey(b, &b.Ops[len(b.Ops)-1], s.record(j))
	}
}

// Ops returns the ops the workload's mix issues (those of non-zero
// proportion), so a setting that judges an op can refuse one that never
// comes (SOAKD_CAPACITY_SLO_OP).
func (s *Source) Ops() []sources.Op {
	var out []sources.Op
	for op := range sources.Op(sources.NumOps) {
		if s.cfg.Workload.Has(op) {
			out = append(out, op)
		}
	}
	return out
}

// Ops returns insert: the load phase issues nothing else.
func (s *LoadSource) Ops() []sources.Op { return []sources.Op{sources.OpInsert} }
