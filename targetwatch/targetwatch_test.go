package targetwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// watchedSink acknowledges every write and reads its "target" as a
// sinks.TargetWatcher whose figures change from one reading to the next:
// memory and its fragmentation rise to a peak and fall back, storage, CPU
// time, keys and evictions grow, the WAL and the active series are never
// available, and the readings fail listed fail.
type watchedSink struct {
	fail map[int]bool // 1-based readings that fail
	// block makes every reading wait until its context ends.
	block bool
	// headOnly makes the summed storage 0 B, the values held in the WAL
	// (which is not summed), as Prometheus before its first block.
	headOnly bool
	// walWhy replaces the reason the WAL's size is not read.
	walWhy string

	mu    sync.Mutex
	calls int
	read  []reading // the readings that succeeded, in order
}

type reading struct {
	at      time.Time
	figures sinks.TargetFigures
}

func (s *watchedSink) Write(_ context.Context, b *sources.Batch) (int, error) {
	return b.Len() * 16, nil
}
func (s *watchedSink) Close(context.Context) error { return nil }

func (s *watchedSink) TargetFigures(ctx context.Context) (sinks.TargetFigures, error) {
	if s.block {
		<-ctx.Done()
		return sinks.TargetFigures{}, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	n := s.calls
	if s.fail[n] {
		return sinks.TargetFigures{}, errors.New("target down")
	}
	used := 1000 + 100*float64(min(n, 5)) - 50*float64(max(n-5, 0)) // peaks at the 5th reading
	f := sinks.TargetFigures{
		Memory: map[string]float64{"used": used, "rss": used * 2},
		// database holds table and index: shown, not summed.
		Storage:    map[string]float64{"table": 4096 * float64(n), "index": 1024 * float64(n), "database": 1 << 30},
		CPUSeconds: 0.25 * float64(n),
		HasCPU:     true,
		Stats: map[string]float64{sinks.StatKeys: 100 * float64(n), sinks.StatEvictions: 3 * float64(n),
			sinks.StatFragmentation: used / 1000},
		Unavailable: map[string]string{"wal": "permission denied for pg_ls_waldir", sinks.StatActiveSeries: "no head series"},
	}
	if s.walWhy != "" {
		f.Unavailable["wal"] = s.walWhy
	}
	if s.headOnly {
		f.Storage = map[string]float64{"blocks": 0, "head_chunks": 0, "wal": 4096 * float64(n)}
		delete(f.Unavailable, "wal")
	}
	s.read = append(s.read, reading{at: time.Now(), figures: f})
	return f, nil
}

func (s *watchedSink) readings() []reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]reading(nil), s.read...)
}

// plugins are soakd's, with watched:// opening s.
func plugins(s *watchedSink) *config.Plugins {
	return enginetest.Plugins(sinks.Entry{Schemes: []string{"watched"}, Kinds: []sources.Kind{sources.Series, sources.KV},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return s, nil }})
}

// run runs env with a Watcher of its own, logging to an observer.
func run(t *testing.T, env map[string]string, p *config.Plugins) (*Watcher, *prometheus.Registry, *observer.ObservedLogs, *report.Summary) {
	tw, reg, logs, sum, _ := runHandles(t, env, p)
	return tw, reg, logs, sum
}

// runHandles is run, with the workloads' handles.
func runHandles(t *testing.T, env map[string]string, p *config.Plugins) (*Watcher, *prometheus.Registry, *observer.ObservedLogs, *report.Summary, []*daemon.Handle) {
	t.Helper()
	cfg := enginetest.Load(t, env, p)
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	tw := New(zap.New(core), Options{Metrics: reg})
	hs := &handles{}
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.New(core), Plugins: p, Observers: []daemon.Observer{tw, hs}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return tw, reg, logs, sum, hs.hs
}

// handles keeps the run's workloads' handles.
type handles struct{ hs []*daemon.Handle }

func (o *handles) Opened(h *daemon.Handle) error                          { o.hs = append(o.hs, h); return nil }
func (o *handles) Started(context.Context, []*daemon.Handle, func(error)) {}
func (o *handles) PhaseBegun(*daemon.Handle, *daemon.Phase)               {}
func (o *handles) PhaseEnded(*daemon.Handle, *daemon.Phase, string)       {}

