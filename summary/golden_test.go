package summary

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/targetwatch"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func ptr(v float64) *float64 { return &v }

// richSummary reaches every line the text can print: a load phase, values,
// work cut at shutdown, a target never ready, a drop diagnosis, errors and
// the last one, the read-back, a query workload's figures, dispatch delay,
// each kind of threshold and a failure.
func richSummary() *report.Summary {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q := report.Quantiles{Count: 1200, Min: 0.000412, Mean: 0.0021, P50: 0.0018, P90: 0.0033, P99: 0.0121, P999: 0.0407, Max: 0.0913, StdDev: 0.0011}
	return &report.Summary{Version: "test", Started: t0, Seconds: 70, Workloads: []report.WorkloadSummary{
		{Name: "kv", Phase: "load", Source: "ycsb", Target: "redis://db:6379", Kind: "kv", Rate: "max", Workers: 8, Batch: 1,
			Seconds: 10, StoppedBy: "end of data set", Units: 10000, UnitName: "ops", UnitRate: 1000, Scheduled: 10000,
			Errors: map[string]int64{"timeout": 0}, Prepared: true,
			Ops: []report.OpSummary{{Op: "insert", Count: 10000, PerSec: 1000, Response: q, Service: q}}},
		{Name: "kv", Phase: "run", Source: "ycsb", Target: "redis://db:6379", Kind: "kv", Rate: "1000", Workers: 8, Batch: 1,
			Seconds: 60, StoppedBy: "DURATION", Units: 59000, UnitName: "ops", UnitRate: 983.33, Bytes: 123456,
			Scheduled: 60000, Failed: 400, Dropped: 600, DroppedAtShutdown: 20,
			DropCause: &report.DropCause{Bottleneck: "workers", WorkersBusy: 0.93, Diagnosis: "the 8 workers were busy 93% of the time"},
			Errors:    map[string]int64{"timeout": 300, "rejected": 100}, Prepared: true,
			LastError: &report.ErrorSummary{Text: "i/o timeout", Class: "timeout", First: t0, Last: t0.Add(time.Minute)},
			Verify:    &report.VerifySummary{Fraction: 0.01, Checked: 590, Missing: 1, Mismatch: 2, Duplicate: 3, Skipped: 4},
			Ops:       []report.OpSummary{{Op: "read", Count: 1200, PerSec: 20, Response: q, Service: q}},
			Dispatch:  q,
			Thresholds: []report.ThresholdResult{
				{Threshold: "p99<10ms", OK: false, Value: ptr(0.0121), Unit: "seconds"},
				{Threshold: "errors<1%", OK: true, Value: ptr(0.00667), Unit: "ratio"},
				{Threshold: "p99<20ms@10s", OK: false, Value: ptr(0.0253), Unit: "seconds", Windows: 5, FailedWindows: 1,
					WorstWindow: &report.WindowValue{From: 20, To: 30, Value: 0.0253}},
				{Threshold: "drift.p99<20%@20s", OK: true, Value: ptr(0.125), Unit: "ratio", Windows: 3, WindowUnit: "seconds",
					EarlyWindow:  &report.WindowValue{From: 10, To: 30, Value: 0.002},
					LatestWindow: &report.WindowValue{From: 42, To: 60.04, Value: 0.00225}},
				{Threshold: "achieved>99%", OK: true, Value: ptr(983), Unit: "units_per_second"},
				{Threshold: "dropped=0", OK: true, Value: ptr(-3), Unit: "count"},
				{Threshold: "p50<1s", OK: true, Value: ptr(0), Unit: "seconds"},
				{Threshold: "p50<1µs", OK: true, Note: "no data"},
			},
			Failure: &report.Failure{Reason: "every write of the run phase failed (400 writes)", LastError: "i/o timeout",
				Class: "timeout", Attempts: 400, Seconds: 59.5}},
		{Name: "q", Phase: "run", Source: "devops-queries", Target: "postgres://db/x", Kind: "query", Rate: "50", Workers: 2, Batch: 1,
			Seconds: 60, Units: 3000, UnitName: "queries", UnitRate: 50, Values: 12, ValueRate: 0.2, Scheduled: 3000,
			Errors: map[string]int64{}, Prepared: false,
			Ops: []report.OpSummary{{Op: "lastpoint", Count: 3000, PerSec: 50, Response: q, Service: q, Rows: 42}}},
		{Name: "down", Phase: "run", Source: "seq", Target: "postgres://db:1/x", Kind: "series", Rate: "10", Workers: 1, Batch: 10, UnitName: "rows",
			Errors: map[string]int64{"connection": 6}, Prepared: false,
			Failure: &report.Failure{Reason: "the target never became ready"}},
	}}
}

// The text reads exactly as it always has: scripts and people grep it.
func TestTextGolden(t *testing.T) {
	var out bytes.Buffer
	WriteText(&out, richSummary())
	checkGolden(t, "testdata/text.golden", &out)
}

