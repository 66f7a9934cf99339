package readback

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/logthrottle"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// VERIFY: continuous read-back. After a batch is acknowledged, the worker
// picks a fraction of its units (rows or KV writes) and queues them for
// the workload's checker goroutine, which reads them back VERIFY_DELAY
// later and compares what the target holds with what the source says it
// must hold, recomputed from the seed. The queue is bounded: when the
// checker is behind, picked units are skipped and counted, never
// buffered, and the write schedule never waits for it. The checker's
// reads have their own latency (op "verify"), kept with the phase's
// other latencies.
//
// Series rows are picked by a hash of (device, time), whole readings at
// a time (a reading's rows in every table of the batch), so the checker
// sees each device's readings in the order its stream emitted them.
// Sources whose rows are pure functions of (device, time) recompute each
// row on its own; walks (devops, iot) are replayed device by device, one
// cursor per device, and to keep that memory bounded only about
// maxCursors devices are picked from (more often each). Rows stamped with
// the wall clock cannot be replayed: for those sources the checker reads
// rows back for presence and duplicates only.

// verifyQueue bounds the units waiting for the checker (about 100 bytes
// each).
const verifyQueue = 4096

// verifyGroup is how many units the checker reads back in one round trip.
const verifyGroup = 64

// maxCursors bounds the devices whose walks the checker replays.
const maxCursors = 4096

// vsample is a unit picked for checking.
type vsample struct {
	rb  daemon.ReadBack // the tally of the phase that wrote it
	due time.Duration   // mono time to read it back
	// series: the reading of device at ts, in the tables of the mask;
	// before is the position of the stream after the batch that held it
	device uint32
	ts     int64
	tables uint64
	before sources.Position
	// kv: the write of version to field (-1: all) of record
	record, version uint64
	field           int16
}

// verifier is a workload's read-back checker: the daemon.WriteFollower
// of its writes.
type verifier struct {
	log      *zap.Logger
	scrub    func(string) string // removes the workload's secrets from error text
	done     chan struct{}       // closed when run returns
	fraction float64
	delay    time.Duration
	queue    chan vsample
	errLog   *logthrottle.Throttle
	timeout  time.Duration

	// series
	sr      sinks.SeriesReader
	res     int64 // the target's time resolution, ns
	schemas []*sources.Schema
	pure    sources.RowSource  // rows recomputed on their own, or nil
	replay  sources.Replayer   // rows replayed per device, or nil
	churn   sources.Churner    // devices replaced over time (CHURN), or nil
	cursors map[uint32]*cursor // by slot (the device without CHURN)
	thr     uint64             // pick a reading when its hash is below thr
	mod     uint64             // ... and its device's hash is 0 modulo mod
	// scratch, reused by each group
	exp  []*sources.Table   // expected rows, one table per schema
	outs [][]*sources.Table // read-back tables per schema
	qs   []sinks.SeriesQuery
	qx   []qref

	// kv
	kr    sinks.KVReader
	rc    sources.RecordChecker
	shape sinks.RecordShape
	keys  []string
	recs  []sources.StoredRecord
	// unloaded are the records whose insert was not acknowledged (up to
	// maxUnloaded; unloadedFull says there were more): an update of one
	// is acknowledged for the fields it wrote alone, and the record owes
	// none of the insert's.
	unloadedMu   sync.Mutex
	unloaded     map[uint64]struct{}
	unloadedFull bool
}

// maxUnloaded bounds the records a verifier remembers as not inserted,
// as the run's record of them is (past it, an update of such a record
// whose other fields are absent is counted missing).
const maxUnloaded = 100_000

// qref ties a read-back query to its sample and expected row.
type qref struct {
	sample int
	table  int
	exp    int // index in exp[table], -1 when values are not checked
}

