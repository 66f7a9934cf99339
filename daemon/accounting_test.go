package daemon

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/thresholds"
)

// The ops a threshold may name are the engine's op slots, in order.
func TestOpNamesAreThresholdOps(t *testing.T) {
	if !slices.Equal(opNames, thresholds.OpNames) {
		t.Errorf("engine ops %q, threshold ops %q", opNames, thresholds.OpNames)
	}
}

// The ops configuration checks a workload's thresholds against are the
// ones the engine reports for its kind.
func TestOpNamesOfKind(t *testing.T) {
	for _, k := range []sources.Kind{sources.Series, sources.KV, sources.Queries} {
		var engine []string
		for _, op := range opsFor(k, nil) {
			engine = append(engine, opName(op))
		}
		if got := config.OpNamesOf(k); !slices.Equal(got, engine) {
			t.Errorf("%s: configuration knows ops %q, the engine reports %q", k, got, engine)
		}
	}
}

// TestSnapshotIsOneCut checks that a snapshot shows each unit in one state
// while the scheduler and a worker keep counting: a goroutine schedules a
// unit and then finishes it, over and over, so no more than one unit is
// ever in flight. A snapshot that read the worker's tally and then the
// scheduler's would see units finished meanwhile still in flight, and the
// units scheduled after them too: two or more.
func TestSnapshotIsOneCut(t *testing.T) {
	ps := newPhaseStats("run", "1000", 1)
	w := ps.workers[0]
	var done atomic.Bool
	go func() {
		defer done.Store(true)
		for range 300_000 {
			ps.sched.release(1)
			w.mu.Lock()
			w.c.acked++
			w.mu.Unlock()
		}
	}()
	snaps := 0
	for !done.Load() || snaps == 0 {
		c := ps.snapshot()
		if in := c.inflight(); in < 0 || in > 1 {
			t.Fatalf("snapshot %d: %d in flight (scheduled %d, acknowledged %d), want 0 or 1", snaps, in, c.scheduled, c.acked)
		}
		snaps++
	}
	if c := ps.snapshot(); c.scheduled != 300_000 || c.inflight() != 0 {
		t.Fatalf("at the end: scheduled %d, %d in flight", c.scheduled, c.inflight())
	}
	t.Logf("%d snapshots", snaps)
}

// parseMetrics reads the text exposition's samples of one workload, keyed
// by name and the labels other than workload.
func parseMetrics(t *testing.T, text, workload string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	label := `workload="` + workload + `"`
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' || !strings.Contains(line, label) {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		key, val := line[:sp], line[sp+1:]
		key = strings.NewReplacer(label+",", "", ","+label, "", "{"+label+"}", "").Replace(key)
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[key] = f
	}
	return out
}
