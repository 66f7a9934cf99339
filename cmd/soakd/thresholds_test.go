package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/testserver"
)

// A thresholds expression soakd cannot read is a configuration error:
// exit 2 with every problem, each naming its variable (and, for the
// expression, the column), before anything is sent.
func TestBadThresholdsExit2(t *testing.T) {
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "off",
		"SOAKD_SEQ_THRESHOLDS": "p99<50ms, p99.9<2OOms, op:read.p99<1ms", "SOAKD_SEQ_RATE": "fast"})
	if code != cli.ExitConfig || out != "" {
		t.Fatalf("exit %d, want 2; stdout %q", code, out)
	}
	for _, want := range []string{
		`SOAKD_SEQ_THRESHOLDS: column 17 of "p99<50ms, p99.9<2OOms, op:read.p99<1ms": "2OOms" is not a value`,
		`SOAKD_SEQ_RATE: `} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code, _, errs := run(t, nil, "config", "--check", "--seq-thresholds", "p99<<1s", "--workloads", "seq"); code != cli.ExitConfig ||
		!strings.Contains(errs, `SOAKD_SEQ_THRESHOLDS: column 4 of "p99<<1s": "<<" is not a comparison`) {
		t.Errorf("config --check: exit %d\n%s", code, errs)
	}
}

// Thresholds set the exit code: 0 when every one passes, 1 when one
// fails; the summary lists each with its value, in text and in JSON.
func TestThresholdsExitCode(t *testing.T) {
	env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "off", "SOAKD_SEQ_RATE": "1000",
		"SOAKD_SEQ_BATCH_SIZE": "10", "SOAKD_SEQ_DURATION": "2s", "SOAKD_SEQ_TARGET": "null://?latency=20ms"}
	for _, tc := range []struct {
		thresholds string
		code       int
		lines      []string
	}{
		{"p99<5s, errors=0, achieved>=99%, dropped=0", cli.ExitOK,
			[]string{"  ✓ p99<5s ", "  ✓ errors=0 ", "  ✓ achieved>=99% ", "100%", "thresholds: all 4 passed"}},
		{"p99<5s, p50<1ms", cli.ExitFailed,
			[]string{"  ✓ p99<5s ", "  ✗ p50<1ms ", "THRESHOLDS FAILED: 1 of 2"}},
	} {
		js := filepath.Join(t.TempDir(), "sum.json")
		env["SOAKD_SEQ_THRESHOLDS"] = tc.thresholds
		code, out, errs := run(t, env, "--summary-json", js)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", tc.thresholds, code, tc.code, out, errs)
		}
		for _, l := range tc.lines {
			if !strings.Contains(out, l) {
				t.Errorf("%s: summary lacks %q:\n%s", tc.thresholds, l, out)
			}
		}
		if tc.code == cli.ExitFailed && !strings.Contains(errs, "1 of 2 thresholds failed: p50<1ms") {
			t.Errorf("the log should say which threshold failed:\n%s", errs)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Workloads []struct {
				Thresholds []struct {
					Threshold string   `json:"threshold"`
					OK        bool     `json:"ok"`
					Value     *float64 `json:"value"`
					Unit      string   `json:"unit"`
				} `json:"thresholds"`
			} `json:"workloads"`
		}
		if err := json.Unmarshal(b, &s); err != nil || len(s.Workloads) != 1 || len(s.Workloads[0].Thresholds) != strings.Count(tc.thresholds, ",")+1 {
			t.Fatalf("summary JSON: %v %s", err, b)
		}
		for _, th := range s.Workloads[0].Thresholds {
			if th.Value == nil || th.Unit == "" || th.OK != (th.Threshold != "p50<1ms") {
				t.Errorf("%s in the JSON summary: %+v", tc.thresholds, th)
			}
		}
	}
}

var firstWindow = regexp.MustCompile(`in 0s–1(\.\d+)?s, `)

// A modelled slowdown half-way through a run fails a drift check: exit 1.
func TestDriftFailsTheRun(t *testing.T) {
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "off", "SOAKD_SEQ_RATE": "500",
		"SOAKD_SEQ_BATCH_SIZE": "10", "SOAKD_SEQ_DURATION": "4s", "SOAKD_SEQ_TARGET": "null://?latency=1ms&slowdown=200ms@2s",
		"SOAKD_SEQ_DRIFT_WARMUP": "0s", "SOAKD_SEQ_THRESHOLDS": "drift.p99<20%@1s"})
	// The first window starts at 0 s and ends at the first clock tick
	// after 1 s, which a loaded machine delivers late (0s–1.1s).
	if code != cli.ExitFailed || !strings.Contains(out, "  ✗ drift.p99<20%@1s  +") || !firstWindow.MatchString(out) {
		t.Errorf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
}

