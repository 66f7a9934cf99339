package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// kvSource is what verifying a KV workload needs from its source
// (sources/kv).
type kvSource interface {
	sources.Source
	sources.RecordChecker
	KeySpace() (loaded, next uint64)
	Record(j uint64) uint64
	Updates() bool
	Inserts() bool
	Tagged() bool
	Fields() int
	FieldLength() int
	Exact(record uint64, field int, version uint64, v []byte) bool
	CheckValue(record uint64, field int, version uint64, v []byte) (kv.ValueCheck, uint64)
	Claim(v []byte) (field int, version uint64, ok bool)
}

// readBatch is how many records one read-back round trip asks for.
const readBatch = 1000

// maxTracked bounds the fields whose last write the replay of the run
// tracks (about 40 bytes each).
const maxTracked = 4 << 20

// lastWrite is what the run's updates did to one field.
type lastWrite struct {
	version uint64 // the last acknowledged update's
	part    int32  // the stream that wrote it
	unknown bool   // written by several streams, or by a failed write: the last value cannot be known
}

func (j *job) verifyKV(ctx context.Context, s sources.Source, sink sinks.Sink, rep *WorkloadReport) error {
	w := j.w
	src, ok := s.(kvSource)
	if !ok {
		return fmt.Errorf("source %s cannot check records", w.Source)
	}
	reader, ok := sink.(sinks.KVReader)
	if !ok {
		return fmt.Errorf("target %s cannot read records back", w.Sink.Redacted)
	}
	rep.Units = "records"
	_, loadOnly := s.(sources.Sized) // WORKLOAD=load: the run is the load
	loaded, next := src.KeySpace()
	var load, run *report.WorkloadSummary
	for i := range j.phases {
		ph := &j.phases[i]
		switch {
		case ph.Phase == "load" || loadOnly:
			load = ph
		default:
			run = ph
		}
		if ph.Verify.KeySpace > 0 {
			loaded, next = ph.Verify.Records, max(next, ph.Verify.KeySpace)
		}
	}
	if j.summary == "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no run summary: the %d records of the shard are taken as loaded, and no later insert as made", loaded))
	} else if load == nil {
		rep.Notes = append(rep.Notes, "the run loaded nothing (LOAD=off, or the records were present): records 0.. are taken as loaded before it")
	}
	// What the run did to each record index: the load's streams cover
	// consecutive indexes (a stream's position is the next index it
	// loads); inserts of the run took the indexes from loaded on.
	state := func(jdx uint64) unitState {
		if jdx >= loaded {
			return acked // in doubt when listed below
		}
		if load == nil {
			return acked
		}
		streams := load.Verify.Streams
		parts := uint64(len(streams))
		for p := range parts {
			lo, hi := loaded*p/parts, loaded*(p+1)/parts
			if jdx >= lo && jdx < hi {
				return stateAt(&streams[p], sources.Position{Unit: int64(jdx)})
			}
		}
		return notWritten
	}
	doubt := map[uint64]bool{}
	overflow := false
	for _, ph := range j.phases {
		for _, r := range ph.Verify.InDoubtRecords {
			doubt[r] = true
		}
		overflow = overflow || ph.Verify.InDoubtOverflow
	}
	if overflow {
		rep.Notes = append(rep.Notes, "more inserts failed than the run recorded: every record it inserted is taken as in doubt")
	}
	// Which write each field's value must come from.
	var last map[uint64]*lastWrite
	fields := src.Fields()
	switch {
	case !src.Updates():
		rep.Notes = append(rep.Notes, "the workload never updates: every field must hold its insert's value exactly")
	case run == nil || src.Inserts():
		rep.Notes = append(rep.Notes, "updates chose their records among the records present at the time (the workload inserts too), "+
			"so the last write of a field cannot be replayed: fields are checked as values soakd writes for the record and field")
	default:
		var err error
		if last, err = replayUpdates(ctx, src, run.Verify.Streams, fields); err != nil {
			if !errors.Is(err, errTooMany) {
				return err
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("more than %d fields were updated: fields are checked as values soakd writes for the record and field", maxTracked))
			last = nil
		} else {
			rep.Notes = append(rep.Notes, "updates replayed: a field updated only by acknowledged writes of one worker must hold the last one; "+
				"other updated fields are checked as values soakd writes for the record and field")
		}
	}
	if !src.Tagged() && src.Updates() {
		rep.Notes = append(rep.Notes, "FIELD_LENGTH is under 16 bytes: values carry no tag, so an updated field is checked for its length and printable bytes only")
	}

	shape := sinks.RecordShape{Fields: fields, FieldLength: src.FieldLength()}
	keys := make([]string, 0, readBatch)
	idx := make([]uint64, 0, readBatch)
	recs := make([]sources.StoredRecord, readBatch)
	var lost, absent recRun
	var key []byte
	flush := func(r *recRun, into *[]RecordRange) {
		if r.n > 0 {
			*into = append(*into, RecordRange{From: r.from, To: r.to, Count: r.n, Key: string(src.AppendKey(nil, src.Record(r.from)))})
			r.n = 0
		}
	}
	check := func() error {
		if len(keys) == 0 {
			return nil
		}
		if err := reader.ReadRecords(ctx, keys, shape, recs[:len(keys)]); err != nil {
			return err
		}
		for i, jdx := range idx {
			r := src.Record(jdx)
			st := state(jdx)
			if jdx >= loaded && (overflow || doubt[r]) {
				st = inDoubt
			}
			got := &recs[i]
			// A record that lacks fields and holds only values soakd
			// writes in the others was deleted (evicted, flushed, lost to
			// a restart) and an update wrote some fields again: lost, as
			// a record deleted is, not changed (VERIFY during the run
			// calls it missing).
			gone := !got.Found || (got.Extra == 0 && src.Check(r, -1, kv.AnyVersion, got) == sources.Missing)
			switch {
			case gone && st == acked:
				rep.Acknowledged++
				rep.Lost++
				lost.add(jdx)
				flush(&absent, &rep.InDoubtAbsent)
				continue
			case gone:
				if st == inDoubt {
					rep.InDoubt++
					absent.add(jdx)
				}
				flush(&lost, &rep.LostRecords)
				continue
			}
			flush(&lost, &rep.LostRecords)
			flush(&absent, &rep.InDoubtAbsent)
			switch st {
			case acked:
				rep.Acknowledged++
				rep.Stored++
			case inDoubt:
				rep.InDoubt++
				rep.InDoubtStored++
			default:
				rep.Unexpected++
			}
			if why := checkRecord(src, r, got, last, fields, rep); why != "" {
				rep.Mismatched++
				rep.example(fmt.Sprintf("record %d (%s): %s", r, keys[i], why))
			}
		}
		keys, idx = keys[:0], idx[:0]
		return nil
	}
	for jdx := range next {
		if err := ctx.Err(); err != nil {
			return err
		}
		key = src.AppendKey(key[:0], src.Record(jdx))
		keys = append(keys, string(key))
		idx = append(idx, jdx)
		if len(keys) == readBatch {
			if err := check(); err != nil {
				return err
			}
		}
	}
	if err := check(); err != nil {
		return err
	}
	flush(&lost, &rep.LostRecords)
	flush(&absent, &rep.InDoubtAbsent)
	return nil
}

