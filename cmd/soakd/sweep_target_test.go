package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/sweep"
)

// soakd sweep runs the target watch: with the test's own process as the
// watched target, the point says its memory and the cores it used, in
// the JSON, as the markdown's columns and as the charts OUT-target-memory
// and OUT-target-cpu, each drawing the point. Bugs caught: the watch
// built but not among the sweep's observers, or not handed to the sweep;
// the target's charts not written.
func TestSweepWatchesTheTarget(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to watch a process through")
	}
	out := filepath.Join(t.TempDir(), "sweep")
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"sweep"}, map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_WATCH_INTERVAL": "1s", "SOAKD_W_WATCH_PROCESS": strconv.Itoa(os.Getpid()),
		"SOAKD_SWEEP_WORKERS": "1", "SOAKD_SWEEP_BATCH": "10", "SOAKD_SWEEP_REPEATS": "1", "SOAKD_SWEEP_DURATION": "3s",
		"SOAKD_SWEEP_OUT": out}, &stdout, &stderr)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	res := readJSON[sweep.Result](t, out+".json")
	if len(res.Points) != 1 {
		t.Fatalf("points %+v, want one", res.Points)
	}
	pt := res.Points[0]
	if pt.TargetMemoryBytes == nil || *pt.TargetMemoryBytes <= 0 || pt.TargetCPUCores == nil || *pt.TargetCPUCores < 0 {
		t.Fatalf("point without the target's figures: memory %v, cores %v\nstderr:\n%s", pt.TargetMemoryBytes, pt.TargetCPUCores, stderr.String())
	}
	md, err := os.ReadFile(out + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| target memory | target CPU |\n") {
		t.Errorf("markdown without the target's columns:\n%s", md)
	}
	for _, chart := range []string{"target-memory", "target-cpu"} {
		svg, err := os.ReadFile(out + "-" + chart + ".svg")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svg, []byte(`data-series="1 workers" data-points="1"`)) {
			t.Errorf("%s.svg does not draw the point:\n%s", chart, svg)
		}
		if st, err := os.Stat(out + "-" + chart + ".png"); err != nil || st.Size() == 0 {
			t.Errorf("%s.png: %v", chart, err)
		}
	}
}
