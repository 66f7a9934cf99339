package capacity

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
)

// fakeTarget is a target watch of workload seq: a fixed memory and a CPU
// time that grows by cores per second from its creation.
type fakeTarget struct {
	mu     sync.Mutex
	t0     time.Time
	cores  float64
	memory float64
	asked  map[string]bool
}

func (f *fakeTarget) Memory(workload string) (float64, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[workload] = true
	return f.memory, time.Now(), workload == "seq"
}

func (f *fakeTarget) CPU(workload string) (float64, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[workload] = true
	now := time.Now()
	return f.cores * now.Sub(f.t0).Seconds(), now, workload == "seq"
}

// With a target watch, every step says the target's memory (the latest
// reading) and the cores it used over the judged part, and the report's
// table, CSV and JSON carry them. Bugs caught: the figures of another
// workload read, the CPU time itself taken for cores, the columns left
// out of one report.
func TestCapacityTargetFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?capacity=5000&latency=2ms", "SOAKD_SEQ_BATCH_SIZE", "50",
			"SOAKD_SEQ_WORKERS", "8", "SOAKD_CAPACITY_START", "1000", "SOAKD_CAPACITY_HOLD", "5s",
			"SOAKD_CAPACITY_SETTLE", "2s", "SOAKD_CAPACITY_WARMUP", "2s", "SOAKD_CAPACITY_SLO_P99", "50ms"), p)
		ft := &fakeTarget{t0: time.Now(), cores: 1.5, memory: 3 << 30, asked: map[string]bool{}}
		_, res, err := Run(context.Background(), cfg, nil, daemon.Deps{Logger: zap.NewNop(), Plugins: p}, Options{Target: ft})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Steps) == 0 {
			t.Fatal("no step")
		}
		if len(ft.asked) != 1 || !ft.asked["seq"] {
			t.Errorf("figures asked of %v, want seq only", ft.asked)
		}
		for _, s := range res.Steps {
			if s.TargetMemoryBytes == nil || *s.TargetMemoryBytes != ft.memory {
				t.Errorf("step %d: target memory %v, want %v", s.Index, s.TargetMemoryBytes, ft.memory)
			}
			if s.TargetCPUCores == nil || math.Abs(*s.TargetCPUCores-ft.cores) > 1e-9 {
				t.Errorf("step %d: target cores %v, want %v", s.Index, s.TargetCPUCores, ft.cores)
			}
		}
		var md bytes.Buffer
		res.WriteMarkdown(&md)
		if !strings.Contains(md.String(), "| verdict | target memory | target CPU |\n") || !strings.Contains(md.String(), " | 3.0 GiB | 1.50 cores |\n") {
			t.Errorf("markdown without the target's columns:\n%s", md.String())
		}
		var c bytes.Buffer
		if err := res.WriteCSV(&c); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&c).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		head := rows[0]
		if n := len(head); n < 2 || head[n-2] != "target_memory_bytes" || head[n-1] != "target_cpu_cores" || head[n-3] != "diagnosis" {
			t.Fatalf("CSV header %v", head)
		}
		if row := rows[1]; row[len(row)-2] != "3221225472" || !near(row[len(row)-1], ft.cores) {
			t.Errorf("CSV row %v", row)
		}
		var j bytes.Buffer
		if err := res.WriteJSON(&j); err != nil {
			t.Fatal(err)
		}
		var back struct {
			Steps []map[string]any `json:"steps"`
		}
		if err := json.Unmarshal(j.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if s := back.Steps[0]; s["target_memory_bytes"] != ft.memory || !near(fmt.Sprint(s["target_cpu_cores"]), ft.cores) {
			t.Errorf("JSON step %v", s)
		}
	})
}

// near says whether the number s is want, give or take the rounding of
// a difference of fake CPU times.
func near(s string, want float64) bool {
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && math.Abs(v-want) < 1e-9
}

// Without a watch the reports are the ones they always were: no target
// columns, no JSON fields; a step whose figure is unknown among steps
// that have one shows it as unknown, not as 0.
func TestCapacityTargetColumnsOnlyWhenKnown(t *testing.T) {
	t.Parallel()
	r := &Result{Workload: "seq", Steps: []Step{{Index: 1, Kind: "step", Target: 100, Pass: true}}}
	var md, c, j bytes.Buffer
	r.WriteMarkdown(&md)
	_ = r.WriteCSV(&c)
	_ = r.WriteJSON(&j)
	for _, out := range []string{md.String(), c.String(), j.String()} {
		if strings.Contains(out, "target memory") || strings.Contains(out, "target_memory") || strings.Contains(out, "target CPU") || strings.Contains(out, "target_cpu") {
			t.Errorf("target figures without a watch:\n%s", out)
		}
	}
	cores := 0.5
	r.Steps = append(r.Steps, Step{Index: 2, Kind: "step", Target: 200, TargetCPUCores: &cores})
	md.Reset()
	c.Reset()
	r.WriteMarkdown(&md)
	_ = r.WriteCSV(&c)
	if s := md.String(); !strings.Contains(s, "| verdict | target CPU |\n") || strings.Contains(s, "target memory") ||
		!strings.Contains(s, "| pass | – |\n") || !strings.Contains(s, " | 0.50 cores |\n") {
		t.Errorf("markdown with the CPU of one step only:\n%s", s)
	}
	rows, _ := csv.NewReader(&c).ReadAll()
	if len(rows) != 3 || rows[0][len(rows[0])-1] != "target_cpu_cores" || rows[1][len(rows[1])-1] != "" || rows[2][len(rows[2])-1] != "0.5" {
		t.Errorf("CSV with the CPU of one step only: %v", rows)
	}
}
