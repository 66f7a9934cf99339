package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
)

// fakeTarget is a target watch of workload seq that reads once a second,
// as WATCH_INTERVAL=1s would: its memory is 3 GiB on odd seconds and
// 2 GiB on even ones, its CPU time grows by cores per second.
type fakeTarget struct {
	mu    sync.Mutex
	t0    time.Time
	cores float64
	asked map[string]bool
}

// reading is the time of the latest reading.
func (f *fakeTarget) reading(workload string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[workload] = true
	return f.t0.Add(time.Since(f.t0).Truncate(time.Second))
}

func (f *fakeTarget) Memory(workload string) (float64, time.Time, bool) {
	at := f.reading(workload)
	if at.Sub(f.t0)/time.Second%2 == 1 {
		return 3 << 30, at, workload == "seq"
	}
	return 2 << 30, at, workload == "seq"
}

func (f *fakeTarget) CPU(workload string) (float64, time.Time, bool) {
	at := f.reading(workload)
	return f.cores * at.Sub(f.t0).Seconds(), at, workload == "seq"
}

// With a target watch, every point says the target's peak memory and the
// cores it used, and the markdown, CSV and JSON carry them. Bugs caught:
// the last memory reading taken for the peak, the CPU time itself taken
// for cores, the figures of another workload read, a column left out.
func TestSweepTargetFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		env := enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=1ms",
			"SOAKD_SWEEP_WORKERS", "1,2", "SOAKD_SWEEP_BATCH", "10", "SOAKD_SWEEP_REPEATS", "2", "SOAKD_SWEEP_DURATION", "3s")
		cfg := enginetest.Load(t, env, p)
		ft := &fakeTarget{t0: time.Now(), cores: 1.5, asked: map[string]bool{}}
		res, err := Run(context.Background(), cfg, env, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{Target: ft})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Points) != 2 {
			t.Fatalf("%d points, want 2", len(res.Points))
		}
		if len(ft.asked) != 1 || !ft.asked["seq"] {
			t.Errorf("figures asked of %v, want seq only", ft.asked)
		}
		for _, pt := range res.Points {
			if pt.TargetMemoryBytes == nil || *pt.TargetMemoryBytes != 3<<30 {
				t.Errorf("point %d workers: target memory %v, want the peak, 3 GiB", pt.Workers, pt.TargetMemoryBytes)
			}
			if pt.TargetCPUCores == nil || math.Abs(*pt.TargetCPUCores-ft.cores) > 1e-9 {
				t.Errorf("point %d workers: target cores %v, want %v", pt.Workers, pt.TargetCPUCores, ft.cores)
			}
		}
		var md bytes.Buffer
		res.WriteMarkdown(&md)
		if s := md.String(); !strings.Contains(s, "| failed | | target memory | target CPU |\n|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n") ||
			!strings.Contains(s, " | 3.0 GiB | 1.50 cores |\n") {
			t.Errorf("markdown without the target's columns:\n%s", s)
		}
		var c bytes.Buffer
		if err := res.WriteCSV(&c); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&c).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if head := rows[0]; len(head) != 12 || head[9] != "throughput_falls" || head[10] != "target_memory_bytes" || head[11] != "target_cpu_cores" {
			t.Fatalf("CSV header %v", head)
		}
		if len(rows) != 5 {
			t.Fatalf("%d CSV rows, want a header and one per run", len(rows))
		}
		for _, row := range rows[1:] {
			if row[10] != "3221225472" || row[11] != "1.5" {
				t.Errorf("CSV row %v", row)
			}
		}
		var j bytes.Buffer
		if err := res.WriteJSON(&j); err != nil {
			t.Fatal(err)
		}
		var back struct {
			Points []map[string]any `json:"points"`
		}
		if err := json.Unmarshal(j.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if pt := back.Points[0]; pt["target_memory_bytes"] != float64(3<<30) || fmt.Sprint(pt["target_cpu_cores"]) != "1.5" {
			t.Errorf("JSON point %v", pt)
		}
	})
}

// A watch that has read nothing, and a point too short for two readings
// of the target's CPU, leave the figures out: never 0.
func TestSweepTargetFiguresUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pw := watchPoint(&fakeTarget{t0: time.Now(), asked: map[string]bool{}}, "other")
		time.Sleep(5 * time.Second)
		if m, c := pw.stop(); m != nil || c != nil {
			t.Errorf("no reading: memory %v, cores %v; want neither", m, c)
		}
		ft := &fakeTarget{t0: time.Now().Add(-time.Hour), cores: 2, asked: map[string]bool{}}
		time.Sleep(time.Second / 2) // between two readings
		pw = watchPoint(ft, "seq")
		time.Sleep(time.Second / 4)
		if m, c := pw.stop(); m != nil || c != nil {
			t.Errorf("only a reading from before the point: memory %v, cores %v; want neither", m, c)
		}
		time.Sleep(time.Second / 4) // a new reading
		pw = watchPoint(ft, "seq")
		time.Sleep(time.Second / 2)
		if m, c := pw.stop(); m == nil || c != nil {
			t.Errorf("one reading: memory %v, cores %v; want the memory alone", m, c)
		}
	})
}

