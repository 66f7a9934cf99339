package readback

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// memTarget is an in-memory target for the seq source that can read rows
// back, and can be told to lose, change or repeat some of what it
// acknowledges, or to read slowly.
type memTarget struct {
	mu    sync.Mutex
	rows  map[[2]int64][]int64 // (device, time) -> stored n, one per copy
	write int
	// every nth acknowledged batch is lost, changed or stored twice (0 = never)
	lose, change, dup int
	readDelay         time.Duration
	reads             int
}

func newMemTarget() *memTarget { return &memTarget{rows: map[[2]int64][]int64{}} }

func (m *memTarget) Write(ctx context.Context, b *sources.Batch) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.write++
	t := b.Tables[0]
	if m.lose > 0 && m.write%m.lose == 0 {
		return 0, nil
	}
	for i := range t.Len() {
		k := [2]int64{int64(t.Device[i]), t.Time[i]}
		n := t.Ints[0][i]
		if m.change > 0 && m.write%m.change == 0 {
			n = -n - 1
		}
		m.rows[k] = append(m.rows[k], n)
		if m.dup > 0 && m.write%m.dup == 0 {
			m.rows[k] = append(m.rows[k], n)
		}
	}
	return t.Len(), nil
}

func (m *memTarget) Close(context.Context) error { return nil }
func (m *memTarget) Readable() error             { return nil }
func (m *memTarget) Resolution() time.Duration   { return time.Nanosecond }

