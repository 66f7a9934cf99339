package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// A unit's place in the run: acknowledged, in doubt (its write failed or
// was partial), or not written by the run at all.
type unitState uint8

const (
	notWritten unitState = iota
	acked
	inDoubt
)

// stateAt says what the run did with the unit at pos of a stream.
func stateAt(r *report.StreamRecord, pos sources.Position) unitState {
	if pos.Less(r.Start) {
		return notWritten
	}
	k := sort.Search(len(r.Segments), func(i int) bool { return pos.Less(r.Segments[i].To) })
	switch {
	case k == len(r.Segments):
		return notWritten
	case r.Segments[k].Status == report.SegmentAcked:
		return acked
	}
	return inDoubt
}

// end is the position after the last unit the stream wrote.
func end(r *report.StreamRecord) sources.Position {
	if n := len(r.Segments); n > 0 {
		return r.Segments[n-1].To
	}
	return r.Start
}

// allAcked is the record assumed without a run summary: every unit of
// every stream acknowledged.
func allAcked(parts int) []report.StreamRecord {
	out := make([]report.StreamRecord, parts)
	for i := range out {
		out[i] = report.StreamRecord{Part: i, Start: sources.Position{Round: math.MinInt64},
			Segments: []report.Segment{{To: sources.Position{Round: math.MaxInt64}, Status: report.SegmentAcked}}}
	}
	return out
}

// expected is one device's rows in one table as the run wrote them.
type expected struct {
	t     *sources.Table
	state []unitState
	order []int // row indexes by time
	// tags are the device's tag values as written (Schema.TagKeys order);
	// got holds the stored ones, len(tags) per row read back.
	tags []string
	got  []string
}