// checkRecord returns why record r's stored fields are not what the run
// left, or "".
func checkRecord(src kvSource, r uint64, got *sources.StoredRecord, last map[uint64]*lastWrite, fields int, rep *WorkloadReport) string {
	if got.Extra > 0 {
		return fmt.Sprintf("%d values beyond its %d fields", got.Extra, fields)
	}
	if got.Unordered {
		// DATA_TYPE=set: an update pops a random member, so only each
		// member's being a value of the record can be checked; without
		// updates, every field's insert value must be there.
		rep.FieldsShape += int64(len(got.Values))
		if v := src.Check(r, -1, kv.AnyVersion, got); v != sources.Intact {
			return fmt.Sprintf("its %d members are not %d values soakd writes for it", len(got.Values), fields)
		}
		if !src.Updates() {
			for f := range fields {
				found := false
				for _, v := range got.Values {
					found = found || src.Exact(r, f, 0, v)
				}
				if !found {
					return fmt.Sprintf("field%d's inserted value is not a member", f)
				}
			}
		}
		return ""
	}
	for f, v := range got.Values {
		if v == nil {
			return fmt.Sprintf("field%d: missing", f)
		}
		want, known := uint64(0), true
		if src.Updates() {
			known = false
			if last != nil {
				lw := last[r*uint64(fields)+uint64(f)]
				switch {
				case lw == nil:
					want, known = 0, true
				case !lw.unknown:
					want, known = lw.version, true
				}
			}
		}
		if known {
			rep.FieldsExact++
			if !src.Exact(r, f, want, v) {
				return fmt.Sprintf("field%d: %s", f, describe(src, r, f, want, v))
			}
			continue
		}
		rep.FieldsShape++
		if res, _ := src.CheckValue(r, f, kv.AnyVersion, v); res != kv.ValueOK {
			return fmt.Sprintf("field%d: holds %q, which soakd never writes for it (any write's value would do: the last write cannot be known)", f, preview(v))
		}
	}
	return ""
}