func (m *memTarget) ReadSeries(ctx context.Context, qs []sinks.SeriesQuery, out []*sources.Table) error {
	if m.readDelay > 0 {
		select {
		case <-time.After(m.readDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for i, q := range qs {
		for _, n := range m.rows[[2]int64{int64(q.Device), q.From}] {
			out[i].Device = append(out[i].Device, q.Device)
			out[i].Time = append(out[i].Time, q.From)
			out[i].Ints[0] = append(out[i].Ints[0], n)
		}
	}
	return nil
}

func memPlugins(m *memTarget) *config.Plugins {
	return enginetest.Plugins(sinks.Entry{Schemes: []string{"mem"}, Kinds: []sources.Kind{sources.Series},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return m, nil }})
}

// VERIFY reads back a fraction of what was acknowledged, recomputing the
// rows from the seed: a clean target passes, and rows the target lost,
// changed or stored twice are counted by kind, in the summary and in
// /metrics, with the reads' latency as op verify.
func TestVerifyDuringRun(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		lose, change, dup       int
		missing, mismatch, dups bool
	}{
		{name: "clean"},
		{name: "lost", lose: 7, missing: true},
		{name: "changed", change: 5, mismatch: true},
		{name: "twice", dup: 3, dups: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newMemTarget()
				m.lose, m.change, m.dup = tc.lose, tc.change, tc.dup
				p := memPlugins(m)
				cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
					"SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_TARGET", "mem://", "SOAKD_SEQ_VERIFY", "0.1",
					"SOAKD_SEQ_VERIFY_DELAY", "100ms"), p)
				hist := history.New()
				res := runTest(context.Background(), cfg, p, hist)
				w := res.sum.Workloads[0]
				v := w.Verify
				if v == nil || v.Fraction != 0.1 {
					t.Fatalf("no verify summary: %+v", v)
				}
				// The console and the report show the same counts, from the history.
				doc := hist.Snapshot()
				if ph := doc.Workloads[0].Phases; len(ph) != 1 || ph[0].Verify == nil ||
					*ph[0].Verify != (report.VerifyCounts{Checked: v.Checked, Missing: v.Missing, Mismatch: v.Mismatch, Duplicate: v.Duplicate, Skipped: v.Skipped}) {
					t.Errorf("history phases %+v, want the summary's verify counts %+v", ph, v)
				}
				t.Logf("checked %d missing %d mismatch %d duplicate %d skipped %d", v.Checked, v.Missing, v.Mismatch, v.Duplicate, v.Skipped)
				if v.Checked < 700 || v.Checked > 1300 || v.Skipped != 0 {
					t.Errorf("checked %d of 10000 rows at VERIFY=0.1, skipped %d", v.Checked, v.Skipped)
				}
				if (v.Missing > 0) != tc.missing || (v.Mismatch > 0) != tc.mismatch || (v.Duplicate > 0) != tc.dups {
					t.Errorf("missing %d, mismatch %d, duplicate %d", v.Missing, v.Mismatch, v.Duplicate)
				}
				if failed := tc.missing || tc.mismatch || tc.dups; failed != (w.Failure != nil) {
					t.Errorf("failure %+v", w.Failure)
				}
				// Rows stored twice are most often an earlier run's under
				// this one's (START=now after a run whose simulated clock
				// ran ahead): the failure says so, and what to change.
				if hint := w.Failure != nil && strings.Contains(w.Failure.Reason, "rows the tables held before count too") &&
					strings.Contains(w.Failure.Reason, "table_prefix=") && strings.Contains(w.Failure.Reason, "START"); hint != tc.dups {
					t.Errorf("failure %+v: want the hint about rows held before exactly when rows are duplicated", w.Failure)
				}
				var verifyOps int64
				for _, op := range w.Ops {
					if op.Op == "verify" {
						verifyOps = op.Count
					}
				}
				if verifyOps != v.Checked {
					t.Errorf("op verify has %d latencies, %d units checked", verifyOps, v.Checked)
				}
				problems, err := testutil.GatherAndLint(res.reg)
				if err != nil {
					t.Fatal(err)
				}
				for _, pr := range problems {
					t.Errorf("lint: %s: %s", pr.Metric, pr.Text)
				}
				metrics := []string{"soakd_verify_checked_total", "soakd_verify_failures_total", "soakd_verify_skipped_total"}
				n, err := testutil.GatherAndCount(res.reg, metrics...)
				if err != nil || n != 5 {
					t.Errorf("%d verify series (%v), want 5", n, err)
				}
				want := strings.NewReader(strings.ReplaceAll(`# HELP soakd_verify_checked_total Acknowledged rows or records read back and compared with what the seed says they hold (VERIFY).
# TYPE soakd_verify_checked_total counter
soakd_verify_checked_total{workload="seq"} N
`, "N", strconv.FormatInt(v.Checked, 10)))
				if err := testutil.GatherAndCompare(res.reg, want, "soakd_verify_checked_total"); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// A checker slower than the rows it picks never holds the writes back:
// what does not fit its bounded queue is skipped and counted.
func TestVerifyBehindSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemTarget()
		m.readDelay = 50 * time.Millisecond
		p := memPlugins(m)
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100000", "SOAKD_SEQ_BATCH_SIZE", "100",
			"SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_TARGET", "mem://", "SOAKD_SEQ_VERIFY", "1"), p)
		res := runTest(context.Background(), cfg, p, nil)
		w := res.sum.Workloads[0]
		v := w.Verify
		t.Logf("acked %d, dropped %d; checked %d, skipped %d", w.Units, w.Dropped, v.Checked, v.Skipped)
		if w.Units != 500000 || w.Dropped != 0 {
			t.Errorf("acked %d, dropped %d: the checker held the writes back", w.Units, w.Dropped)
		}
		if v.Skipped == 0 || v.Checked == 0 || v.Checked+v.Skipped != w.Units {
			t.Errorf("checked %d + skipped %d, want %d with both > 0", v.Checked, v.Skipped, w.Units)
		}
		if v.Missing+v.Mismatch+v.Duplicate != 0 {
			t.Errorf("failures in a clean run: %+v", v)
		}
	})
}

// A target that cannot read back makes VERIFY a configuration error.
func TestVerifyNeedsAReader(t *testing.T) {
	p := enginetest.Plugins()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SEQ_VERIFY", "0.5"), p)
	res := runTest(context.Background(), cfg, p, nil)
	var ce *settings.Error
	if res.err == nil || !errors.As(res.err, &ce) || ce.Key != "SOAKD_SEQ_VERIFY" {
		t.Fatalf("run: %v, want a configuration error naming SOAKD_SEQ_VERIFY", res.err)
	}
}

type runResult struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runTest runs cfg to its end, read back, with a fresh registry; hist,
// if not nil, is its history.
func runTest(ctx context.Context, cfg *config.Config, p *config.Plugins, hist *history.History) runResult {
	reg := prometheus.NewRegistry()
	obs := []daemon.Observer{New(zap.NewNop()), serve.New(serve.Options{Config: cfg, Version: "test", Registry: reg})}
	if hist != nil {
		obs = append(obs, hist)
	}
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: obs})
	return runResult{sum, err, reg}
}