// newVerifier builds w's checker when VERIFY is set, or returns nil. A
// target that cannot be read back is a configuration error naming
// VERIFY.
func newVerifier(w *daemon.Handle, log *zap.Logger) (*verifier, error) {
	c := w.Config()
	if c.Verify <= 0 {
		return nil, nil
	}
	src, sink := w.Source(), w.Sink()
	key := config.Prefix(c.Name) + "VERIFY"
	v := &verifier{log: log, scrub: c.Scrubber(), fraction: c.Verify, delay: c.VerifyDelay,
		queue: make(chan vsample, verifyQueue), errLog: logthrottle.New(10 * time.Second), timeout: c.Timeout}
	if v.timeout <= 0 {
		v.timeout = 30 * time.Second
	}
	if w.Kind() == sources.KV {
		kr, ok := sink.(sinks.KVReader)
		rc, ok2 := src.(sources.RecordChecker)
		if !ok || !ok2 {
			return nil, &settings.Error{Key: key, Err: fmt.Errorf("the target %s cannot read records back (or source %s cannot check them)", c.Sink.Redacted, c.Source)}
		}
		v.kr, v.rc = kr, rc
		b := newBatch(src)
		v.shape = sinks.RecordShape{Fields: b.Fields, FieldLength: b.FieldLength}
		v.thr = threshold(c.Verify)
		log.Info("verifying: reading back a fraction of the acknowledged writes", zap.Float64("fraction", c.Verify),
			zap.Duration("delay", c.VerifyDelay))
		return v, nil
	}
	sr, ok := sink.(sinks.SeriesReader)
	if !ok {
		return nil, &settings.Error{Key: key, Err: fmt.Errorf("the target %s cannot read rows back", c.Sink.Redacted)}
	}
	if err := sr.Readable(); err != nil {
		return nil, &settings.Error{Key: key, Err: err}
	}
	v.sr = sr
	v.res = max(int64(sr.Resolution()), 1)
	v.schemas = src.Schemas()
	if len(v.schemas) > 64 {
		return nil, &settings.Error{Key: key, Err: fmt.Errorf("source %s has %d tables; read-back handles up to 64", c.Source, len(v.schemas))}
	}
	for _, s := range v.schemas {
		v.exp = append(v.exp, sources.NewTable(s))
	}
	v.outs = make([][]*sources.Table, len(v.schemas))
	v.mod = 1
	if ch, ok := src.(sources.Churner); ok && ch.Churning() {
		v.churn = ch
	}
	mode := "recomputed from (device, time)"
	var why error
	if rs, ok := src.(sources.RowSource); ok && rs.PureRows() {
		v.pure = rs
	} else if rp, ok := src.(sources.Replayer); ok {
		sh := c.Shard
		if sh.Count < 1 {
			sh = sources.Shard{Index: 0, Count: 1}
		}
		if _, why = rp.Replay(uint32(sh.Index)); why == nil || uint64(sh.Index) >= uint64(rp.AllDevices()) {
			why = nil
			v.replay, v.cursors = rp, map[uint32]*cursor{}
			owned := uint64(rp.AllDevices()) / uint64(sh.Count)
			v.mod = max(1, (owned+maxCursors-1)/maxCursors)
			mode = "replayed per device"
		}
	} else {
		why = errors.New("the source cannot recompute its rows")
	}
	pick := min(1, c.Verify*float64(v.mod))
	v.thr = threshold(pick)
	fields := []zap.Field{zap.Float64("fraction", c.Verify), zap.Duration("delay", c.VerifyDelay)}
	switch {
	case why != nil:
		mode = "presence and duplicates only"
		fields = append(fields, zap.String("why", why.Error()))
	case v.mod > 1:
		fields = append(fields, zap.Uint64("devices_one_in", v.mod), zap.Float64("effective_fraction", pick/float64(v.mod)))
	}
	log.Info("verifying: reading back a fraction of the acknowledged rows, values "+mode, fields...)
	return v, nil
}

// newBatch returns an empty batch shaped for src, as the workers make
// theirs.
func newBatch(src sources.Source) *sources.Batch {
	if bs, ok := src.(sources.Batcher); ok {
		return bs.NewBatch()
	}
	return sources.NewSeriesBatch(src.Schemas())
}

// threshold maps a probability to a 64-bit hash bound.
func threshold(p float64) uint64 {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return math.MaxUint64
	}
	return uint64(p * (1 << 63) * 2)
}

// slot is the slot device d holds: d itself unless the source replaces
// devices (CHURN), whose replay and cursor are per slot.
func (v *verifier) slot(d uint32) uint32 {
	if v.churn != nil {
		return v.churn.Slot(d)
	}
	return d
}