func statusOf(t *testing.T, tw *Watcher, workload string) Status {
	t.Helper()
	key, v, ok := tw.AddStatus(workload)
	if !ok || key != "target_figures" {
		t.Fatalf("AddStatus(%q) = %q, %v, want the target field", workload, key, ok)
	}
	return v.(Status)
}

// count is the log entries whose message contains msg.
func count(logs *observer.ObservedLogs, msg string) int {
	return logs.FilterMessageSnippet(msg).Len()
}

// Over a run, the metrics hold the sink's last reading, /status its first,
// last and peak and their growth per hour, a figure the sink cannot read
// is logged once however many readings name it, and readings that fail
// are logged once and stop neither the watch nor the run.
// Bugs caught: metrics or status from a stale reading; a peak or first
// that follows the last; growth not over the hours between first and
// last; a log line per interval; a failed reading ending the watch or
// failing the run.
func TestWatchReadsTheSinksFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{fail: map[int]bool{3: true, 4: true}}
		tw, reg, logs, sum, hs := runHandles(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "12s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), plugins(s))
		if err := sum.Failed(); err != nil {
			t.Fatalf("the run failed: %v", err)
		}
		if w := sum.Workload("seq", "run"); w == nil || !strings.HasPrefix(w.StoppedBy, "DURATION") {
			t.Fatalf("run phase %+v, want it stopped by its DURATION", w)
		}
		read := s.readings()
		if len(read) < 8 {
			t.Fatalf("%d readings succeeded over 12 s at 1 s, want at least 8", len(read))
		}
		first, last := read[0], read[len(read)-1]

		// Metrics: the last reading.
		want := fmt.Sprintf(`
# HELP soakd_target_cpu_seconds_total %s
# TYPE soakd_target_cpu_seconds_total counter
soakd_target_cpu_seconds_total{workload="seq"} %g
# HELP soakd_target_memory_bytes %s
# TYPE soakd_target_memory_bytes gauge
soakd_target_memory_bytes{kind="rss",workload="seq"} %g
soakd_target_memory_bytes{kind="used",workload="seq"} %g
# HELP soakd_target_storage_bytes %s
# TYPE soakd_target_storage_bytes gauge
soakd_target_storage_bytes{kind="database",workload="seq"} %g
soakd_target_storage_bytes{kind="index",workload="seq"} %g
soakd_target_storage_bytes{kind="table",workload="seq"} %g
`, cpuHelp, last.figures.CPUSeconds, memoryHelp, last.figures.Memory["rss"], last.figures.Memory["used"],
			storageHelp, last.figures.Storage["database"], last.figures.Storage["index"], last.figures.Storage["table"])
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"soakd_target_cpu_seconds_total", "soakd_target_memory_bytes", "soakd_target_storage_bytes"); err != nil {
			t.Error(err)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP soakd_target_evictions_total %s
# TYPE soakd_target_evictions_total counter
soakd_target_evictions_total{workload="seq"} %g
# HELP soakd_target_keys %s
# TYPE soakd_target_keys gauge
soakd_target_keys{workload="seq"} %g
# HELP soakd_target_memory_fragmentation_ratio %s
# TYPE soakd_target_memory_fragmentation_ratio gauge
soakd_target_memory_fragmentation_ratio{workload="seq"} %g
`, evictionsHelp, last.figures.Stats["evictions"], keysHelp, last.figures.Stats["keys"], fragmentationHelp, last.figures.Stats["memory_fragmentation_ratio"])),
			"soakd_target_evictions_total", "soakd_target_keys", "soakd_target_memory_fragmentation_ratio", "soakd_target_active_series"); err != nil {
			t.Error(err)
		}
		if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
			t.Errorf("promlint: %v %+v", err, problems)
		}

		// /status: first, last, peak, growth.
		st := statusOf(t, tw, "seq")
		hours := last.at.Sub(first.at).Hours()
		used := st.Memory["used"]
		wantUsed := Figure{First: first.figures.Memory["used"], Last: last.figures.Memory["used"], Peak: 1500}
		if used.First != wantUsed.First || used.Last != wantUsed.Last || used.Peak != wantUsed.Peak || used.Last == used.Peak {
			t.Errorf("memory used %+v, want first %v last %v peak %v", used, wantUsed.First, wantUsed.Last, wantUsed.Peak)
		}
		if used.Seconds != last.at.Sub(first.at).Seconds() {
			t.Errorf("memory used over %v s, want the %v s between its first reading and its last", used.Seconds, last.at.Sub(first.at).Seconds())
		}
		if g := used.GrowthPerHour; g == nil || !near(*g, (wantUsed.Last-wantUsed.First)/hours) {
			t.Errorf("memory used growth %v, want %v per hour", g, (wantUsed.Last-wantUsed.First)/hours)
		}
		table := st.Storage["table"]
		if table.First != first.figures.Storage["table"] || table.Last != last.figures.Storage["table"] || table.Peak != table.Last {
			t.Errorf("storage table %+v", table)
		}
		total := last.figures.Storage["table"] + last.figures.Storage["index"] // the database holding them aside
		if st.StorageTotal == nil || st.StorageTotal.Last != total || st.StorageTotal.GrowthPerHour == nil ||
			!near(*st.StorageTotal.GrowthPerHour, (total-first.figures.Storage["table"]-first.figures.Storage["index"])/hours) {
			t.Errorf("storage total %+v, want last %v", st.StorageTotal, total)
		}
		if st.CPU == nil || st.CPU.Last != last.figures.CPUSeconds || st.CPU.From != "target" {
			t.Errorf("cpu %+v, want last %v from the target", st.CPU, last.figures.CPUSeconds)
		}
		for name, f := range map[string]*Figure{"keys": st.Keys, "evictions": st.Evictions, "memory_fragmentation_ratio": st.MemoryFragmentationRatio} {
			wantLast, wantPeak := last.figures.Stats[name], last.figures.Stats[name]
			if name == "memory_fragmentation_ratio" {
				wantPeak = 1.5
			}
			if f == nil || f.First != first.figures.Stats[name] || f.Last != wantLast || f.Peak != wantPeak {
				t.Errorf("%s %+v, want first %v last %v peak %v", name, f, first.figures.Stats[name], wantLast, wantPeak)
			}
		}
		if st.ActiveSeries != nil || st.Unavailable["active_series"] == "" {
			t.Errorf("active series %+v (unavailable %q), want none read and why", st.ActiveSeries, st.Unavailable["active_series"])
		}
		// What the console's history reads.
		if v, at, ok := tw.Stat("seq", sinks.StatKeys); !ok || v != last.figures.Stats["keys"] || !at.Equal(last.at) {
			t.Errorf("Stat(keys) = %v at %v (%t), want the last reading's %v at %v", v, at, ok, last.figures.Stats["keys"], last.at)
		}
		if v, _, ok := tw.Stat("seq", sinks.StatActiveSeries); ok {
			t.Errorf("Stat(active_series) = %v, of a target that gives none", v)
		}
		if st.FirstAt == nil || !st.FirstAt.Equal(first.at) || !st.LastAt.Equal(last.at) {
			t.Errorf("first_at %v last_at %v, want %v %v", st.FirstAt, st.LastAt, first.at, last.at)
		}
		if st.Unavailable["wal"] == "" {
			t.Errorf("unavailable %v, want wal's reason", st.Unavailable)
		}
		if st.Errors != 2 || !strings.Contains(st.LastError, "target down") || st.Readings != int64(len(read))+2 {
			t.Errorf("readings %d errors %d (%q), want %d and 2", st.Readings, st.Errors, st.LastError, len(read)+2)
		}

		// Storage per value: the last storage over the values acknowledged
		// when it was read, no more than the run acknowledged.
		values := sum.Workload("seq", "run").Values
		if st.Acknowledged == nil || *st.Acknowledged <= 0 || *st.Acknowledged > float64(values) || st.Counted != "values" ||
			st.StoragePerValue == nil || *st.StoragePerValue != total / *st.Acknowledged {
			t.Errorf("per value %v of %v %s, want %v over at most %d values", st.StoragePerValue, st.Acknowledged, st.Counted, total, values)
		} else if err := testutil.GatherAndCompare(reg, strings.NewReader(fmt.Sprintf(`
# HELP soakd_target_storage_bytes_per_value %s
# TYPE soakd_target_storage_bytes_per_value gauge
soakd_target_storage_bytes_per_value{workload="seq"} %g
`, perValueHelp, *st.StoragePerValue)), "soakd_target_storage_bytes_per_value"); err != nil {
			t.Error(err)
		}

		// The JSON /status shows: the engine asks the Watcher for it.
		if f, ok := hs[0].StatusFields()["target_figures"].(Status); !ok || f.Readings != st.Readings {
			t.Errorf("the workload's status fields hold %+v, want the watch's", hs[0].StatusFields())
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{`"memory_bytes":{`, `"storage_bytes":{`, `"growth_per_hour":`, `"peak":1500`,
			`"storage_bytes_per_value":`, `"keys":{"first":100,`, `"evictions":{`, `"memory_fragmentation_ratio":{`, `"wal":"permission`} {
			if !strings.Contains(string(b), field) {
				t.Errorf("status JSON lacks %s: %s", field, b)
			}
		}

		// Logged once each.
		if n := count(logs, "a figure of the target is not available"); n != 2 {
			t.Errorf("the unavailable WAL and active series were logged %d times over %d readings, want once each", n, len(read))
		}
		if n := count(logs, "cannot read the target's own figures"); n != 1 {
			t.Errorf("two failed readings in a row logged %d times, want once", n)
		}
		if n := count(logs, "can be read again"); n != 1 {
			t.Errorf("the recovery logged %d times, want once", n)
		}
	})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A Prometheus before its first block holds what it was sent in its head
// (memory) and WAL, so the summed storage reads 0 B: there is no storage
// per value then, rather than 0 B a value (which passed any
// target.storage_per_value threshold), in /status, the metrics and the
// figure the thresholds read.
func TestWatchGivesNoStoragePerValueOfNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{headOnly: true}
		tw, reg, _, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), plugins(s))
		if w := sum.Workload("seq", "run"); w == nil || w.Values == 0 {
			t.Fatalf("run phase %+v, want values written", w)
		}
		st := statusOf(t, tw, "seq")
		if st.StorageTotal == nil || st.StorageTotal.Last != 0 {
			t.Errorf("storage total %+v, want 0 B read", st.StorageTotal)
		}
		if st.StoragePerValue != nil {
			t.Errorf("storage per value %v of a total of 0 B", *st.StoragePerValue)
		}
		if v, _, ok := tw.StoragePerValue("seq"); ok {
			t.Errorf("StoragePerValue = %v for the thresholds, of a total of 0 B", v)
		}
		if n, err := testutil.GatherAndCount(reg, "soakd_target_storage_bytes_per_value"); err != nil || n != 0 {
			t.Errorf("soakd_target_storage_bytes_per_value: %d series (%v), want none", n, err)
		}
	})
}

