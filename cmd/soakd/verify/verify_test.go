package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/readback"
	"github.com/soakd/soakd/record"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/summary"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// soakRun runs soakd with env (SOAKD_* settings) to its end, in this
// process, and writes its summary to a file whose path it returns. during,
// if set, runs (in the test's goroutine) while the workloads run.
func soakRun(t *testing.T, env map[string]string, during func()) (*report.Summary, string) {
	t.Helper()
	return soakRunStop(t, env, func(func()) {
		if during != nil {
			during()
		}
	})
}

// soakRunStop is soakRun whose during may end the run early, as SIGTERM
// would, by calling stop: a test whose event must fall inside the run
// then need not guess how long the run lasts on a busy machine.
func soakRunStop(t *testing.T, env map[string]string, during func(stop func())) (*report.Summary, string) {
	t.Helper()
	env = withDefaults(env)
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatalf("config: %v", err)
	}
	type result struct {
		sum *report.Summary
		err error
	}
	done := make(chan result, 1)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	go func() {
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: log, Plugins: p, Version: "test",
			Observers: []daemon.Observer{readback.New(log), record.New()}})
		done <- result{sum, err}
	}()
	during(stop) // in the test's goroutine: it may fail the test
	res := <-done
	sum, err := res.sum, res.err
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := summary.WriteJSONFile(path, sum); err != nil {
		t.Fatal(err)
	}
	return sum, path
}

func withDefaults(env map[string]string) map[string]string {
	out := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0"}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// soakVerify runs soakd verify with env and args and returns its exit
// code, output and JSON report.
func soakVerify(t *testing.T, env map[string]string, args ...string) (int, string, *Report) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "verify.json")
	var out, errb bytes.Buffer
	code := Main(context.Background(), append(args, "--verify-json", path), withDefaults(env), plugins.All(), &out, &errb)
	var rep Report
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("soakd verify: exit %d\n%s%s", code, out.String(), errb.String())
	return code, out.String() + errb.String(), &rep
}

// only returns the report's one workload.
func only(t *testing.T, r *Report) *WorkloadReport {
	t.Helper()
	if len(r.Workloads) != 1 {
		t.Fatalf("%d workloads in the report, want 1", len(r.Workloads))
	}
	return &r.Workloads[0]
}

// counts is the paste-able line's figures.
type counts struct{ acked, stored, lost, dup, mismatched, inDoubt int64 }

func countsOf(w *WorkloadReport) counts {
	return counts{w.Acknowledged, w.Stored, w.Lost, w.Duplicated, w.Mismatched, w.InDoubt}
}

func phase(t *testing.T, s *report.Summary, name, ph string) *report.WorkloadSummary {
	t.Helper()
	w := s.Workload(name, ph)
	if w == nil || w.Verify == nil {
		t.Fatalf("summary has no %s phase of %s with a verify record", ph, name)
	}
	return w
}

// checkContinuous checks VERIFY's counts in a clean run: something was
// read back, nothing failed.
func checkContinuous(t *testing.T, w *report.WorkloadSummary) {
	t.Helper()
	v := w.Verify
	if v.Checked == 0 || v.Missing+v.Mismatch+v.Duplicate != 0 {
		t.Errorf("VERIFY during the run: checked %d, missing %d, mismatch %d, duplicate %d; want some checked, none failed",
			v.Checked, v.Missing, v.Mismatch, v.Duplicate)
	}
	found := false
	for _, op := range w.Ops {
		found = found || op.Op == "verify" && op.Count == v.Checked
	}
	if !found {
		t.Errorf("no op verify with %d latencies in %+v", v.Checked, w.Ops)
	}
}