func (j *job) verifySeries(ctx context.Context, src sources.Source, sink sinks.Sink, rep *WorkloadReport) error {
	w := j.w
	rp, ok := src.(sources.Replayer)
	if !ok {
		return fmt.Errorf("source %s cannot replay its rows", w.Source)
	}
	reader, ok := sink.(sinks.SeriesReader)
	if !ok {
		return fmt.Errorf("target %s cannot read rows back", w.Sink.Redacted)
	}
	if err := reader.Readable(); err != nil {
		return err
	}
	if st, ok := sink.(sinks.Settler); ok {
		if err := st.Settle(ctx); err != nil {
			rep.Notes = append(rep.Notes, j.scrub(err.Error())+": rows written in the run's last seconds may read as lost; verify again a little later")
		}
	}
	rep.Units = "rows"
	// The series run is one phase; its streams are the record.
	var streams []report.StreamRecord
	for _, ph := range j.phases {
		if ph.Phase == "run" {
			streams = ph.Verify.Streams
		}
	}
	if j.summary == "" {
		// load refuses it: a seq source is Sized even when endless.
		if err := endless(w); err != nil {
			return err
		}
		streams = allAcked(w.Workers)
		rep.Notes = append(rep.Notes, "no run summary: every row of the data set is taken as acknowledged")
	}
	if len(streams) == 0 {
		return errors.New("the run's summary records no stream")
	}
	for i, s := range streams {
		if s.Part != i {
			return fmt.Errorf("the run's summary lists stream %d as number %d", s.Part, i)
		}
		if s.Merged > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("stream %d's record merged %d runs of writes to stay bounded: their rows count as in doubt", i, s.Merged))
		}
	}
	res := int64(reader.Resolution())
	if res < 1 {
		res = 1
	}
	schemas := src.Schemas()
	shard := w.Shard
	if shard.Count < 1 {
		shard = sources.Shard{Index: 0, Count: 1}
	}
	parts := len(streams)
	exps := make([]expected, len(schemas))
	for m, s := range schemas {
		exps[m].t = sources.NewTable(s)
	}
	got := make([]*sources.Table, len(schemas))
	qs := make([]sinks.SeriesQuery, len(schemas))
	for m, s := range schemas {
		got[m] = sources.NewTable(s)
	}
	b := sources.NewSeriesBatch(schemas)
	var tag []byte
	for d := uint32(0); d < rp.AllDevices(); d++ {
		if !shard.Owns(uint64(d)) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rec := &streams[(uint64(d)-uint64(shard.Index))/uint64(shard.Count)%uint64(parts)]
		last := end(rec)
		r, err := rp.Replay(d)
		if err != nil {
			return err
		}
		reset := func() {
			for m := range exps {
				exps[m].t.Reset()
				exps[m].state = exps[m].state[:0]
			}
		}
		// check reads back device id and compares what it holds with
		// the rows collected in exps.
		check := func(id uint32) error {
			for m, s := range schemas {
				got[m].Reset()
				e := &exps[m]
				e.tags, e.got = e.tags[:0], e.got[:0]
				for k := range s.TagKeys {
					e.tags = append(e.tags, string(s.Tags.AppendTag(nil, id, k)))
				}
				qs[m] = sinks.SeriesQuery{Schema: s, Device: id, From: math.MinInt64, To: math.MaxInt64, Tags: &e.got}
			}
			if err := reader.ReadSeries(ctx, qs, got); err != nil {
				return err
			}
			for m, s := range schemas {
				tag = s.Tags.AppendTag(tag[:0], id, s.DeviceTag)
				rep.compare(s.Measurement, string(tag), &exps[m], got[m])
			}
			return nil
		}
		// With CHURN the replay of slot d holds the rows of each device
		// that held the slot, one device after the other: each is read
		// back and compared in turn.
		reset()
		cur, seen := d, false
		for n := 0; ; n++ {
			// A device's replay may be long (a stream that wrote late in
			// its data set): a signal stops it. The replay is CPU alone,
			// no system call: it yields now and then, so that the rest of
			// the process runs on its processor even where preemption
			// comes late (a race-instrumented build left the goroutine
			// that would deliver the signal waiting 10 to 30 s).
			if n%4096 == 4095 {
				if err := ctx.Err(); err != nil {
					return err
				}
				runtime.Gosched()
			}
			b.Reset()
			m, pos, err := r.Next(b)
			if errors.Is(err, sources.ErrDone) {
				break
			}
			if err != nil {
				return err
			}
			if !pos.Less(last) {
				break // the stream wrote nothing from here on
			}
			if id := b.Tables[m].Device[0]; id != cur {
				if seen {
					if err := check(cur); err != nil {
						return err
					}
					reset()
				}
				cur = id
			}
			seen = true
			st := stateAt(rec, pos)
			if st == notWritten {
				continue
			}
			e := &exps[m]
			e.t.AppendRow(b.Tables[m], 0)
			e.t.Time[e.t.Len()-1] = floorDiv(e.t.Time[e.t.Len()-1], res) * res
			e.state = append(e.state, st)
		}
		if err := check(cur); err != nil {
			return err
		}
	}
	return nil
}