// Real redis-server frozen for 1 s (SIGSTOP) at a constant 1000 ops/s:
// p99<50ms@10s fails and the summary names the worst window, which holds
// the stall; the run exits 1.
func TestRedisStallFailsWindowedThreshold(t *testing.T) {
	srv := testserver.Redis(t)
	js := filepath.Join(t.TempDir(), "sum.json")
	stoppedAt := make(chan time.Time, 1)
	go func() {
		time.Sleep(4 * time.Second)
		stoppedAt <- time.Now()
		_ = srv.Signal(syscall.SIGSTOP)
		time.Sleep(time.Second)
		_ = srv.Signal(syscall.SIGCONT)
	}()
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_KV_TARGET": srv.URL,
		"SOAKD_KV_RECORDS": "1000", "SOAKD_KV_WORKLOAD": "c", "SOAKD_KV_RATE": "1000", "SOAKD_KV_WORKERS": "8",
		"SOAKD_KV_DURATION": "15s", "SOAKD_KV_MAX_LAG": "10s", "SOAKD_KV_DATA_TYPE": "string", "SOAKD_KV_FIELDS": "1",
		"SOAKD_KV_KEY_PREFIX": "th:", "SOAKD_KV_THRESHOLDS": "p99<50ms@10s, errors=0"}, "--summary-json", js)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "  ✗ p99<50ms@10s  worst ") || !strings.Contains(out, " in window ") || !strings.Contains(out, "  ✓ errors=0 ") {
		t.Errorf("summary:\n%s", out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Workloads []struct {
			Phase      string    `json:"phase"`
			Started    time.Time `json:"started"`
			Thresholds []struct {
				Threshold     string `json:"threshold"`
				OK            bool   `json:"ok"`
				Windows       int    `json:"windows"`
				FailedWindows int    `json:"failed_windows"`
				Worst         *struct {
					From  float64 `json:"from_seconds"`
					To    float64 `json:"to_seconds"`
					Value float64 `json:"value"`
				} `json:"worst_window"`
			} `json:"thresholds"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	w := s.Workloads[len(s.Workloads)-1]
	if w.Phase != "run" || len(w.Thresholds) != 2 {
		t.Fatalf("summary JSON: %s", b)
	}
	th := w.Thresholds[0]
	stall := (<-stoppedAt).Sub(w.Started).Seconds()
	t.Logf("stall at %.2fs of the run phase; %s: %d of %d windows failed, worst %+v", stall, th.Threshold, th.FailedWindows, th.Windows, th.Worst)
	// The reads the stall delayed complete when it ends; the worst window
	// holds that.
	if th.OK || th.Worst == nil || th.Worst.Value < 0.5 || th.Worst.From > stall+1 || th.Worst.To < stall+1 || th.Worst.To-th.Worst.From > 10.5 {
		t.Errorf("%+v: want the worst window (at most 10 s) to hold the end of the stall at %.2fs", th, stall)
	}
	// Windows end every second from 10 s to 15 s. Those without the stall
	// pass on an idle machine, but may not under the race detector on a
	// busy one, so only the count is checked.
	if th.Windows < 6 || th.FailedWindows < 1 {
		t.Errorf("%d of %d windows failed: want at least the windows ending 10 s to 15 s judged, and a failure", th.FailedWindows, th.Windows)
	}
}

// A check of a query type the source never issues could never be judged:
// it is refused before anything runs, naming the source's own ops.
func TestThresholdOfAQueryTypeNotIssued(t *testing.T) {
	env := map[string]string{"SOAKD_WORKLOADS": "q", "SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_TARGET": "null://",
		"SOAKD_LISTEN": "off", "SOAKD_Q_RATE": "50", "SOAKD_DURATION": "1s", "SOAKD_Q_THRESHOLDS": "op:last-loc.p99<1s"}
	code, out, errs := run(t, env)
	if code != cli.ExitConfig || !strings.Contains(errs, `SOAKD_Q_THRESHOLDS: op:last-loc.p99<1s: source devops-queries issues no op "last-loc"`) ||
		!strings.Contains(errs, "lastpoint") {
		t.Fatalf("exit %d, want 2 naming SOAKD_Q_THRESHOLDS and the source's ops\n%s", code, errs)
	}
	if out != "" {
		t.Errorf("nothing should run; stdout:\n%s", out)
	}
	env["SOAKD_Q_THRESHOLDS"] = "op:lastpoint.p99<10s"
	if code, out, errs := run(t, env); code != cli.ExitOK {
		t.Errorf("a devops query type: exit %d\n%s\n%s", code, out, errs)
	}
}