func hasLine(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Bad settings exit 2, every problem named by its variable; a summary
// that is not one, or without the workload, too.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "x.json")
	if err := os.WriteFile(notJSON, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A summary with no record of what its workload wrote, as an older
	// soakd wrote them.
	noRecord := filepath.Join(dir, "old.json")
	if err := os.WriteFile(noRecord, []byte(fmt.Sprintf(`{"workloads":[{"name":"cpu","phase":"run","source":"devops","target":"postgres://postgres@127.0.0.1:%d/db","scheduled_units":100,"units":100}]}`,
		testserver.ClosedPort(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"built-in target", map[string]string{"SOAKD_WORKLOADS": "seq"}, nil, []string{"SOAKD_SEQ_TARGET: not set"}},
		{"no summary file", nil, []string{"--summary-json", filepath.Join(dir, "none.json")}, []string{"SOAKD_SUMMARY_JSON: "}},
		{"not a summary", nil, []string{"--summary-json", notJSON}, []string{"SOAKD_SUMMARY_JSON: ", "is not a soakd summary"}},
		{"no record in the summary", nil, []string{"--summary-json", noRecord},
			[]string{"SOAKD_SUMMARY_JSON: the summary has no record of workload cpu (a run of an older soakd, or another run)"}},
		{"unknown flag and bad setting", map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://"},
			[]string{"--no-such", "1", "--verify-examples", "-1", "--seq-devices", "0"},
			[]string{"unknown flag --no-such", "SOAKD_VERIFY_EXAMPLES", "SOAKD_SEQ_DEVICES"}},
		{"negative ranges", map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_VERIFY_RANGES": "-1"}, nil,
			[]string{"SOAKD_VERIFY_RANGES: -1: want 0 or more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := soakVerify(t, tc.env, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			for _, w := range tc.want {
				hasLine(t, out, w)
			}
			if tc.name == "no record in the summary" && (strings.Contains(out, "SOAKD_IOT_") || strings.Contains(out, "SOAKD_KV_")) {
				t.Errorf("workloads not in the summary named:\n%s", out)
			}
			if tc.name == "negative ranges" && strings.Contains(out, "SOAKD_VERIFY_EXAMPLES") {
				t.Errorf("SOAKD_VERIFY_EXAMPLES named for a negative SOAKD_VERIFY_RANGES:\n%s", out)
			}
		})
	}
	// A target that kept nothing: nothing to read back (exit 2).
	code, out, _ := soakVerify(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_SEQ_ROWS": "10"})
	if code != 2 {
		t.Errorf("null target: exit %d, want 2", code)
	}
	hasLine(t, out, "SOAKD_SEQ_TARGET: null:// is a built-in target, which keeps nothing: there is nothing to read back")
	// A target soakd cannot read back: the run cannot be verified (exit 1).
	code, out, _ = soakVerify(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "file://" + filepath.Join(dir, "rows.lp"), "SOAKD_SEQ_ROWS": "10"})
	if code != 1 {
		t.Errorf("file target: exit %d, want 1", code)
	}
	hasLine(t, out, "cannot verify")
}

// A target that does not answer: exit 1, and its password is nowhere.
func TestUnreachableTargetKeepsSecrets(t *testing.T) {
	code, out, _ := soakVerify(t, map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops",
		"SOAKD_CPU_TARGET": "postgres://u:hunter2secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=1",
		"SOAKD_CPU_END":    "+1h", "SOAKD_CPU_START": "2026-01-01T00:00:00Z"})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	hasLine(t, out, "cannot verify")
	if strings.Contains(out, "hunter2secret") {
		t.Errorf("the password shows:\n%s", out)
	}
}

// A run on the built-in targets kept nothing: soakd verify of its summary
// says there is nothing to read back (exit 2), naming the target as the
// run wrote it, rather than reporting every unit lost.
func TestBuiltinTargetNothingToReadBack(t *testing.T) {
	for _, tc := range []struct{ workload, target string }{{"seq", "null://?latency=1ms..4ms"}, {"kv", "redis://embedded"}} {
		t.Run(tc.workload, func(t *testing.T) {
			_, path := soakRun(t, map[string]string{"SOAKD_WORKLOADS": tc.workload, "SOAKD_DURATION": "1s"}, nil)
			code, out, rep := soakVerify(t, nil, "--summary-json", path)
			if code != 2 || len(rep.Workloads) != 0 {
				t.Fatalf("exit %d, want 2, with no report\n%s", code, out)
			}
			hasLine(t, out, "SOAKD_"+strings.ToUpper(tc.workload)+"_TARGET: "+tc.target+" is a built-in target, which keeps nothing: there is nothing to read back")
			if strings.Contains(out, "lost") {
				t.Errorf("reports lost units:\n%s", out)
			}
		})
	}
}

// Without a summary every row of the data set is taken as acknowledged:
// an endless one is a configuration error (exit 2) naming the setting
// that would end it, found before any target is read (here one that
// refuses connections).
func TestEndlessWithoutSummary(t *testing.T) {
	target := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/db?sslmode=disable&connect_timeout=1", testserver.ClosedPort(t))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"devops without END", map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": target},
			[]string{"SOAKD_CPU_END: not set, so the data set is endless"}},
		{"devops on the wall clock", map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": target,
			"SOAKD_CPU_END": "+1h", "SOAKD_CPU_CLOCK": "wall"},
			[]string{"SOAKD_CPU_CLOCK: wall stamps rows"}},
		{"seq without ROWS", map[string]string{"SOAKD_WORKLOADS": "s", "SOAKD_S_SOURCE": "seq", "SOAKD_S_TARGET": target},
			[]string{"SOAKD_S_ROWS: 0 makes the data set endless"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _ := soakVerify(t, tc.env)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			for _, w := range tc.want {
				hasLine(t, out, w)
			}
			hasLine(t, out, "without the run's summary, --summary-json, soakd verify reads back a finite data set only")
			if strings.Contains(out, "cannot verify") {
				t.Errorf("the target was read:\n%s", out)
			}
		})
	}
}

// A workload whose target never became ready is in its run's summary
// with zeros and no record of what it wrote, as soakd reports it: it
// wrote nothing, so verify skips it (exit 0) rather than refusing the
// summary as one of an older soakd, which also left the others
// unverified.
func TestNeverStartedWorkloadSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	sum := fmt.Sprintf(`{"workloads":[{"name":"kv","phase":"run","source":"kv","target":"redis://127.0.0.1:%d/0","scheduled_units":0,"units":0}]}`,
		testserver.ClosedPort(t))
	if err := os.WriteFile(path, []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := soakVerify(t, nil, "--summary-json", path)
	if code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	hasLine(t, out, "== verify workload kv: skipped: it never started (its target was never ready), so it wrote nothing")
}