// describe says how v, field f's value of record r, differs from the
// value of the write of version want.
func describe(src kvSource, r uint64, f int, want uint64, v []byte) string {
	cf, ver, ok := src.Claim(v)
	switch {
	case !ok:
		return fmt.Sprintf("holds %q, which soakd never writes for it (want the value of %s)", preview(v), writeName(want))
	case cf != f || !src.Exact(r, f, ver, v):
		return fmt.Sprintf("holds a value claiming to be field%d of %s whose bytes differ from what soakd wrote (want the value of %s)", cf, writeName(ver), writeName(want))
	}
	return fmt.Sprintf("holds the value of %s, but the last acknowledged write was %s", writeName(ver), writeName(want))
}

// writeName names the write of a version.
func writeName(ver uint64) string {
	if ver == 0 {
		return "its insert"
	}
	return fmt.Sprintf("update %d of worker %d", ver&(1<<45-1), int(ver>>45)-1)
}

func preview(v []byte) string {
	if len(v) > 24 {
		return string(v[:24]) + "..."
	}
	return string(v)
}

// recRun is consecutive record indexes being collected.
type recRun struct {
	from, to uint64
	n        int64
}

func (r *recRun) add(j uint64) {
	if r.n > 0 && j != r.to+1 {
		// not consecutive: the caller flushes first; keep it exact anyway
		r.n = 0
	}
	if r.n == 0 {
		r.from = j
	}
	r.to = j
	r.n++
}

var errTooMany = errors.New("too many updated fields to track")

// replayUpdates replays the run's streams (their record choices do not
// depend on timing when the workload does not insert) and returns, for
// every field an update wrote, the last acknowledged version and whether
// it can be known.
func replayUpdates(ctx context.Context, src kvSource, streams []report.StreamRecord, fields int) (map[uint64]*lastWrite, error) {
	last := map[uint64]*lastWrite{}
	parts := len(streams)
	for p := range parts {
		rec := &streams[p]
		st, err := src.Stream(p, parts)
		if err != nil {
			return nil, err
		}
		total := end(rec).Unit
		b := src.(sources.Batcher).NewBatch()
		for seq := int64(0); seq < total; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b.Reset()
			n := int(min(1024, total-seq))
			if err := st.Fill(b, n, 0); err != nil {
				return nil, err
			}
			for i := range b.Ops {
				op := &b.Ops[i]
				state := stateAt(rec, sources.Position{Unit: seq + int64(i)})
				r, ver, ok := src.Written(b, op)
				if !ok || op.Op == sources.OpInsert {
					continue
				}
				first, count := int(op.Field), 1
				if op.Field < 0 {
					first, count = 0, fields
				}
				for f := first; f < first+count; f++ {
					k := r*uint64(fields) + uint64(f)
					lw := last[k]
					if lw == nil {
						if len(last) >= maxTracked {
							return nil, errTooMany
						}
						lw = &lastWrite{part: int32(p)}
						last[k] = lw
					}
					if lw.part != int32(p) || state != acked || ver == kv.AnyVersion {
						lw.unknown = true
					}
					if state == acked {
						lw.version = ver
					}
				}
			}
			seq += int64(len(b.Ops))
		}
	}
	return last, nil
}
