package targetwatch

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// restartingSink acknowledges every write; its target names another
// instance from the reading restartAt on (0: never).
type restartingSink struct {
	restartAt int

	mu       sync.Mutex
	readings int
}

func (s *restartingSink) Write(_ context.Context, b *sources.Batch) (int, error) {
	return b.Len() * 16, nil
}
func (s *restartingSink) Close(context.Context) error { return nil }

func (s *restartingSink) TargetFigures(context.Context) (sinks.TargetFigures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readings++
	id := "first"
	if s.restartAt > 0 && s.readings >= s.restartAt {
		id = "second"
	}
	return sinks.TargetFigures{Stats: map[string]float64{sinks.StatKeys: 1}, Instance: id}, nil
}

// A target restarted during the run (another instance from one reading
// on) is said once, in the log and the summary's figures; one that kept
// its instance is not. Bug caught: a redis-server restarted without
// persistence mid-run held none of the records acknowledged before, and
// a run that only wrote them ended with exit 0 and not a word of it.
func TestTargetRestartIsSaid(t *testing.T) {
	for _, restartAt := range []int{3, 0} {
		synctest.Test(t, func(t *testing.T) {
			s := &restartingSink{restartAt: restartAt}
			p := enginetest.Plugins(sinks.Entry{Schemes: []string{"restarting"}, Kinds: []sources.Kind{sources.Series, sources.KV},
				Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return s, nil }})
			tw, _, logs, _ := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "restarting://x", "SOAKD_SEQ_RATE", "100",
				"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), p)
			said := logs.FilterMessageSnippet("the target restarted during the run")
			st := statusOf(t, tw, "seq")
			if restartAt == 0 {
				if said.Len() != 0 || st.Restarts != 0 || st.LastRestart != nil {
					t.Errorf("a target that never restarted: said %d times, restarts %d", said.Len(), st.Restarts)
				}
				return
			}
			if said.Len() != 1 {
				t.Errorf("said %d times, want once", said.Len())
			}
			if e := said.All(); len(e) == 1 && !strings.Contains(e[0].Message, "appendonly yes") {
				t.Errorf("the warning does not say what to change: %q", e[0].Message)
			}
			if st.Restarts != 1 || st.LastRestart == nil {
				t.Errorf("restarts %d (last %v), want 1 with its time", st.Restarts, st.LastRestart)
			}
		})
	}
}

// evictingSink's target evicts keys, and restarts (its counter from 0)
// before the third reading.
type evictingSink struct{ evictions []float64 }

func (s *evictingSink) TargetFigures(context.Context) (sinks.TargetFigures, error) {
	v := s.evictions[0]
	s.evictions = s.evictions[1:]
	return sinks.TargetFigures{Stats: map[string]float64{sinks.StatEvictions: v}}, nil
}

// A counter of what the target lost rises across its restart: the rise
// is the increases before it plus the count after it, and is warned of.
// Bug caught: a Redis that had evicted 161,978 keys before the run,
// restarted and evicted 17,000 of soakd's records summed up as
// "evictions: 161978 → 17000" and no warning, as 17,000 < 161,978.
func TestLossCountedAcrossARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		w := &watch{log: zap.New(core), scrub: func(s string) string { return s }, interval: time.Second,
			figures: &evictingSink{evictions: []float64{500, 500, 50, 80}}}
		w.st.memory, w.st.storage, w.st.stats, w.st.unavailable = map[string]*figure{}, map[string]*figure{}, map[string]*figure{}, map[string]string{}
		for i := range 4 {
			if i > 0 {
				time.Sleep(time.Second)
			}
			w.read(context.Background(), time.Second, i == 3)
		}
		f := w.status().Evictions
		if f == nil || f.Rise == nil || *f.Rise != 80 {
			t.Fatalf("evictions %+v, want a rise of 0 + 50 + 30 = 80", f)
		}
		if n := logs.FilterMessageSnippet("the target evicts keys").Len(); n != 1 {
			t.Errorf("evictions warned of %d times, want once", n)
		}
	})
}