// picked reports whether the reading of device d at ts is checked. The
// devices replayed are picked by slot, so that the cursors stay bounded
// however many devices CHURN brings in.
func (v *verifier) picked(d uint32, ts int64) bool {
	if v.mod > 1 && sources.Mix64(uint64(v.slot(d))*0x9e3779b97f4a7c15+1)%v.mod != 0 {
		return false
	}
	return sources.Mix64(uint64(d)*0x9e3779b97f4a7c15^uint64(ts)*0xc2b2ae3d27d4eb4f) < v.thr
}

// Written picks units from each acknowledged batch, and remembers the
// records a KV batch that failed inserted.
func (v *verifier) Written(p *daemon.Phase, b *sources.Batch, o daemon.WriteOutcome) {
	if o.Acked {
		v.pick(p.ReadBack(), b, after(o.Streams))
		return
	}
	if v.kr != nil {
		v.noteUnloaded(b)
	}
}

// noteUnloaded remembers the records b's inserts were to store.
func (v *verifier) noteUnloaded(b *sources.Batch) {
	v.unloadedMu.Lock()
	defer v.unloadedMu.Unlock()
	for i := range b.Ops {
		if b.Ops[i].Op != sources.OpInsert {
			continue
		}
		if v.unloaded == nil {
			v.unloaded = map[uint64]struct{}{}
		}
		if len(v.unloaded) >= maxUnloaded {
			v.unloadedFull = true
			return
		}
		v.unloaded[b.Ops[i].Record] = struct{}{}
	}
}

// owesInsert reports whether record's insert may have been acknowledged,
// so that fields an update did not write must hold values.
func (v *verifier) owesInsert(record uint64) bool {
	v.unloadedMu.Lock()
	defer v.unloadedMu.Unlock()
	_, failed := v.unloaded[record]
	return !failed
}

// after is where the batch's streams stood once it was filled: the
// furthest position of the streams it was filled from (the zero Position
// for one that does not report its position). Whatever the batch holds
// comes before it in its stream.
func after(spans []daemon.StreamSpan) sources.Position {
	if len(spans) == 0 {
		return sources.Position{Round: math.MaxInt64}
	}
	out := spans[0].To
	for _, s := range spans[1:] {
		if out.Less(s.To) {
			out = s.To
		}
	}
	return out
}

// pick queues the units of the acknowledged batch b that are checked,
// counting them into rb; before is where b's streams stood after it. It
// runs in the worker's goroutine and never blocks.
func (v *verifier) pick(rb daemon.ReadBack, b *sources.Batch, before sources.Position) {
	due := mono() + v.delay
	if v.kr != nil {
		for i := range b.Ops {
			op := &b.Ops[i]
			rec, ver, ok := v.rc.Written(b, op)
			if !ok || rand.Uint64() >= v.thr {
				continue
			}
			v.enqueue(vsample{rb: rb, due: due, record: rec, version: ver, field: op.Field})
		}
		return
	}
	// Walk the readings in emission order: each table holds the rows of
	// the batch's readings in the same order, but the first reading may
	// lack the first tables and the last the last ones (a reading cut
	// between two batches). The next reading is always the one at the
	// head of the last table not yet exhausted.
	tabs := b.Tables
	n := len(tabs)
	if n > 64 {
		return
	}
	var idx [64]int
	for {
		m := n - 1
		for m >= 0 && idx[m] >= tabs[m].Len() {
			m--
		}
		if m < 0 {
			return
		}
		d, ts := tabs[m].Device[idx[m]], tabs[m].Time[idx[m]]
		var mask uint64
		for k := range n {
			if t := tabs[k]; idx[k] < t.Len() && t.Device[idx[k]] == d && t.Time[idx[k]] == ts {
				mask |= 1 << k
				idx[k]++
			}
		}
		if v.picked(d, ts) {
			v.enqueue(vsample{rb: rb, due: due, device: d, ts: ts, tables: mask, before: before})
		}
	}
}

// enqueue hands s to the checker, or counts it as skipped when the
// checker is behind.
func (v *verifier) enqueue(s vsample) {
	select {
	case v.queue <- s:
	default:
		s.rb.Skipped(s.units())
	}
}

// units is the number of units s stands for: a KV write, or a reading's
// rows.
func (s *vsample) units() int64 {
	if s.tables != 0 {
		return int64(bits.OnesCount64(s.tables))
	}
	return 1
}