// A target that never answers costs the run nothing: each reading is cut
// at the interval, the run ends when its DURATION says, and Finished
// returns once the last reading, at the end, has waited its interval (at
// most lastReadingTimeout). Bug caught: a reading without a deadline, or
// one the run waits for.
func TestWatchNeverHoldsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{block: true}
		t0 := time.Now()
		tw, _, logs, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_DURATION", "5s", "SOAKD_SEQ_WATCH_INTERVAL", "2s"), plugins(s))
		if d := time.Since(t0); d > 7*time.Second+500*time.Millisecond {
			t.Errorf("the run took %v, want its 5 s and the last reading's 2 s at most", d)
		}
		if err := sum.Failed(); err != nil {
			t.Errorf("the run failed: %v", err)
		}
		st := statusOf(t, tw, "seq")
		if st.Errors < 2 || !strings.Contains(st.LastError, "deadline") || st.FirstAt != nil {
			t.Errorf("status %+v, want failed readings cut at their deadline", st)
		}
		if n := count(logs, "cannot read the target's own figures"); n != 1 {
			t.Errorf("failed readings logged %d times, want once", n)
		}
	})
}

// WATCH_INTERVAL=0 turns the watch off: no /status field, no metrics,
// no reading. A sink that cannot read its target says so in /status.
// Bugs caught: a watch started when off; a workload without the
// capability silently absent from /status.
func TestWatchOffAndWithoutCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{}
		tw, reg, _, _ := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq,other", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_DURATION", "3s", "SOAKD_SEQ_WATCH_INTERVAL", "0",
			"SOAKD_OTHER_SOURCE", "seq", "SOAKD_OTHER_TARGET", "null://", "SOAKD_OTHER_DURATION", "3s"), plugins(s))
		if _, _, ok := tw.AddStatus("seq"); ok {
			t.Error("a workload with WATCH_INTERVAL=0 has a target field")
		}
		if len(s.readings()) != 0 {
			t.Errorf("%d readings with the watch off", len(s.readings()))
		}
		st := statusOf(t, tw, "other")
		if why := st.Unavailable["target"]; !strings.Contains(why, "null sink cannot read") || !strings.Contains(why, "SOAKD_OTHER_WATCH_PROCESS") {
			t.Errorf("unavailable %v, want why the null sink reads nothing and what can", st.Unavailable)
		}
		if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
			t.Errorf("%d metrics (%v), want none", n, err)
		}
	})
}

