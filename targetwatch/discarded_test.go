package targetwatch

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// discardingSink acknowledges every write, and its target's count stat
// of what it lost (discarded values, evicted keys) is start, plus what it
// was written when discard.
type discardingSink struct {
	stat    string
	start   float64
	discard bool

	mu     sync.Mutex
	values float64
}

func (s *discardingSink) Write(_ context.Context, b *sources.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.discard {
		s.values += float64(b.Len())
	}
	return b.Len() * 16, nil
}
func (s *discardingSink) Close(context.Context) error { return nil }

func (s *discardingSink) TargetFigures(context.Context) (sinks.TargetFigures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stats := map[string]float64{s.stat: s.start + s.values}
	if s.stat == sinks.StatDiscarded {
		// By reason: one that rises with the writes, one that stays.
		stats[sinks.StatDiscarded+".small_timestamp"] = s.start - 7 + s.values
		stats[sinks.StatDiscarded+".too_many_labels"] = 7
	}
	return sinks.TargetFigures{Stats: stats}, nil
}

// A target that discards what it answers as written, or evicts what it
// holds, is said once a run, in the log and the summary's figures (its
// count since the target started, the run's part of it from the first
// reading); one whose count stays (others' losses before the run) is
// not. Bug caught: a store that held nothing of an acknowledged run said
// so nowhere.
func TestTargetLosingWritesIsSaid(t *testing.T) {
	for _, tc := range []struct {
		stat, said, names string
		figure            func(Status) *Figure
	}{
		{sinks.StatDiscarded, "the target discards values it answers as written", "retention", func(s Status) *Figure { return s.Discarded }},
		{sinks.StatEvictions, "the target evicts keys", "maxmemory", func(s Status) *Figure { return s.Evictions }},
		{sinks.StatFlushes, "the target was emptied during the run", "FLUSHALL", func(s Status) *Figure { return s.Flushes }},
	} {
		for _, discard := range []bool{true, false} {
			synctest.Test(t, func(t *testing.T) {
				s := &discardingSink{stat: tc.stat, start: 500, discard: discard}
				p := enginetest.Plugins(sinks.Entry{Schemes: []string{"discarding"}, Kinds: []sources.Kind{sources.Series, sources.KV},
					Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return s, nil }})
				tw, _, logs, _ := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "discarding://x", "SOAKD_SEQ_RATE", "100",
					"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), p)
				said := logs.FilterMessageSnippet(tc.said)
				f := tc.figure(statusOf(t, tw, "seq"))
				if f == nil {
					t.Fatalf("no %s figure in the status", tc.stat)
				}
				if !discard {
					if said.Len() != 0 || f.First != 500 || f.Last != 500 {
						t.Errorf("%s stayed at 500: said %d times, figure %+v", tc.stat, said.Len(), *f)
					}
					return
				}
				if said.Len() != 1 {
					t.Errorf("%s: said %d times over a run of 5 readings or more, want once", tc.stat, said.Len())
				}
				if f.First != 500 || f.Last != 500+s.values || s.values < 400 {
					t.Errorf("%s: figure %+v, want from 500 to 500 + the %v rows written", tc.stat, *f, s.values)
				}
				if e := said.All(); len(e) == 1 && !strings.Contains(e[0].Message, tc.names) {
					t.Errorf("%s: the warning does not name %s: %q", tc.stat, tc.names, e[0].Message)
				}
				if by := statusOf(t, tw, "seq").DiscardedBy; tc.stat == sinks.StatDiscarded &&
					(len(by) != 1 || by["small_timestamp"] != f.Last-f.First) {
					t.Errorf("discarded by reason %v, want small_timestamp's rise alone, %v", by, f.Last-f.First)
				}
			})
		}
	}
}
