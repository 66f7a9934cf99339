// Package record keeps the record of what each stream of a phase wrote,
// for soakd verify: a daemon.BatchObserver that follows every
// workload's batches and completes each phase's entry in the summary
// (daemon.PhaseSummarizer) with its verify record (report.VerifySummary:
// the settings that shape the data set, what each stream wrote, the KV
// records in doubt, the key space). A stream is held by one worker from
// Fill to the end of the write, so its batches are consecutive ranges
// of its sequence of units, and the record keeps, per stream, where each
// run of batches with the same outcome ended.
package record

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/soakd/soakd/daemon"
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

// Recorder is the observer that keeps the record of every workload it
// follows (all of them), phase by phase.
type Recorder struct {
	// byName is written while the workloads open (Follow), read only
	// once they run.
	byName map[string]*follower
}

// New returns a Recorder, to be among a run's observers.
func New() *Recorder { return &Recorder{byName: map[string]*follower{}} }

// Opened, Started and PhaseEnded: the record needs nothing of them.
func (r *Recorder) Opened(*daemon.Handle) error                            { return nil }
func (r *Recorder) Started(context.Context, []*daemon.Handle, func(error)) {}
func (r *Recorder) PhaseEnded(*daemon.Handle, *daemon.Phase, string)       {}

// Follow follows every workload.
func (r *Recorder) Follow(w *daemon.Handle) daemon.WriteFollower {
	f := &follower{}
	r.byName[w.Name()] = f
	return f
}

// PhaseBegun starts the phase's record, before its first batch.
func (r *Recorder) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	f := r.byName[w.Name()]
	if f == nil {
		return
	}
	pr := &phase{of: p}
	for i, start := range p.StreamStarts() {
		s := &streamRecord{}
		s.rec.Part, s.rec.Start = i, start
		pr.streams = append(pr.streams, s)
	}
	f.mu.Lock()
	f.phases = append(f.phases, pr)
	f.mu.Unlock()
	f.cur.Store(pr)
}

// keySpacer is a KV source that says how many records it has.
type keySpacer interface {
	KeySpace() (loaded, next uint64)
}

// SummarizePhase completes the phase's verify entry with its record.
func (r *Recorder) SummarizePhase(w *daemon.Handle, p *daemon.Phase, e *report.WorkloadSummary) {
	v := e.Verify
	if v == nil {
		return
	}
	cfg := w.Config()
	v.Settings = report.SettingsRecord(&cfg, w.Source())
	if pr := r.byName[w.Name()].find(p); pr != nil {
		v.Streams = pr.records()
		v.InDoubtRecords, v.InDoubtOverflow = pr.inDoubtRecords()
	}
	if ks, ok := w.Source().(keySpacer); ok {
		v.Records, v.KeySpace = ks.KeySpace()
	}
}

// follower follows one workload's writes into its current phase's record.
type follower struct {
	cur    atomic.Pointer[phase] // set before the phase's first batch
	mu     sync.Mutex
	phases []*phase
}

func (f *follower) Begin(context.Context) {}
func (f *follower) End()                  {}

// Written records the outcome of a batch just written.
func (f *follower) Written(_ *daemon.Phase, b *sources.Batch, o daemon.WriteOutcome) {
	if pr := f.cur.Load(); pr != nil {
		pr.note(b, o)
	}
}

// find is the record of p, nil when f kept none.
func (f *follower) find(p *daemon.Phase) *phase {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pr := range f.phases {
		if pr.of.Same(p) {
			return pr
		}
	}
	return nil
}

// phase is the record of one phase: its streams, and for KV the
// records whose insert failed.
type phase struct {
	of      *daemon.Phase
	streams []*streamRecord // by index among the phase's streams

	mu       sync.Mutex
	inDoubt  []uint64
	overflow bool
}

// noteInDoubt remembers the records a failed batch of b inserted.
func (pr *phase) noteInDoubt(b *sources.Batch, from int) {
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

// note records the outcome of a batch b just written, filled from the
// spans of streams o names: acknowledged, partly stored or failed.
func (pr *phase) note(b *sources.Batch, o daemon.WriteOutcome) {
	status := report.SegmentAcked
	switch {
	case !o.Acked && o.Stored > 0:
		status = report.SegmentPartial
	case !o.Acked:
		status = report.SegmentFailed
	}
	for _, s := range o.Streams {
		if s.Stream >= 0 && s.Stream < len(pr.streams) {
			pr.streams[s.Stream].note(s.From, s.To, status)
		}
	}
	if !o.Acked && len(b.Ops) > 0 {
		// The target kept the first stored operations of the pipeline.
		pr.noteInDoubt(b, 0)
	}
}

// records are what each stream of the phase wrote, by index.
func (pr *phase) records() []report.StreamRecord {
	var out []report.StreamRecord
	for _, s := range pr.streams {
		out = append(out, s.get())
	}
	return out
}

// inDoubtRecords are the KV records whose insert failed, and whether
// there were more than the record keeps.
func (pr *phase) inDoubtRecords() (records []uint64, overflow bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.inDoubt), pr.overflow
}
