package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
)

// thresholdEnv sweeps workload w (seq) over grid against a target that
// handles 100 rows/s, queues the rest and answers 100 ms later: a batch
// of 10 (BATCH_SIZE unless an axis) takes 200 ms with one worker, about 400 ms with four, which
// keep the target busy. One run of 2 s per point.
func thresholdEnv(out, grid, thresholds string) map[string]string {
	return map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "w",
		"SOAKD_W_SOURCE": "seq", "SOAKD_W_BATCH_SIZE": "10", "SOAKD_W_TARGET": "null://?latency=100ms&capacity=100", "SOAKD_W_WATCH_INTERVAL": "0",
		"SOAKD_W_THRESHOLDS": thresholds, "SOAKD_SWEEP_GRID": grid, "SOAKD_SWEEP_REPEATS": "1", "SOAKD_SWEEP_DURATION": "2s",
		"SOAKD_SWEEP_OUT": out}
}

// soakd sweep with THRESHOLDS reports, for a grid over WORKERS, which
// points met them: the JSON points, the CSV's failed_thresholds column,
// the markdown's thresholds column and its two-axis thresholds table;
// the sweep did its job (exit 0). A sweep where no point met them exits
// 1, as a run that failed its thresholds would. Bugs caught: the runs'
// verdicts dropped from the files, the exit code blind to them.
func TestSweepThresholdsReportAndExit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep")
	code, stdout, stderr := soakd(t, thresholdEnv(out, "WORKERS=1,4 BATCH_SIZE=10", "p99<300ms, errors<1%"), "sweep")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0: a point met the thresholds\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res := readJSON[struct {
		Points []map[string]any `json:"points"`
	}](t, out+".json")
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want 2", len(res.Points))
	}
	for i, want := range []struct{ passed, failed string }{{"1", "<nil>"}, {"0", "[p99<300ms]"}} {
		pt := res.Points[i]
		if passed, failed := fmt.Sprint(pt["thresholds_passed_runs"]), fmt.Sprint(pt["failed_thresholds"]); passed != want.passed || failed != want.failed {
			t.Errorf("JSON point %v: %s runs passed, failed %s; want %s, %s", pt["axis_values"], passed, failed, want.passed, want.failed)
		}
	}
	f, err := os.Open(out + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range rows[0] {
		if h == "failed_thresholds" {
			col = i
		}
	}
	if col < 0 || len(rows) != 3 || rows[1][col] != "" || rows[2][col] != "p99<300ms" {
		t.Errorf("CSV without the failed thresholds of each run (column %d): %v", col, rows)
	}
	md, err := os.ReadFile(out + ".md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**Thresholds: 1 of 2 points passed every threshold in each of their runs.**",
		"## thresholds\n\n| WORKERS \\ BATCH_SIZE | 10 |\n|---|---:|\n| 1 | ✓ 1 of 1 run |\n| 4 | ✗ p99<300ms; 0 of 1 run passed |\n",
		"| p99 | failed | thresholds | |\n",
		" | ✓ 1 of 1 run | ",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown without %q:\n%s", want, md)
		}
	}

	out = filepath.Join(t.TempDir(), "none")
	code, stdout, stderr = soakd(t, thresholdEnv(out, "WORKERS=4", "p99<300ms"), "sweep")
	if code != cli.ExitFailed || !strings.Contains(stderr, "no point passed every threshold in each of its runs (1 judged)") {
		t.Errorf("exit %d, want 1 when no point met the thresholds\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if md, err := os.ReadFile(out + ".md"); err != nil || !strings.Contains(string(md), "**Thresholds: no point passed every threshold in each of its runs** (1 judged).") {
		t.Errorf("markdown (%v):\n%s", err, md)
	}
}