// compare matches a device's expected rows of one table with those the
// target holds, both by time, and counts the differences.
func (rep *WorkloadReport) compare(table, device string, e *expected, got *sources.Table) {
	n := e.t.Len()
	e.order = e.order[:0]
	for i := range n {
		e.order = append(e.order, i)
	}
	sort.SliceStable(e.order, func(a, b int) bool { return e.t.Time[e.order[a]] < e.t.Time[e.order[b]] })
	dev := DeviceReport{Table: table, Device: device}
	var lost, dup run
	flush := func(r *run, into *[]Range) {
		if r.n > 0 {
			*into = append(*into, Range{Table: table, Device: device, From: time.Unix(0, r.from).UTC(), To: time.Unix(0, r.to).UTC(), Rows: r.n})
			r.n = 0
		}
	}
	i, k := 0, 0
	for i < n || k < got.Len() {
		switch {
		case k == got.Len() || i < n && e.t.Time[e.order[i]] < got.Time[k]:
			// expected, not stored
			row := e.order[i]
			ts := e.t.Time[row]
			if e.state[row] == acked {
				rep.Acknowledged++
				dev.Acknowledged++
				dev.ackRange(ts)
				rep.Lost++
				lost.add(ts)
			} else {
				rep.InDoubt++
				flush(&lost, &rep.LostRanges)
			}
			flush(&dup, &rep.DuplicateRanges)
			i++
		case i == n || got.Time[k] < e.t.Time[e.order[i]]:
			// stored, not written by the run
			rep.Unexpected++
			dev.storedRange(got.Time[k])
			k++
		default:
			ts := got.Time[k]
			copies := 0
			for k+copies < got.Len() && got.Time[k+copies] == ts {
				copies++
			}
			// Rows written with the same time (only when the target's
			// resolution is coarser than the data's) pair up in order.
			for ; i < n && e.t.Time[e.order[i]] == ts; i++ {
				row := e.order[i]
				if e.state[row] == acked {
					rep.Acknowledged++
					dev.Acknowledged++
					dev.ackRange(ts)
				} else {
					rep.InDoubt++
					rep.InDoubtStored++
				}
				if copies == 0 {
					if e.state[row] == acked {
						rep.Lost++
						lost.add(ts)
					}
					continue
				}
				flush(&lost, &rep.LostRanges)
				if e.state[row] == acked {
					rep.Stored++
					dev.Stored++
				}
				dev.storedRange(ts)
				if tag := e.diffTag(k); tag >= 0 {
					rep.Mismatched++
					rep.tagMismatch(table, device, e, row, k, tag)
				} else if e.t.DiffField(row, got, k) >= 0 {
					rep.Mismatched++
					rep.mismatch(table, device, e.t, row, got, k)
				}
				k++
				copies--
			}
			if copies > 0 {
				rep.Duplicated += int64(copies)
				dev.Duplicated += int64(copies)
				dup.addN(ts, int64(copies))
				k += copies
			} else {
				flush(&dup, &rep.DuplicateRanges)
			}
		}
	}
	flush(&lost, &rep.LostRanges)
	flush(&dup, &rep.DuplicateRanges)
	if dev.Acknowledged > 0 || dev.Stored > 0 {
		rep.addDevice(dev)
	}
}

// diffTag is the first tag in which stored row k differs from what was
// written, or -1. Numeric tags (stored as numbers by sinks that type
// them) compare as numbers.
func (e *expected) diffTag(k int) int {
	n := len(e.tags)
	if n == 0 || len(e.got) < (k+1)*n {
		return -1 // the target returned no tags
	}
	sc := e.t.Schema
	for j, want := range e.tags {
		got := e.got[k*n+j]
		if got == want {
			continue
		}
		if j < len(sc.NumericTags) && sc.NumericTags[j] {
			a, errA := strconv.ParseFloat(got, 64)
			b, errB := strconv.ParseFloat(want, 64)
			if errA == nil && errB == nil && a == b {
				continue
			}
		}
		return j
	}
	return -1
}

// tagMismatch adds an example of row k stored with another value of tag
// number tag than row row was written with.
func (rep *WorkloadReport) tagMismatch(table, device string, e *expected, row, k, tag int) {
	if len(rep.Mismatches) >= maxExamples {
		return
	}
	rep.example(fmt.Sprintf("%s %s %s %s: stored %q, written %q", table, device,
		time.Unix(0, e.t.Time[row]).UTC().Format(time.RFC3339Nano), e.t.Schema.TagKeys[tag], e.got[k*len(e.tags)+tag], e.tags[tag]))
}

// run is a range of consecutive rows being collected.
type run struct {
	from, to int64
	n        int64
}

func (r *run) add(ts int64) { r.addN(ts, 1) }

func (r *run) addN(ts, n int64) {
	if r.n == 0 {
		r.from = ts
	}
	r.to = ts
	r.n += n
}

// fieldText renders field f of row i.
func fieldText(t *sources.Table, i, f int) string {
	switch {
	case t.Null[f] != nil && t.Null[f][i]:
		return "null"
	case t.Schema.Fields[f].Kind == sources.Int:
		return fmt.Sprint(t.Ints[f][i])
	}
	return fmt.Sprint(t.Floats[f][i])
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
