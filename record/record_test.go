package record

import (
	"testing"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

func pos(n int64) sources.Position { return sources.Position{Unit: n} }

// A stream's record keeps one segment per run of outcomes, and past
// maxSegments merges the oldest into in-doubt ones: an acknowledged unit
// may become in doubt, a failed one never acknowledged.
func TestStreamRecord(t *testing.T) {
	t.Parallel()
	var s streamRecord
	s.note(pos(0), pos(10), report.SegmentAcked)
	s.note(pos(10), pos(20), report.SegmentAcked)
	s.note(pos(20), pos(20), report.SegmentFailed) // empty: nothing to record
	s.note(pos(20), pos(25), report.SegmentFailed)
	s.note(pos(30), pos(40), report.SegmentAcked) // a gap nobody reported on
	want := []report.Segment{{To: pos(20), Status: report.SegmentAcked}, {To: pos(30), Status: report.SegmentFailed}, {To: pos(40), Status: report.SegmentAcked}}
	got := s.get().Segments
	if len(got) != len(want) {
		t.Fatalf("segments %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("segments %+v, want %+v", got, want)
		}
	}

	var b streamRecord
	status := func(i int64) string {
		if i%3 == 2 {
			return report.SegmentFailed
		}
		return report.SegmentAcked
	}
	const n = 3 * maxSegments
	for i := int64(0); i < n; i++ {
		b.note(pos(i), pos(i+1), status(i))
	}
	r := b.get()
	if len(r.Segments) > maxSegments || r.Merged == 0 {
		t.Fatalf("%d segments, %d merged: want at most %d", len(r.Segments), r.Merged, maxSegments)
	}
	if last := r.Segments[len(r.Segments)-1].To; last != pos(n) {
		t.Fatalf("last segment ends at %+v, want %+v", last, pos(n))
	}
	from := r.Start
	for _, sg := range r.Segments {
		for i := from.Unit; i < sg.To.Unit; i++ {
			if sg.Status == report.SegmentAcked && status(i) != report.SegmentAcked {
				t.Fatalf("unit %d failed but is recorded acknowledged", i)
			}
		}
		from = sg.To
	}
}