// fullResult is a sweep's result with every field the reports print.
func fullResult() *Result {
	return &Result{Workload: "seq", Unit: "rows", BatchName: "BATCH_SIZE", Settings: config.SweepConfig{Repeats: 2, Duration: 3 * time.Second},
		Run: []string{"SOAKD_SEQ_TARGET=null://"}, Points: []Point{
			{Workers: 1, Batch: 10, Rates: []float64{100, 120}, Min: 100, Median: 110, Max: 120, P99: 0.002, Failed: 1},
			{Workers: 2, Batch: 10, Rates: []float64{200, 220}, Min: 200, Median: 210, Max: 220, P99: 0.003, Best: true},
		}, USL: &USL{Batch: 10, Poor: true, Note: "fewer than 3 worker counts at this batch size: no fit"}, Outcome: "done"}
}

// Without the target's figures the markdown and CSV are the ones they
// were before the target watch came to sweeps, byte for byte; with the
// CPU of one point only, the other shows it unknown.
func TestSweepTargetColumnsOnlyWhenKnown(t *testing.T) {
	t.Parallel()
	r := fullResult()
	var md, c, j bytes.Buffer
	r.WriteMarkdown(&md)
	_ = r.WriteCSV(&c)
	_ = r.WriteJSON(&j)
	if md.String() != wantMarkdown {
		t.Errorf("markdown:\n%s\nwant:\n%s", md.String(), wantMarkdown)
	}
	if c.String() != wantCSV {
		t.Errorf("CSV:\n%s\nwant:\n%s", c.String(), wantCSV)
	}
	if strings.Contains(j.String(), "target_") {
		t.Errorf("JSON with target figures without a watch:\n%s", j.String())
	}
	cores := 0.5
	r.Points[1].TargetCPUCores = &cores
	md.Reset()
	c.Reset()
	r.WriteMarkdown(&md)
	_ = r.WriteCSV(&c)
	if s := md.String(); !strings.Contains(s, "| failed | | target CPU |\n") || strings.Contains(s, "target memory") ||
		!strings.Contains(s, "| 1 |  | – |\n") || !strings.Contains(s, "| best | 0.50 cores |\n") {
		t.Errorf("markdown with the CPU of one point only:\n%s", s)
	}
	rows, _ := csv.NewReader(&c).ReadAll()
	if len(rows) != 5 || rows[0][10] != "target_cpu_cores" || len(rows[0]) != 11 || rows[1][10] != "" || rows[4][10] != "0.5" {
		t.Errorf("CSV with the CPU of one point only: %v", rows)
	}
}

// The reports of fullResult() as they were before sweeps read the target.
const (
	wantMarkdown = "# Sweep of workload seq: WORKERS × BATCH_SIZE, closed loop\n\n**Best: 2 workers, BATCH_SIZE 10: 210 rows/s** (median of 2 runs, min 200, max 220).\n\n## Environment\n\n| | |\n|---|---|\n| CPU |  |\n| cores | 0 |\n| memory |  |\n| OS |  |\n| kernel |  |\n| architecture |  |\n| Go |  |\n| soakd |  |\n\nEach point: 2 runs; runs without a finite data set last 3s.\n\nSettings: `SOAKD_SEQ_TARGET=null://`\n\n## Points (rows/s)\n\n| workers | BATCH_SIZE | median | min | max | p99 | failed | |\n|---:|---:|---:|---:|---:|---:|---:|---|\n| 1 | 10 | 110 | 100 | 120 | 2.00ms | 1 |  |\n| 2 | 10 | 210 | 200 | 220 | 3.00ms | 0 | best |\n\n## Universal Scalability Law (BATCH_SIZE 10)\n\n**Poor fit**: Fewer than 3 worker counts at this batch size: no fit.\n"
	wantCSV      = "workers,batch_size,run,units_per_second,median,min,max,p99_seconds,best,throughput_falls\n1,10,1,100,110,100,120,0.002,false,false\n1,10,2,120,110,100,120,0.002,false,false\n2,10,1,200,210,200,220,0.003,true,false\n2,10,2,220,210,200,220,0.003,true,false\n"
)