// Why a figure is not read is the server's words, which may quote the
// target's password: /status and the summary show them scrubbed. A sink
// names a setting as SOAKD_<W>_X, not knowing the workload: shown as the
// workload's own. Bugs caught: the sink's reasons copied as they came.
func TestUnavailableReasonIsScrubbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{walWhy: "cannot read the WAL as user u with password Hunter2Secret; set SOAKD_<W>_WATCH_PROCESS"}
		tw, _, _, _ := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://u:Hunter2Secret@db/",
			"SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "3s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), plugins(s))
		why, ok := statusOf(t, tw, "seq").Unavailable["wal"]
		if !ok || strings.Contains(why, "Hunter2Secret") || !strings.Contains(why, "cannot read the WAL as user u") ||
			!strings.HasSuffix(why, "; set SOAKD_SEQ_WATCH_PROCESS") {
			t.Errorf("unavailable wal %q, want the reason with the password hidden and SOAKD_SEQ_ named", why)
		}
	})
}

// A KV workload's storage is divided by the records it inserted: the
// insert operations acknowledged, load phase included. Bug caught:
// dividing by every operation (reads and updates too) or by nothing
// the load phase did.
func TestWatchCountsRecordsOfKV(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{}
		tw, _, _, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_TARGET", "watched://", "SOAKD_KV_WORKLOAD", "a",
			"SOAKD_KV_LOAD", "on", "SOAKD_KV_RECORDS", "1000", "SOAKD_KV_LOAD_RATE", "1000", "SOAKD_KV_RATE", "500",
			"SOAKD_KV_DURATION", "5s", "SOAKD_KV_WATCH_INTERVAL", "1s"), plugins(s))
		loaded, ran := sum.Workload("kv", "load"), sum.Workload("kv", "run")
		if loaded == nil || loaded.Units != 1000 || ran == nil || ran.Units < 2000 {
			t.Fatalf("load phase %+v, run phase %+v: want 1000 records loaded, then reads and updates", loaded, ran)
		}
		st := statusOf(t, tw, "kv")
		if st.Counted != "records" || st.Acknowledged == nil || *st.Acknowledged != 1000 ||
			st.StoragePerValue == nil || *st.StoragePerValue != st.StorageTotal.Last/1000 {
			t.Errorf("per value %v over %v %s, want the last storage over the 1000 records loaded", st.StoragePerValue, st.Acknowledged, st.Counted)
		}
	})
}

// One Watcher serving runs one after another, as soakd sweep's points,
// logs a figure the target cannot give once, not once a run; a run of
// another target logs it again. Bug caught: a 36-point sweep repeating
// the same line 36 times.
func TestWatchSaysOnceOverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{}
		p := plugins(s)
		core, logs := observer.New(zapcore.DebugLevel)
		tw := New(zap.New(core), Options{})
		for i, target := range []string{"watched://a", "watched://a", "watched://a", "watched://b"} {
			cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", target, "SOAKD_SEQ_RATE", "100",
				"SOAKD_SEQ_DURATION", "3s", "SOAKD_SEQ_WATCH_INTERVAL", "1s"), p)
			if _, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{tw}}); err != nil {
				t.Fatalf("run %d: %v", i+1, err)
			}
		}
		if n := logs.FilterMessageSnippet("a figure of the target is not available").FilterField(zap.String("figure", "wal")).Len(); n != 2 || len(s.readings()) < 8 {
			t.Errorf("the unavailable WAL logged %d times over %d readings of 4 runs of 2 targets, want twice", n, len(s.readings()))
		}
	})
}