// Begin runs the checker until End; ctx (the run's drain context) bounds
// its waits and reads.
func (v *verifier) Begin(ctx context.Context) {
	v.done = make(chan struct{})
	go func() {
		defer close(v.done)
		v.run(ctx)
	}()
}

// End stops the checker once the units already queued are checked (or,
// once the drain context is done, skipped).
func (v *verifier) End() {
	close(v.queue)
	<-v.done
}

func (v *verifier) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	group := make([]vsample, 0, verifyGroup)
	for s := range v.queue {
		group = append(group[:0], s)
	more:
		for len(group) < verifyGroup {
			select {
			case s, ok := <-v.queue:
				if !ok {
					break more
				}
				group = append(group, s)
			default:
				break more
			}
		}
		due := group[len(group)-1].due
		if wait := due - mono(); wait > 0 && ctx.Err() == nil {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
		if ctx.Err() != nil {
			v.skip(group)
			continue
		}
		if v.kr != nil {
			v.checkRecords(ctx, group)
		} else {
			v.checkRows(ctx, group)
		}
	}
}

// skip counts group as picked but not checked.
func (v *verifier) skip(group []vsample) {
	for i := range group {
		group[i].rb.Skipped(group[i].units())
	}
}

// result counts units checked of sample s with their verdicts and
// records their latency.
func (v *verifier) result(s *vsample, verdicts []sources.Verdict, sent, done time.Duration) {
	s.rb.Checked(verdicts, done-s.due, done-sent)
}

func (v *verifier) readFailed(err error, group []vsample) {
	v.errLog.Warn(v.log, string(sinks.ClassOf(err)), "verify: cannot read back; the units are counted as skipped", v.scrub(err.Error()))
	v.skip(group)
}

// checkRecords reads back and checks a group of KV writes.
func (v *verifier) checkRecords(ctx context.Context, group []vsample) {
	v.keys = v.keys[:0]
	var key []byte
	for i := range group {
		key = v.rc.AppendKey(key[:0], group[i].record)
		v.keys = append(v.keys, string(key))
	}
	if cap(v.recs) < len(group) {
		v.recs = make([]sources.StoredRecord, len(group))
	}
	recs := v.recs[:len(group)]
	rctx, cancel := context.WithTimeout(ctx, v.timeout)
	sent := mono()
	err := v.kr.ReadRecords(rctx, v.keys, v.shape, recs)
	cancel()
	done := mono()
	if err != nil {
		v.readFailed(err, group)
		return
	}
	var vd [1]sources.Verdict
	for i := range group {
		s := &group[i]
		vd[0] = v.rc.Check(s.record, int(s.field), s.version, &recs[i])
		if vd[0] == sources.Missing && s.field >= 0 && recs[i].Found && !v.owesInsert(s.record) &&
			holds(&recs[i], int(s.field)) {
			// The record's insert failed (OOM at maxmemory, say): the
			// update, acknowledged, made it with the field it wrote,
			// which is there and checked; the others were never owed.
			vd[0] = sources.Intact
		}
		v.result(s, vd[:], sent, done)
	}
}

// holds reports whether rec holds a value in field (a set, whose members
// are no field's: any member).
func holds(rec *sources.StoredRecord, field int) bool {
	if rec.Unordered {
		return len(rec.Values) > 0
	}
	if field >= len(rec.Values) || rec.Values[field] == nil {
		return false
	}
	for _, c := range rec.Values[field] {
		if c != 0 {
			return true
		}
	}
	return false
}

