package daemon

import (
	"slices"
	"sync"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// The run's record of what it wrote, for soakd verify. A stream is held
// by one worker from Fill to the end of the write, so its batches are
// consecutive ranges of its sequence of units: the record keeps, per
// stream, where each run of batches with the same outcome ended
// (sources.Position). An uninterrupted run is one segment per stream;
// each outage adds two. Acknowledged units are those in acked segments;
// units of failed batches may or may not have been stored (in doubt),
// and so may those of a partial write, since the target does not say
// which it kept. Units after a stream's last segment were never written.

// maxSegments bounds a stream's segments. Past it the two oldest are
// merged into one, in doubt unless both were acknowledged: the record
// stays bounded however long the run, and only ever loses precision
// towards "in doubt", never towards "acknowledged".
const maxSegments = 4096

// maxInDoubtRecords bounds the KV records kept as in doubt because the
// batch inserting them failed; past it the record only says there were
// more.
const maxInDoubtRecords = 100_000

// streamRecord is a StreamRecord being written by the worker that holds
// its stream.
type streamRecord struct {
	mu  sync.Mutex
	rec report.StreamRecord
}

// note records that the units between from and to were written with
// the given outcome.
func (s *streamRecord) note(from, to sources.Position, status string) {
	if !from.Less(to) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rec
	last := r.Start
	if n := len(r.Segments); n > 0 {
		last = r.Segments[n-1].To
	}
	if last.Less(from) {
		// Units nobody reported on: never expected, but if they were
		// written they are not known to be acknowledged.
		s.add(from, report.SegmentFailed)
	}
	s.add(to, status)
}

func (s *streamRecord) add(to sources.Position, status string) {
	r := &s.rec
	if n := len(r.Segments); n > 0 && r.Segments[n-1].Status == status {
		r.Segments[n-1].To = to
		return
	}
	r.Segments = append(r.Segments, report.Segment{To: to, Status: status})
	for len(r.Segments) > maxSegments {
		m := report.Segment{To: r.Segments[1].To, Status: report.SegmentFailed}
		if r.Segments[0].Status == report.SegmentAcked && r.Segments[1].Status == report.SegmentAcked {
			m.Status = report.SegmentAcked
		}
		r.Segments = slices.Delete(r.Segments, 0, 1)
		r.Segments[0] = m
		r.Merged++
		if len(r.Segments) > 1 && r.Segments[1].Status == m.Status {
			// The next segment has the same status: it takes the merged
			// one's units.
			r.Segments = slices.Delete(r.Segments, 0, 1)
		}
	}
}

func (s *streamRecord) get() report.StreamRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.Segments = slices.Clone(r.Segments)
	return r
}

// phaseRecord is the record of one phase: its streams, and for KV the
// records whose insert failed.
type phaseRecord struct {
	streams []*streamRecord

	mu       sync.Mutex
	inDoubt  []uint64
	overflow bool
}

// recStream is a phase's stream with its record: Fill notes where the
// stream was before and after, for the batch's outcome.
type recStream struct {
	sources.Stream
	pos      sources.Positioner // nil when the stream does not report one
	rec      *streamRecord
	from, to sources.Position
}

// Fill fills from the stream and notes the positions around it.
func (s *recStream) Fill(b *sources.Batch, max int, now int64) error {
	if s.pos == nil {
		return s.Stream.Fill(b, max, now)
	}
	s.from = s.pos.Position()
	err := s.Stream.Fill(b, max, now)
	s.to = s.pos.Position()
	return err
}

// record wraps stream part of a phase so its writes are recorded.
func (pr *phaseRecord) record(part int, st sources.Stream) *recStream {
	rs := &recStream{Stream: st, rec: &streamRecord{}}
	rs.rec.rec.Part = part
	if p, ok := st.(sources.Positioner); ok {
		rs.pos = p
		rs.rec.rec.Start = p.Position()
	}
	pr.streams = append(pr.streams, rs.rec)
	return rs
}

// noteInDoubt remembers the records a failed batch of b inserted.
func (pr *phaseRecord) noteInDoubt(b *sources.Batch, from int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for i := from; i < len(b.Ops); i++ {
		if b.Ops[i].Op != sources.OpInsert {
			continue
		}
		if len(pr.inDoubt) >= maxInDoubtRecords {
			pr.overflow = true
			return
		}
		pr.inDoubt = append(pr.inDoubt, b.Ops[i].Record)
	}
}

// writeOutcome is how a batch's write ended.
type writeOutcome struct {
	ok     bool // every unit acknowledged
	stored int  // units stored anyway when the write failed (a partial write)
}

// noteBatch records the outcome of the batch w just wrote, which was
// filled from the streams in w.used.
func (pr *phaseRecord) noteBatch(w *worker, o writeOutcome) {
	status := report.SegmentAcked
	switch {
	case !o.ok && o.stored > 0:
		status = report.SegmentPartial
	case !o.ok:
		status = report.SegmentFailed
	}
	for _, s := range w.used {
		if s.pos != nil {
			s.rec.note(s.from, s.to, status)
		}
	}
	if !o.ok && len(w.b.Ops) > 0 {
		// The target kept the first stored operations of the pipeline.
		pr.noteInDoubt(w.b, 0)
	}
}

// keySpacer is a KV source that says how many records it has.
type keySpacer interface {
	KeySpace() (loaded, next uint64)
}

// verifySummary reports ps's verification from its counts c.
func (w *workload) verifySummary(ps *phaseStats, c *counts) *report.VerifySummary {
	v := &report.VerifySummary{Fraction: w.cfg.Verify, Checked: c.verify.checked, Skipped: c.verify.skipped,
		Missing: c.verify.failures[0], Mismatch: c.verify.failures[1], Duplicate: c.verify.failures[2],
		Settings: report.SettingsRecord(w.cfg, w.src)}
	if pr := ps.rec; pr != nil {
		for _, s := range pr.streams {
			v.Streams = append(v.Streams, s.get())
		}
		pr.mu.Lock()
		v.InDoubtRecords = slices.Clone(pr.inDoubt)
		v.InDoubtOverflow = pr.overflow
		pr.mu.Unlock()
	}
	if ks, ok := w.src.(keySpacer); ok {
		v.Records, v.KeySpace = ks.KeySpace()
	}
	return v
}