// targetSummary is richSummary with the targets' own figures
// (targetwatch's target_figures): kv's target read through its sink, with
// failed readings and a figure it cannot read; q's through its process
// alone, read once; down's never read (nothing to read it through),
// which prints nothing.
func targetSummary() *report.Summary {
	s := richSummary()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(2 * time.Hour)
	s.Workloads[1].Extra = map[string]any{"target_figures": targetwatch.Summary{
		IntervalSeconds: 10, Readings: 720, Errors: 2, LastError: "dial tcp 10.0.0.5:6379: i/o timeout", FirstAt: &t0, LastAt: &t1,
		Memory: map[string]targetwatch.Figure{
			"used": {First: 1.1 * (1 << 30), Last: 1.4 * (1 << 30), Peak: 1.5 * (1 << 30), Seconds: 7200, GrowthPerHour: ptr(0.3 * (1 << 30) / 2)},
			"rss":  {First: 2.5 * (1 << 30), Last: 2.25 * (1 << 30), Peak: 2.5 * (1 << 30), Seconds: 7200, GrowthPerHour: ptr(-0.25 * (1 << 30) / 2)},
		},
		Storage:         map[string]targetwatch.Figure{"aof": {First: 1 << 20, Last: 37 << 20, Peak: 37 << 20, Seconds: 7200, GrowthPerHour: ptr(36 << 20 / 2)}},
		StorageTotal:    &targetwatch.Figure{First: 1 << 20, Last: 37 << 20, Peak: 37 << 20, Seconds: 7200, GrowthPerHour: ptr(36 << 20 / 2)},
		CPU:             &targetwatch.CPU{First: 1200.5, Last: 5520.5, From: "target", Cores: ptr(0.6)},
		StoragePerValue: ptr(float64(37<<20) / 69000), Acknowledged: ptr(69000), Counted: "records",
		Keys:                     &targetwatch.Figure{First: 10000, Last: 69000, Peak: 69000, Seconds: 7200, GrowthPerHour: ptr(59000 / 2)},
		Evictions:                &targetwatch.Figure{First: 0, Last: 120, Peak: 120, Seconds: 7200, GrowthPerHour: ptr(120 / 2)},
		MemoryFragmentationRatio: &targetwatch.Figure{First: 1.02, Last: 1.35, Peak: 1.4, Seconds: 7200, GrowthPerHour: ptr(0.33 / 2)},
		Unavailable:              map[string]string{"storage.rdb": "no RDB file yet"},
	}}
	s.Workloads[2].Extra = map[string]any{"target_figures": &targetwatch.Summary{
		IntervalSeconds: 10, Readings: 1, FirstAt: &t0, LastAt: &t0,
		Memory:      map[string]targetwatch.Figure{"process_rss": {First: 300, Last: 300, Peak: 300}},
		CPU:         &targetwatch.CPU{First: 3, Last: 3, From: "process"},
		Unavailable: map[string]string{"target": "the postgres sink cannot read the query workload's figures"},
	}}
	s.Workloads[3].Extra = map[string]any{"target_figures": targetwatch.Summary{
		IntervalSeconds: 10, Unavailable: map[string]string{"target": "the null sink cannot read its target's own figures"},
	}}
	return s
}

// With the targets' figures, each workload's entry gets a target block
// after its latencies, and nothing else changes.
func TestTextGoldenTarget(t *testing.T) {
	var out bytes.Buffer
	WriteText(&out, targetSummary())
	checkGolden(t, "testdata/text_target.golden", &out)
	var plain bytes.Buffer
	WriteText(&plain, richSummary())
	var kept []string
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		if !strings.HasPrefix(l, "target (") && !strings.HasPrefix(l, "  memory ") && !strings.HasPrefix(l, "  storage ") &&
			!strings.HasPrefix(l, "  cpu: ") && !strings.HasPrefix(l, "  keys: ") && !strings.HasPrefix(l, "  evictions: ") &&
			!strings.HasPrefix(l, "  memory fragmentation ratio: ") && !strings.HasPrefix(l, "  not read: ") && !strings.HasPrefix(l, "  last failed reading: ") &&
			!strings.HasPrefix(l, "  WARNING: the target evicted ") {
			kept = append(kept, l)
		}
	}
	if got := strings.Join(kept, ""); got != plain.String() {
		t.Errorf("without its target blocks, the text differs from the summary without figures:\n%s", got)
	}
}

// checkGolden compares out with the file golden, which -update rewrites.
func checkGolden(t *testing.T, golden string, out *bytes.Buffer) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("text summary differs from %s:\n%s", golden, out.String())
	}
}

// Over a first run of seconds the target warms up; its growth per hour,
// extrapolated from that, read as gigabytes an hour (+13.9 GiB/h of RSS
// after 8 s). The text prints a figure's growth per hour over 10 minutes
// of its readings or more (a figure first read late in a long run has a
// short span of its own), and first → last always.
func TestTextTargetGrowthNeedsTenMinutes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		memory, storage time.Duration // the spans of the memory figures and of storage total's
		wantMemory      bool
		wantStorage     bool
	}{
		{"70 s", 70 * time.Second, 70 * time.Second, false, false},
		{"9 min", 9 * time.Minute, 9 * time.Minute, false, false},
		{"10 min", 10 * time.Minute, 10 * time.Minute, true, true},
		{"storage first read late", 2 * time.Hour, 30 * time.Second, true, false},
	} {
		s := targetSummary()
		f := s.Workloads[1].Extra["target_figures"].(targetwatch.Summary)
		for k, m := range f.Memory {
			m.Seconds = tc.memory.Seconds()
			f.Memory[k] = m
		}
		total := *f.StorageTotal
		total.Seconds = tc.storage.Seconds()
		f.StorageTotal = &total
		s.Workloads[1].Extra["target_figures"] = f
		var out bytes.Buffer
		WriteText(&out, s)
		n := 0
		for _, l := range strings.Split(out.String(), "\n") {
			want := tc.wantMemory
			switch {
			case strings.HasPrefix(l, "  memory rss"), strings.HasPrefix(l, "  memory used"):
			case strings.HasPrefix(l, "  storage total"):
				want = tc.wantStorage
			default:
				continue
			}
			n++
			if strings.Contains(l, "/h") != want || !strings.Contains(l, " → ") {
				t.Errorf("%s: %q, want growth per hour %t and first → last", tc.name, l, want)
			}
		}
		if n != 3 {
			t.Errorf("%s: %d memory and storage lines, want 3:\n%s", tc.name, n, out.String())
		}
	}
}
