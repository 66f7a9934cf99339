// Package record keeps the engine's record of what each phase wrote, for
// soakd verify (report.VerifySummary): a stream is held by one worker
// from Fill to the end of the write, so its batches are consecutive
// ranges of its sequence of units, and the record keeps, per stream,
// where each run of batches with the same outcome ended.
package record

import (
	"slices"
	"sync"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

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

// Phase is the record of one phase: its streams, and for KV the
// records whose insert failed. The zero Phase is empty.
type Phase struct {
	streams []*streamRecord

	mu       sync.Mutex
	inDoubt  []uint64
	overflow bool
}

// Stream is a phase's stream with its record: Fill notes where the
// stream was before and after, for the batch's outcome (Phase.Note).
type Stream struct {
	sources.Stream
	pos      sources.Positioner // nil when the stream does not report one
	rec      *streamRecord
	from, to sources.Position
}

// Fill fills from the stream and notes the positions around it.
func (s *Stream) Fill(b *sources.Batch, max int, now int64) error {
	if s.pos == nil {
		return s.Stream.Fill(b, max, now)
	}
	s.from = s.pos.Position()
	err := s.Stream.Fill(b, max, now)
	s.to = s.pos.Position()
	return err
}

// Wrap wraps stream part of a phase so its writes are recorded.
func (pr *Phase) Wrap(part int, st sources.Stream) *Stream {
	rs := &Stream{Stream: st, rec: &streamRecord{}}
	rs.rec.rec.Part = part
	if p, ok := st.(sources.Positioner); ok {
		rs.pos = p
		rs.rec.rec.Start = p.Position()
	}
	pr.streams = append(pr.streams, rs.rec)
	return rs
}

// noteInDoubt remembers the records a failed batch of b inserted.
func (pr *Phase) noteInDoubt(b *sources.Batch, from int) {
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

// Note records the outcome of a batch b just written, filled from the
// streams used: acknowledged (ok), partly stored (stored > 0) or failed.
func (pr *Phase) Note(used []*Stream, b *sources.Batch, ok bool, stored int) {
	status := report.SegmentAcked
	switch {
	case !ok && stored > 0:
		status = report.SegmentPartial
	case !ok:
		status = report.SegmentFailed
	}
	for _, s := range used {
		if s.pos != nil {
			s.rec.note(s.from, s.to, status)
		}
	}
	if !ok && len(b.Ops) > 0 {
		// The target kept the first stored operations of the pipeline.
		pr.noteInDoubt(b, 0)
	}
}

// After is where the stream stood once the last batch was filled from
// it (the zero Position for a stream that does not report its position).
func (s *Stream) After() sources.Position { return s.to }

// Streams are what each stream of the phase wrote, in the order wrapped.
func (pr *Phase) Streams() []report.StreamRecord {
	var out []report.StreamRecord
	for _, s := range pr.streams {
		out = append(out, s.get())
	}
	return out
}

// InDoubt are the KV records whose insert failed, and whether there
// were more than the record keeps.
func (pr *Phase) InDoubt() (records []uint64, overflow bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.inDoubt), pr.overflow
}