// checkRows reads back and checks a group of series readings.
func (v *verifier) checkRows(ctx context.Context, group []vsample) {
	for _, e := range v.exp {
		e.Reset()
	}
	v.qs, v.qx = v.qs[:0], v.qx[:0]
	used := make([]int, len(v.schemas)) // read-back tables taken per schema
	var out []*sources.Table
	for si := range group {
		s := &group[si]
		var expIdx [64]int
		found := v.expect(s, &expIdx)
		ts := floorDiv(s.ts, v.res) * v.res
		for m := range v.schemas {
			if s.tables&(1<<m) == 0 {
				continue
			}
			if used[m] == len(v.outs[m]) {
				v.outs[m] = append(v.outs[m], sources.NewTable(v.schemas[m]))
			}
			t := v.outs[m][used[m]]
			used[m]++
			t.Reset()
			out = append(out, t)
			ref := qref{sample: si, table: m, exp: -1}
			if found&(1<<m) != 0 {
				ref.exp = expIdx[m]
			}
			v.qs = append(v.qs, sinks.SeriesQuery{Schema: v.schemas[m], Device: s.device, From: ts, To: ts})
			v.qx = append(v.qx, ref)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, v.timeout)
	sent := mono()
	err := v.sr.ReadSeries(rctx, v.qs, out)
	cancel()
	done := mono()
	if err != nil {
		v.readFailed(err, group)
		return
	}
	var verdicts []sources.Verdict
	for i := 0; i < len(v.qx); {
		si := v.qx[i].sample
		verdicts = verdicts[:0]
		for ; i < len(v.qx) && v.qx[i].sample == si; i++ {
			ref, got := v.qx[i], out[i]
			vd := sources.Intact
			switch {
			case got.Len() == 0:
				vd = sources.Missing
			case got.Len() > 1:
				vd = sources.Duplicate
			case ref.exp >= 0 && v.exp[ref.table].DiffField(ref.exp, got, 0) >= 0:
				vd = sources.Mismatch
			}
			verdicts = append(verdicts, vd)
		}
		v.result(&group[si], verdicts, sent, done)
	}
}

// expect appends the rows s must have to v.exp, noting their indexes,
// and returns the tables it could recompute.
func (v *verifier) expect(s *vsample, idx *[64]int) uint64 {
	var found uint64
	switch {
	case v.pure != nil:
		for m, e := range v.exp {
			if s.tables&(1<<m) != 0 {
				idx[m] = e.Len()
				if v.pure.AppendRow(e, m, s.device, s.ts) {
					found |= 1 << m
				}
			}
		}
	case v.replay != nil:
		slot := v.slot(s.device)
		for attempt := range 2 {
			c := v.cursors[slot]
			if c == nil || attempt > 0 {
				rp, err := v.replay.Replay(slot)
				if err != nil {
					v.errLog.Warn(v.log, "replay", "verify: cannot replay a device", err.Error())
					return 0
				}
				c = &cursor{rp: rp, b: sources.NewSeriesBatch(v.schemas)}
				v.cursors[slot] = c
			}
			if found = c.reading(s.device, s.ts, s.before, v.exp, idx); found != 0 {
				break
			}
			// Not found before the batch's end: the cursor went past it
			// (a unit picked out of order); replay from the start once.
		}
		if found == 0 {
			v.errLog.Warn(v.log, "replay", "verify: a picked row is not in its device's replay; its values are not checked",
				fmt.Sprintf("device %d time %d", s.device, s.ts))
		}
		found &= s.tables
	}
	return found
}

// cursor replays one device's rows, holding the next one.
type cursor struct {
	rp   sources.DeviceReplay
	b    *sources.Batch
	m    int
	ts   int64
	pos  sources.Position
	has  bool
	done bool
}

func (c *cursor) advance() {
	c.b.Reset()
	m, pos, err := c.rp.Next(c.b)
	if err != nil {
		c.has, c.done = false, true
		return
	}
	c.m, c.pos, c.ts, c.has = m, pos, c.b.Tables[m].Time[0], true
}

// reading appends to exp the rows of device d's reading at ts, which
// comes before position before, and returns the tables it has. (The
// replay is of d's slot: with CHURN it holds the devices of the slot one
// after the other.)
func (c *cursor) reading(d uint32, ts int64, before sources.Position, exp []*sources.Table, idx *[64]int) uint64 {
	for {
		if !c.has {
			if c.done {
				return 0
			}
			c.advance()
			if !c.has {
				return 0
			}
		}
		if !c.pos.Less(before) {
			return 0
		}
		if c.ts == ts && c.b.Tables[c.m].Device[0] == d {
			var mask uint64
			for c.has && c.ts == ts && mask&(1<<c.m) == 0 {
				idx[c.m] = exp[c.m].Len()
				exp[c.m].AppendRow(c.b.Tables[c.m], 0)
				mask |= 1 << c.m
				c.advance()
			}
			return mask
		}
		c.has = false
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
