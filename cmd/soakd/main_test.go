package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
)

// TestMain doubles as soakd itself when SOAKD_TEST_MAIN=1, so tests can
// run the real binary as a subprocess and signal it.
func TestMain(m *testing.M) {
	if os.Getenv("SOAKD_TEST_MAIN") == "1" {
		if os.Getenv("TEST_SOAKD_HUP") == "terminal" {
			// SIGHUP as a terminal's session leaves it, not ignored,
			// whatever the test runner inherited (a CI under nohup
			// passes its ignored SIGHUP on to every process it starts).
			signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		}
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// run runs soakd with env and args and returns its exit code, stdout and
// stderr. Unless the test sets the listen address, soakd listens on a
// free loopback port: the default, :9480, may be taken on the machine
// running the tests (a soakd someone left running, a parallel test).
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	if _, set := env["SOAKD_LISTEN"]; !set && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--listen") }) {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["SOAKD_LISTEN"] = "127.0.0.1:0"
	}
	var out, errb bytes.Buffer
	code := realMain(context.Background(), args, env, &out, &errb)
	return code, out.String(), errb.String()
}

// readJSON decodes the JSON file at path (a summary, a capacity or sweep
// result) into a T.
func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBadConfigExits2WithEveryProblem(t *testing.T) {
	code, out, errs := run(t, map[string]string{
		"SOAKD_WORKLOADS": "a", "SOAKD_A_SOURCE": "seq", "SOAKD_A_RATE": "step:1000",
		"SOAKD_A_TARGET": "postgress://x", "SOAKD_A_DURATION": "forever",
	}, "--a-workers", "-1", "--listen", "off")
	if code != cli.ExitConfig {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errs)
	}
	for _, want := range []string{"SOAKD_A_RATE: rate \"step:1000\"", "SOAKD_A_TARGET: unknown scheme \"postgress\"",
		"SOAKD_A_DURATION: ", "SOAKD_A_WORKERS: -1 is out of range"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if out != "" {
		t.Errorf("nothing should run; stdout:\n%s", out)
	}
	if code, _, errs := run(t, nil, "--no-such-setting", "1"); code != cli.ExitConfig || !strings.Contains(errs, "unknown flag --no-such-setting") {
		t.Errorf("unknown flag: exit %d\n%s", code, errs)
	}
	if code, _, _ := run(t, nil, "frobnicate"); code != cli.ExitConfig {
		t.Errorf("unknown command: exit %d", code)
	}
}

func TestConfigCommand(t *testing.T) {
	env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_PASSWORD": "hunter2",
		"SOAKD_SEQ_TARGET": "null://?latency=1ms"}
	code, out, errs := run(t, env, "config")
	if code != cli.ExitOK {
		t.Fatalf("config: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"SOAKD_SEQ_RATE", "--seq-rate", "SOAKD_SEQ_DEVICES", "SOAKD_SHUTDOWN_GRACE", "(set)"} {
		if !strings.Contains(out, want) {
			t.Errorf("config output lacks %q", want)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Error("config prints a password")
	}
	if code, out, _ := run(t, env, "config", "--check"); code != cli.ExitOK || !strings.Contains(out, "configuration ok") {
		t.Errorf("config --check: exit %d %s", code, out)
	}
	if code, _, errs := run(t, env, "config", "--check", "--seq-rate", "x"); code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_SEQ_RATE") {
		t.Errorf("config --check with a bad rate: exit %d %s", code, errs)
	}
	if code, out, _ := run(t, nil, "version"); code != cli.ExitOK || !strings.HasPrefix(out, "soakd ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// soakd generate builds its data set from the sources run has: each
// series source's settings are its flags and SOAKD_GEN_* variables, and a
// source without a finite set of rows is refused.
func TestGenerateUsesTheSourceList(t *testing.T) {
	for _, e := range plugins.All().Sources.Entries() {
		for _, name := range e.Names {
			code, out, errs := run(t, nil, "generate", "--source", name, "--help")
			if e.File == nil {
				if code, _, errs := run(t, nil, "generate", "--source", name); code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_GEN_SOURCE: "+name) {
					t.Errorf("generate --source %s: exit %d, want 2 naming SOAKD_GEN_SOURCE:\n%s", name, code, errs)
				}
				continue
			}
			if code != cli.ExitOK {
				t.Fatalf("generate --source %s --help: exit %d\n%s", name, code, errs)
			}
			for _, s := range settings.Of(e.NewSettings().Fields(), "SOAKD_GEN_") {
				flag := strings.TrimPrefix(s.Flag, "gen-")
				if !regexp.MustCompile(`(?m)^` + s.Key + ` +--` + flag + ` `).MatchString(out) {
					t.Errorf("generate --source %s --help does not list %s as --%s:\n%s", name, s.Key, flag, out)
				}
			}
		}
	}
	for _, tc := range []struct {
		env   map[string]string
		lines int
	}{
		{map[string]string{"SOAKD_GEN_SCALE": "2", "SOAKD_GEN_END": "+1m"}, 2 * 6},
		{map[string]string{"SOAKD_GEN_SOURCE": "seq", "SOAKD_GEN_ROWS": "5"}, 5},
	} {
		code, out, errs := run(t, tc.env, "generate", "--quiet")
		if code != cli.ExitOK || strings.Count(out, "\n") != tc.lines {
			t.Errorf("generate with %v: exit %d, %d lines, want %d\n%s", tc.env, code, strings.Count(out, "\n"), tc.lines, errs)
		}
	}
}

// A finite run exits 0 and prints the summary; --summary-json writes it.
func TestRunWritesSummary(t *testing.T) {
	js := filepath.Join(t.TempDir(), "sum.json")
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "seq"},
		"--seq-rate", "max", "--seq-rows", "5000", "--listen", "off", "--summary-json", js)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "loaded 5000 rows in") || !strings.Contains(out, "WRITE") {
		t.Errorf("summary:\n%s", out)
	}
	if !strings.Contains(errs, "built-in target") {
		t.Errorf("the log must say a built-in target is used:\n%s", errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Workloads []struct {
			Units int64 `json:"units"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(b, &s); err != nil || len(s.Workloads) != 1 || s.Workloads[0].Units != 5000 {
		t.Errorf("summary JSON: %v %s", err, b)
	}
}

// A summary that cannot be written (/dev/full: its directory exists, so
// the configuration passes) fails the run naming SOAKD_SUMMARY_JSON, and
// the report is still written: it was lost with the summary.
func TestSummaryWriteFailureKeepsTheReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.html")
	code, _, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "seq"},
		"--seq-rate", "max", "--seq-rows", "100", "--listen", "off", "--summary-json", "/dev/full", "--report", report)
	if code != cli.ExitFailed || !strings.Contains(errs, "cannot write the summary") || !strings.Contains(errs, "SOAKD_SUMMARY_JSON") {
		t.Errorf("exit %d, want %d with the summary's failure naming SOAKD_SUMMARY_JSON:\n%s", code, cli.ExitFailed, errs)
	}
	if st, err := os.Stat(report); err != nil || st.Size() == 0 {
		t.Errorf("the report was not written: %v", err)
	}
}

// With no target a kv workload runs against the built-in in-process
// Redis server: the log names redis://embedded, every operation of the
// load and the run succeeds, and the target's figures are not read.
func TestBuiltinKVTarget(t *testing.T) {
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv"},
		"--kv-records", "300", "--kv-rate", "1000", "--kv-duration", "500ms", "--listen", "off")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "built-in target") || !strings.Contains(errs, `"target":"redis://embedded"`) {
		t.Errorf("the log must name the built-in target redis://embedded:\n%s", errs)
	}
	if !strings.Contains(out, "ran 300 ops") || strings.Count(out, "errors: none") != 2 || !strings.Contains(out, "READ ") {
		t.Errorf("summary:\n%s", out)
	}
	// The built-in Redis is soakd's own process: its summary lists no
	// target figures (it refuses most INFO sections, which read as a list
	// of figures not read).
	if strings.Contains(out, "target (read every") || strings.Contains(out, "not read") {
		t.Errorf("the summary of a built-in target shows the target's figures:\n%s", out)
	}
}

// On the built-in target, whose records live in soakd's own memory, a
// kv workload loads 1,000 records unless RECORDS is set, and the log
// says so.
func TestBuiltinKVRecords(t *testing.T) {
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv"},
		"--kv-rate", "100", "--kv-duration", "200ms", "--listen", "off")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !regexp.MustCompile(`SOAKD_KV_RECORDS=1000\b`).MatchString(errs) {
		t.Errorf("the log must list the built-in default SOAKD_KV_RECORDS=1000:\n%s", errs)
	}
	if !strings.Contains(out, "ran 1000 ops") {
		t.Errorf("the load phase must insert 1000 records:\n%s", out)
	}
}

// A finite LOAD_RATE profile that ends before every record is loaded
// warns as LOAD_DURATION does (the reads of the rest fail as empty); it
// said "load phase done".
func TestFiniteLoadRateWarnsWhenShort(t *testing.T) {
	code, _, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_LOAD_RATE": "1s:200"},
		"--kv-rate", "100", "--kv-duration", "200ms", "--listen", "off")
	if code != cli.ExitOK && code != cli.ExitFailed {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "load phase stopped by the end of LOAD_RATE's profile before every record was loaded") ||
		!regexp.MustCompile(`"loaded":100,"records":1000`).MatchString(errs) || strings.Contains(errs, "load phase done") {
		t.Errorf("want the warning that 100 of 1000 records were loaded:\n%s", errs)
	}
}

// Records of another DATA_TYPE under the workload's KEY_PREFIX are bad
// configuration: the run exits 2, the message names the variables, and
// redis receives nothing but the probe's TYPE commands; with LOAD=off as
// well as LOAD=auto.
func TestDataTypeMismatchExits2(t *testing.T) {
	srv := testserver.Redis(t)
	env := map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_KV_TARGET": srv.URL,
		"SOAKD_KV_RECORDS": "200", "SOAKD_KV_DURATION": "300ms", "SOAKD_KV_KEY_PREFIX": "mm:", "SOAKD_KV_DATA_TYPE": "hash"}
	if code, _, errs := run(t, env); code != cli.ExitOK {
		t.Fatalf("the hash run: exit %d\n%s", code, errs)
	}
	a := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer a.Close()
	ctx := context.Background()
	keys, err := a.DBSize(ctx).Result()
	if err != nil || keys != 200+1 {
		t.Fatalf("DBSIZE %d, %v after loading 200 records", keys, err)
	}
	before := commandCalls(t, a)

	// Writing all fields, the run would SET over the hashes.
	env["SOAKD_KV_DATA_TYPE"], env["SOAKD_KV_WRITE_ALL_FIELDS"] = "string", "true"
	code, _, errs := run(t, env)
	if code != cli.ExitConfig {
		t.Fatalf("exit %d, want 2\n%s", code, errs)
	}
	for _, want := range []string{"soakd: invalid configuration:\n  SOAKD_KV_DATA_TYPE: ", `KEY_PREFIX "mm:"`,
		"hold a hash", "DATA_TYPE=string stores a string", "set DATA_TYPE=hash", "?cleanup=true"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if n, _ := a.DBSize(ctx).Result(); n != keys {
		t.Errorf("DBSIZE %d after the string run, was %d", n, keys)
	}
	after := commandCalls(t, a)
	for cmd, n := range after {
		switch cmd {
		case "type", "hello", "ping", "info", "dbsize": // the probe, connecting, and this test
			continue
		}
		if n != before[cmd] {
			t.Errorf("the string run sent %d %s commands", n-before[cmd], cmd)
		}
	}
	if after["type"] == before["type"] {
		t.Error("the string run did not probe the records' type")
	}

	// With LOAD=off too: no load, but the records' type is probed.
	// Bug caught: every operation failed WRONGTYPE for the whole run,
	// exit 1, with no word of DATA_TYPE.
	env["SOAKD_KV_LOAD"] = "off"
	if code, _, errs := run(t, env); code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_KV_DATA_TYPE: ") {
		t.Errorf("LOAD=off: exit %d, want 2 naming SOAKD_KV_DATA_TYPE\n%s", code, errs)
	}
	if n, _ := a.DBSize(ctx).Result(); n != keys {
		t.Errorf("DBSIZE %d after the LOAD=off string run, was %d", n, keys)
	}
}

// commandCalls returns the calls of every command the server ran (INFO
// commandstats), by lower-case name.
func commandCalls(t *testing.T, a *goredis.Client) map[string]int64 {
	t.Helper()
	info, err := a.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[name], _ = strconv.ParseInt(n, 10, 64)
	}
	return calls
}

// SIGTERM during a run: scheduling stops, writes in flight finish within
// SHUTDOWN_GRACE, the summary is printed and soakd exits 0. SIGHUP (a
// terminal or SSH session that closed) stops it the same way, with the
// summary and report written; under nohup, which ignores SIGHUP, it goes
// on until SIGTERM.
func TestSIGTERMGracefulExit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sigs      []syscall.Signal
		ignoreHUP bool
		cause     string
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, false, "terminated signal received"},
		{"SIGHUP", []syscall.Signal{syscall.SIGHUP}, false, "hangup signal received"},
		{"SIGHUP under nohup", []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM}, true, "terminated signal received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gracefulExit(t, tc.sigs, tc.ignoreHUP, tc.cause)
		})
	}
}

// gracefulExit runs soakd, sends it sigs in turn once it writes and
// checks that it stopped gracefully, for cause.
func gracefulExit(t *testing.T, sigs []syscall.Signal, ignoreHUP bool, cause string) {
	report := filepath.Join(t.TempDir(), "run.html")
	cmd := exec.Command(os.Args[0], "--listen", "127.0.0.1:0")
	hup := "terminal"
	if ignoreHUP {
		// As nohup does: SIGHUP ignored from the start, through exec.
		cmd = exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0" "$@"`, os.Args[0], "--listen", "127.0.0.1:0")
		hup = "ignored"
	}
	cmd.Env = append(os.Environ(), "SOAKD_TEST_MAIN=1", "TEST_SOAKD_HUP="+hup, "SOAKD_REPORT="+report, "SOAKD_WORKLOADS=seq", "SOAKD_SEQ_RATE=500",
		"SOAKD_SEQ_BATCH_SIZE=10", "SOAKD_SEQ_TARGET=null://?latency=300ms", "SOAKD_SHUTDOWN_GRACE=3s")
	var out bytes.Buffer
	var errb lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// soakd logs that it is starting once it handles SIGTERM: a signal
	// before would kill it, which a fixed wait from the process's start
	// cannot rule out on a loaded machine. Then the run writes for 1.5 s.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(errb.String(), "soakd starting"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("soakd did not log that it is starting within a minute\nstderr:\n%s", errb.String())
		}
	}
	time.Sleep(1500 * time.Millisecond)
	var t0 time.Time
	for i, sig := range sigs {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		t0 = time.Now()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	// A soakd that took no signal to stop would run for ever: the test
	// ends it after a while, and says so, rather than hang.
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("soakd did not stop within 2 minutes of %v\nstderr:\n%s", sigs, errb.String())
	}
	took := time.Since(t0)
	if err != nil {
		t.Fatalf("exit: %v\nstderr:\n%s", err, errb.String())
	}
	// Writes take 300 ms, so soakd exits well within the 3 s grace; one
	// that went on scheduling would never exit. 3× the grace tells the two
	// apart on a loaded machine.
	if took > 3*3*time.Second {
		t.Errorf("took %v to exit after %v with a 3s grace", took, sigs[len(sigs)-1])
	}
	if !strings.Contains(out.String(), "loaded ") || !strings.Contains(out.String(), "errors: none") {
		t.Errorf("summary missing or with errors:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "stopping") || !strings.Contains(errb.String(), cause) {
		t.Errorf("the log should say it is stopping, for %q:\n%s", cause, errb.String())
	}
	// SOAKD_REPORT: the report is written on a stop signal too.
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "stopped by a signal") {
		t.Errorf("no report after %v: %v", sigs[len(sigs)-1], err)
	}
}

// The zero-config run logs the console's URL; --report writes the HTML
// report also when the run is stopped (here the context, as SIGTERM
// does), with the summary's totals and without secrets. The KV workload
// loads 1,000 records (its default on the built-in target, set here so
// that the run stays short whatever that default becomes: under the race
// detector on a busy machine, loading 10,000 at 10,000/s can outlast the
// 2.5 s run, and the report would have no read yet to chart).
func TestConsoleURLAndReport(t *testing.T) {
	dir := t.TempDir()
	page, js := filepath.Join(dir, "run.html"), filepath.Join(dir, "sum.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2500*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	code := realMain(ctx, []string{"--listen", "127.0.0.1:0", "--duration", "1m", "--report", page, "--summary-json", js},
		map[string]string{"SOAKD_CONTROL_TOKEN": "ctl-s3cret", "SOAKD_SHUTDOWN_GRACE": "2s", "SOAKD_KV_RECORDS": "1000"}, &out, &errb)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if !regexp.MustCompile(`web console: open http://127\.0\.0\.1:\d+/`).MatchString(errb.String()) {
		t.Errorf("the log does not give the console's URL:\n%s", errb.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if strings.Contains(html, "ctl-s3cret") {
		t.Error("the report contains the control token")
	}
	var sum report.Summary
	sb, _ := os.ReadFile(js)
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stopped by a signal", `data-chart="iot-rate"`, `data-chart="kv-latency-read"`, "SOAKD_CONTROL_TOKEN",
		`<td data-field="units">` + strconv.FormatInt(sum.Workloads[0].Units, 10) + `</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// Batches that multiply out to more memory than the machine has are
// refused before anything is generated, naming the setting; the same
// batch size of a narrow source still runs.
func TestHugeBatchesRefused(t *testing.T) {
	code, out, errs := run(t, map[string]string{
		"SOAKD_WORKLOADS": "massive", "SOAKD_MASSIVE_TARGET": "null://", "SOAKD_LISTEN": "off",
		"SOAKD_MASSIVE_COLUMNS": "1000", "SOAKD_MASSIVE_BATCH_SIZE": "10000000", "SOAKD_DURATION": "5s",
	})
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_MASSIVE_BATCH_SIZE: 10000000 units per batch × 4 WORKERS") ||
		!strings.Contains(errs, "lower BATCH_SIZE or WORKERS") {
		t.Fatalf("exit %d, want 2 naming SOAKD_MASSIVE_BATCH_SIZE\n%s", code, errs)
	}
	if out != "" {
		t.Errorf("nothing should run; stdout:\n%s", out)
	}
	code, out, errs = run(t, map[string]string{
		"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_LISTEN": "off",
		"SOAKD_SEQ_BATCH_SIZE": "1000000", "SOAKD_SEQ_WORKERS": "1", "SOAKD_SEQ_RATE": "2000000", "SOAKD_DURATION": "1s",
	})
	if code != cli.ExitOK || !strings.Contains(out, "acknowledged") {
		t.Errorf("a narrow source's big batches: exit %d\n%s\n%s", code, out, errs)
	}
	// A query workload's batch is PIPELINE queries, and so named.
	code, _, errs = run(t, map[string]string{
		"SOAKD_WORKLOADS": "q", "SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_TARGET": "null://", "SOAKD_LISTEN": "off",
		"SOAKD_Q_PIPELINE": "1000000", "SOAKD_Q_WORKERS": "256", "SOAKD_DURATION": "1s",
	})
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_Q_PIPELINE: 1000000 units per batch × 256 WORKERS") {
		t.Errorf("a query workload's huge PIPELINE: exit %d, want 2 naming SOAKD_Q_PIPELINE\n%s", code, errs)
	}
}

// The built-in KV target keeps its records in soakd's memory: a data set
// that cannot fit is refused, naming RECORDS; with a TARGET it is the
// server's business.
func TestBuiltinTargetRefusesHugeDataSet(t *testing.T) {
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_RECORDS": "1000000000000", "SOAKD_LISTEN": "off"})
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_KV_RECORDS: 1000000000000 records") ||
		!strings.Contains(errs, "set TARGET to a real server") {
		t.Fatalf("exit %d, want 2 naming SOAKD_KV_RECORDS\n%s", code, errs)
	}
	if out != "" {
		t.Errorf("nothing should run; stdout:\n%s", out)
	}
	code, _, errs = run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_RECORDS": "1000000000000",
		"SOAKD_KV_TARGET": "redis://127.0.0.1:1"}, "config", "--check")
	if code != cli.ExitOK {
		t.Errorf("with a TARGET, RECORDS=1e12 is valid: exit %d\n%s", code, errs)
	}
}

// A SOAKD_* variable that is no setting is an error, with the setting it
// is likely a typo of, in every command that reads the environment;
// SOAKD_ALLOW_UNKNOWN makes it a warning. Variables of the other commands,
// of Kubernetes and of soakd's tests stay known.
func TestUnknownVariables(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"SOAKD_WORKLOADS": "iot,kv", "SOAKD_LISTEN": "off",
		"SOAKD_IOT_TARGET": "null://", "SOAKD_KV_TARGET": "null://",
		// known, though no setting of soakd run:
		"SOAKD_GEN_SCALE": "3", "SOAKD_VERIFY_EXAMPLES": "2", "SOAKD_REQUIRE_SERVERS": "1",
		"SOAKD_SHARED_SERVERS": "1", "SOAKD_SERVICE_HOST": "10.0.0.1", "SOAKD_PORT": "tcp://10.0.0.1:9480",
		"SOAKD_IOT_PASSWORD_FILE": pw, "SOAKD_TLS_CERT_FILE": "",
	}
	with := func(kv ...string) map[string]string {
		env := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	if code, _, errs := run(t, base, "config", "--check"); code != cli.ExitOK {
		t.Fatalf("known variables refused: exit %d\n%s", code, errs)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{with("SOAKD_RAET", "100"), "SOAKD_RAET: unknown variable (did you mean SOAKD_IOT_RATE or SOAKD_KV_RATE?"},
		{with("SOAKD_IOT_RAET", "100"), "SOAKD_IOT_RAET: unknown variable (did you mean SOAKD_IOT_RATE?)"},
		{with("SOAKD_LSITEN", ":1"), "SOAKD_LSITEN: unknown variable (did you mean SOAKD_LISTEN?)"},
		{with("SOAKD_TRUCKS_SCALE", "5"), "SOAKD_TRUCKS_SCALE: unknown variable (workload trucks is not in SOAKD_WORKLOADS=iot,kv)"},
		{with("SOAKD_CAPACITY_SLO_P99X", "5ms"), "SOAKD_CAPACITY_SLO_P99X: unknown variable (did you mean SOAKD_CAPACITY_SLO_P99?)"},
	} {
		for _, cmd := range [][]string{{"run"}, {"capacity"}, {"sweep"}, {"config", "--check"}, {"verify"}} {
			code, out, errs := run(t, c.env, cmd...)
			if code != cli.ExitConfig || !strings.Contains(errs, c.want) || !strings.Contains(errs, "SOAKD_ALLOW_UNKNOWN=1") {
				t.Errorf("%v: exit %d, want 2 and %q; stdout %q stderr:\n%s", cmd, code, c.want, out, errs)
			}
		}
	}
	if code, _, errs := run(t, with("SOAKD_RAET", "100", "SOAKD_ALLOW_UNKNOWN", "1"), "config", "--check"); code != cli.ExitOK {
		t.Errorf("SOAKD_ALLOW_UNKNOWN=1: exit %d\n%s", code, errs)
	}
	// A run with SOAKD_ALLOW_UNKNOWN=1 names what it ignores.
	code, _, errs := run(t, with("SOAKD_RAET", "100", "SOAKD_ALLOW_UNKNOWN", "1", "SOAKD_WORKLOADS", "iot",
		"SOAKD_IOT_SOURCE", "seq", "SOAKD_IOT_DURATION", "1ms"))
	if code != cli.ExitOK || !strings.Contains(errs, "SOAKD_RAET") {
		t.Errorf("run with SOAKD_ALLOW_UNKNOWN=1: exit %d, want 0 and a warning naming SOAKD_RAET:\n%s", code, errs)
	}
	// generate reads SOAKD_GEN_* only: a run's variables are no concern of it.
	code, _, errs = run(t, map[string]string{"SOAKD_GEN_SCALE": "1", "SOAKD_GEN_SCAEL": "2", "SOAKD_IOT_RAET": "1"}, "generate", "--end", "+1m")
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_GEN_SCAEL: unknown variable (did you mean SOAKD_GEN_SCALE?)") || strings.Contains(errs, "SOAKD_IOT_RAET") {
		t.Errorf("generate: exit %d, want 2 naming SOAKD_GEN_SCAEL only:\n%s", code, errs)
	}
	code, _, errs = run(t, map[string]string{"SOAKD_GEN_SCAEL": "2", "SOAKD_ALLOW_UNKNOWN": "true", "SOAKD_GEN_OUT": filepath.Join(t.TempDir(), "x")}, "generate", "--end", "+1m", "--scale", "1")
	if code != cli.ExitOK || !strings.Contains(errs, "SOAKD_GEN_SCAEL") {
		t.Errorf("generate with SOAKD_ALLOW_UNKNOWN: exit %d, want 0 and a warning:\n%s", code, errs)
	}
}

// soakd --version and -v print the version as soakd version does; an
// unknown flag says so, wherever it stands; capacity, sweep and verify --help
// list their own settings.
func TestVersionHelpAndUnknownFlags(t *testing.T) {
	_, want, _ := run(t, nil, "version")
	for _, args := range [][]string{{"--version"}, {"-v"}, {"-version"}} {
		if code, out, errs := run(t, nil, args...); code != cli.ExitOK || out != want {
			t.Errorf("%v: exit %d, stdout %q (want %q), stderr %q", args, code, out, want, errs)
		}
	}
	for _, args := range [][]string{{"--bogus"}, {"--bogus", "1"}, {"capacity", "--bogus"}, {"sweep", "--bogus", "1"},
		{"config", "--bogus"}, {"verify", "--bogus"}, {"verify", "--bogus", "1"}, {"generate", "--bogus"}, {"generate", "--bogus", "1"}} {
		if code, _, errs := run(t, nil, args...); code != cli.ExitConfig || !strings.Contains(errs, "unknown flag --bogus") || strings.Contains(errs, "SOAKD_BOGUS") {
			t.Errorf("%v: exit %d, want 2 and only \"unknown flag --bogus\":\n%s", args, code, errs)
		}
	}
	if code, _, errs := run(t, nil, "--iot-rate"); code != cli.ExitConfig || !strings.Contains(errs, "flag --iot-rate needs a value") {
		t.Errorf("a known flag with no value: exit %d\n%s", code, errs)
	}
	for cmd, own := range map[string][]string{
		"capacity": {"Usage: soakd capacity", "SOAKD_CAPACITY_SLO_P99", "--capacity-step", "x1.5"},
		"sweep":    {"Usage: soakd sweep", "SOAKD_SWEEP_WORKERS", "--sweep-batch", "1,2,4,8"},
		"verify":   {"Usage: soakd verify", "SOAKD_VERIFY_JSON", "--verify-examples", "write the report as JSON to this file"},
	} {
		code, out, _ := run(t, nil, cmd, "--help")
		for _, want := range own {
			if code != cli.ExitOK || !strings.Contains(out, want) {
				t.Errorf("%s --help: exit %d, lacks %q:\n%s", cmd, code, want, out)
			}
		}
		if other := map[string]string{"capacity": "SOAKD_SWEEP_", "sweep": "SOAKD_CAPACITY_", "verify": "SOAKD_CAPACITY_"}[cmd]; strings.Contains(out, other) {
			t.Errorf("%s --help lists %s*", cmd, other)
		}
	}
}

// RECORDS=1e12 is a trillion records, refused by the memory check of the
// built-in target, not a syntax error.
func TestRecordsInENotationReachTheSizeCheck(t *testing.T) {
	code, _, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_RECORDS": "1e12"}, "config", "--check")
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_KV_RECORDS: 1000000000000 records") || strings.Contains(errs, "syntax") {
		t.Errorf("RECORDS=1e12: exit %d\n%s", code, errs)
	}
}

// A file:// path that cannot be opened says so, with the path (once) and
// the OS's reason, not that the target rejected a schema.
func TestFileTargetThatCannotBeOpened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "out.lp")
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops", "SOAKD_LISTEN": "off",
		"SOAKD_W_TARGET": "file://" + path, "SOAKD_W_DURATION": "1s"})
	if code != cli.ExitConfig || !strings.Contains(errs, "cannot open "+path+": no such file or directory") ||
		strings.Contains(errs, ": open "+path) || strings.Contains(errs, "schema") || strings.Contains(errs, "credentials") {
		t.Errorf("exit %d, want 2 and cannot open %s: no such file or directory; stdout %q stderr:\n%s", code, path, out, errs)
	}
}

// A file target writing line protocol at precision=s cannot hold two
// readings of a device 500 ms apart: they would be written at one second,
// and a loader (influx -import, tsbs_load_influx) keeps one of them. The
// run is refused naming SOAKD_W_INTERVAL, before the file is created;
// csv, whose times are RFC 3339 nanoseconds, takes the same INTERVAL.
func TestFileTargetIntervalFinerThanPrecision(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "out.lp")
	env := map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops", "SOAKD_LISTEN": "off",
		"SOAKD_W_INTERVAL": "500ms", "SOAKD_W_SCALE": "2", "SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": "+5s", "SOAKD_W_RATE": "max"}
	env["SOAKD_W_TARGET"] = "file://" + lp + "?precision=s"
	code, _, errs := run(t, env)
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_W_INTERVAL: 500ms is finer than") || !strings.Contains(errs, "(1s)") {
		t.Errorf("INTERVAL=500ms into precision=s: exit %d, want 2 naming SOAKD_W_INTERVAL and 1s; stderr:\n%s", code, errs)
	}
	if _, err := os.Stat(lp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run left %s (%v)", lp, err)
	}
	env["SOAKD_W_TARGET"] = "file://" + filepath.Join(dir, "out.csv") + "?format=csv"
	if code, _, errs := run(t, env); code != 0 {
		t.Errorf("INTERVAL=500ms into csv: exit %d, want 0; stderr:\n%s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil || bytes.Count(b, []byte("\n")) != 1+2*10 {
		t.Errorf("csv of 2 hosts over 5 s every 500 ms: %d lines (%v), want a header and 20 rows", bytes.Count(b, []byte("\n")), err)
	}
}

// Under CLOCK=wall a batch holds several rounds of a host's readings,
// all due at the batch's time: at precision=ms each still gets a time of
// its own in the file (a loader would keep one reading of each time),
// not times 1 µs apart that the file writes as one millisecond. A rate
// that would have a host write more often than the precision keeps apart
// is refused naming SOAKD_W_RATE.
func TestFileTargetWallClockKeepsPrecisionApart(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "out.lp")
	env := map[string]string{"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops", "SOAKD_LISTEN": "off",
		"SOAKD_W_CLOCK": "wall", "SOAKD_W_SCALE": "2", "SOAKD_W_RATE": "100", "SOAKD_W_BATCH_SIZE": "100",
		"SOAKD_W_WORKERS": "1", "SOAKD_W_DURATION": "2s", "SOAKD_W_TARGET": "file://" + lp + "?precision=ms"}
	if code, _, errs := run(t, env); code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	b, err := os.ReadFile(lp)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l) // measurement,tags fields time
		host := f[0][strings.Index(f[0], "hostname="):]
		host = host[:strings.IndexByte(host+",", ',')]
		seen[host+" "+f[len(f)-1]] = true
	}
	if len(lines) < 100 || len(seen) != len(lines) {
		t.Errorf("%d rows, %d distinct (host, millisecond): want every row at a time of its own", len(lines), len(seen))
	}
	env["SOAKD_W_TARGET"] = "file://" + filepath.Join(dir, "fast.lp") + "?precision=s"
	env["SOAKD_W_RATE"] = "1000"
	code, _, errs := run(t, env)
	if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_W_RATE: 1000 under SOAKD_W_CLOCK=wall") || !strings.Contains(errs, "at most 2") {
		t.Errorf("RATE=1000 over 2 hosts at precision=s: exit %d, want 2 naming SOAKD_W_RATE and at most 2; stderr:\n%s", code, errs)
	}
}

// A wrong Redis password says authentication failed and which settings
// hold the password, never the password itself.
func TestRedisWrongPassword(t *testing.T) {
	const right, wrong = "right-Pass-3xf", "wrong-Pass-8qd"
	srv := testserver.Redis(t, "--requirepass", right)
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_LOG_FORMAT": "json",
		"SOAKD_KV_TARGET": "redis://:" + wrong + "@" + srv.Addr + "/0", "SOAKD_KV_RECORDS": "100", "SOAKD_KV_DURATION": "2s"})
	if code != cli.ExitConfig || !strings.Contains(errs, "authentication failed") || !strings.Contains(errs, "SOAKD_KV_PASSWORD_FILE") ||
		strings.Contains(errs, "pipeline") {
		t.Errorf("exit %d, want 2 and authentication failed naming the password's settings; stderr:\n%s", code, errs)
	}
	if strings.Contains(out+errs, wrong) {
		t.Error("the password is shown")
	}
}

// With TARGET=- standard output holds the data alone, every line of it
// line protocol; the summary goes to stderr with the logs.
func TestTargetStdoutHoldsOnlyData(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SOAKD_TEST_MAIN=1", "SOAKD_LISTEN=off", "SOAKD_WORKLOADS=devops", "SOAKD_DEVOPS_TARGET=-",
		"SOAKD_DEVOPS_START=2026-01-01T00:00:00Z", "SOAKD_DEVOPS_END=2026-01-01T00:01:00Z", "SOAKD_DEVOPS_RATE=max", "SOAKD_DEVOPS_SCALE=2")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	lp := regexp.MustCompile(`^[a-z_]+,\S+ \S+ \d+$`)
	for _, l := range lines {
		if !lp.MatchString(l) {
			t.Fatalf("stdout holds %q, not line protocol (%d lines)", l, len(lines))
		}
	}
	if len(lines) < 2*6 {
		t.Errorf("stdout has %d lines, want the data set", len(lines))
	}
	if !strings.Contains(errb.String(), "devops") || !strings.Contains(strings.ToLower(errb.String()), "rows") {
		t.Errorf("stderr lacks the summary:\n%s", errb.String())
	}
}

// soakd help COMMAND is COMMAND's usage, as soakd COMMAND --help is (git
// and go answer it so); help for what is no command is an error. Bug
// caught: every topic, sweep or bogus, printed the general usage, exit 0.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "sweep", "--help")
	hcode, hout, _ := run(t, nil, "help", "sweep")
	if code != 0 || hcode != 0 || hout != out {
		t.Errorf("help sweep: exit %d, %q; want sweep --help's: exit %d, %q", hcode, hout, code, out)
	}
	if code, _, errs := run(t, nil, "help", "bogus"); code != 2 || !strings.Contains(errs, `no help for "bogus"`) {
		t.Errorf("help bogus: exit %d, %q; want 2, saying there is no such help", code, errs)
	}
	// help and version have no usage of their own: the general one says
	// what they do.
	_, general, _ := run(t, nil, "help")
	for _, topic := range []string{"help", "version"} {
		if code, out, errs := run(t, nil, "help", topic); code != 0 || out != general {
			t.Errorf("help %s: exit %d, %q; want the general usage, exit 0", topic, code, errs)
		}
	}
}

// config --check validates what soakd sweep and soakd capacity would
// refuse when their settings are set (a recipe checked with --env-file
// before it runs), grid points included; a run's settings alone are not
// held to the capacity search's defaults. Bug caught: a sweep recipe with
// REPEATS=0, or a grid point WORKERS=0, was "configuration ok", then soakd
// sweep refused it (exit 2).
func TestConfigCheckSweepAndCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_SWEEP_REPEATS": "0"}, "SOAKD_SWEEP_REPEATS: 0 is out of range"},
		{map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_SWEEP_GRID": "WORKERS=0,2"}, "SOAKD_SWEEP_GRID: WORKERS=0: 0 is out of range"},
		{map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_CAPACITY_HOLD": "1ms"}, "SOAKD_CAPACITY_HOLD: 1ms: want at least 1s"},
		{map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_SWEEP_GRID": "WORKERS=1,2 BATCH_SIZE=10,100"}, ""},
		{map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_MAX_RATE": "500", "SOAKD_IOT_RATE": "100"}, ""},
	} {
		code, out, errs := run(t, tc.env, "config", "--check")
		if tc.want == "" {
			if code != 0 || !strings.Contains(out, "configuration ok") {
				t.Errorf("%v: exit %d, %q %q; want ok", tc.env, code, out, errs)
			}
		} else if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 saying %q", tc.env, code, errs, tc.want)
		}
	}
}

// config --check makes the checks a run makes as it opens a workload's
// target, without I/O: rows stamped finer than the times the target keeps
// (INTERVAL against precision=), or ahead of the clock under CLOCK=wall
// (RATE). A file target is left as it was. Bug caught: both were
// "configuration ok", then the run refused them (exit 2).
func TestConfigCheckOpensTargets(t *testing.T) {
	t.Parallel()
	kept := filepath.Join(t.TempDir(), "kept.lp")
	if err := os.WriteFile(kept, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SOAKD_IOT_TARGET": "influx1://127.0.0.1:1?db=x&precision=s", "SOAKD_IOT_INTERVAL": "500ms"},
			"SOAKD_IOT_INTERVAL: 500ms is finer than the times the target"},
		{map[string]string{"SOAKD_IOT_TARGET": "influx1://127.0.0.1:1?db=x&precision=ms", "SOAKD_IOT_CLOCK": "wall", "SOAKD_IOT_RATE": "1M", "SOAKD_IOT_SCALE": "10"},
			"SOAKD_IOT_RATE: 1M under SOAKD_IOT_CLOCK=wall"},
		{map[string]string{"SOAKD_IOT_TARGET": "file://" + kept + "?precision=s", "SOAKD_IOT_INTERVAL": "500ms"},
			"SOAKD_IOT_INTERVAL: 500ms is finer than the times the target"},
		{map[string]string{"SOAKD_IOT_TARGET": "influx1://127.0.0.1:1?db=x&precision=s"}, ""},
		{map[string]string{"SOAKD_IOT_TARGET": "file://" + kept}, ""},
	} {
		tc.env["SOAKD_WORKLOADS"] = "iot"
		code, out, errs := run(t, tc.env, "config", "--check")
		if tc.want == "" {
			if code != 0 || !strings.Contains(out, "configuration ok") {
				t.Errorf("%v: exit %d, %q %q; want ok", tc.env, code, out, errs)
			}
		} else if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 saying %q", tc.env, code, errs, tc.want)
		}
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "kept\n" {
		t.Errorf("the file target holds %q (%v) after config --check, want it untouched", b, err)
	}
}

// A target URL that opens with credentials given two ways, or a password
// without a user, is invalid configuration, as the README says: exit 2,
// nothing run, the problem named with its variable and no secret. It
// failed the run instead (exit 1, "run failed").
func TestSinkOpenRefusalExits2(t *testing.T) {
	for _, env := range []map[string]string{
		{"SOAKD_A_TARGET": "prom+http://user:pw-Secret-1@127.0.0.1:1/api/v1/write", "SOAKD_A_TOKEN": "tok-Secret-2"},
		{"SOAKD_A_TARGET": "prom+http://:pw-Secret-1@127.0.0.1:1/api/v1/write"},
	} {
		env["SOAKD_WORKLOADS"], env["SOAKD_A_SOURCE"], env["SOAKD_A_DURATION"] = "a", "seq", "2s"
		code, out, errs := run(t, env)
		if code != cli.ExitConfig || !strings.Contains(errs, "invalid configuration") || !strings.Contains(errs, "SOAKD_A_TARGET: ") {
			t.Errorf("%s: exit %d, want 2 naming SOAKD_A_TARGET; stderr:\n%s", env["SOAKD_A_TARGET"], code, errs)
		}
		if out != "" || strings.Contains(errs, "Secret-") {
			t.Errorf("nothing should run and no secret show; stdout:\n%s\nstderr:\n%s", out, errs)
		}
	}
}

// generate interrupted by SIGINT or SIGTERM stops as it does when its
// context ends: it says it was interrupted and which file is incomplete,
// exit 1. Bug caught: the signal killed it silently (exit 130), leaving a
// truncated file that looked like a data set.
func TestGenerateInterruptedSaysTheFileIsIncomplete(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.influx")
			cmd := exec.Command(os.Args[0], "generate", "--scale", "1000", "--end", "+2400h", "--workers", "1", "--quiet", "--out", path)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SOAKD_TEST_MAIN=1", "SOAKD_LISTEN=off"}
			var errb lockedBuffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once rows reach the file generate is under way, its signal
			// handling in place: the data set takes far longer to write.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("nothing written within a minute\nstderr:\n%s", errb.String())
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			errs := errb.String()
			if code := cmd.ProcessState.ExitCode(); code != cli.ExitFailed || !strings.Contains(errs, "interrupted") ||
				!strings.Contains(errs, "incomplete") || !strings.Contains(errs, path) {
				t.Errorf("exit %d (%v), want 1 saying it was interrupted and %s is incomplete; stderr:\n%s", code, cmd.ProcessState, path, errs)
			}
		})
	}
}

// Every problem of QUERIES is a line of the report naming it, indented as
// the others. Bug caught: the second unknown query type was printed flush
// left with no variable.
func TestEveryQueriesProblemNamesQueries(t *testing.T) {
	t.Parallel()
	code, _, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "q", "SOAKD_Q_SOURCE": "iot-queries", "SOAKD_Q_QUERIES": "bogus1,bogus2"}, "config", "--check")
	var lines []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "bogus") {
			lines = append(lines, l)
		}
	}
	if code != cli.ExitConfig || len(lines) != 2 || !strings.HasPrefix(lines[0], `  SOAKD_Q_QUERIES: unknown query type "bogus1"`) ||
		!strings.HasPrefix(lines[1], `  SOAKD_Q_QUERIES: unknown query type "bogus2"`) {
		t.Errorf("exit %d, want 2 and a line naming SOAKD_Q_QUERIES per unknown type; stderr:\n%s", code, errs)
	}
}

// With SOAKD_LISTEN=off no HTTP API runs: a control token, pprof or TLS
// files set beside it do nothing, and the run says so, naming them (not
// the token's value). It said not a word.
func TestListenOffNamesUnservedSettings(t *testing.T) {
	env := map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "seq", "SOAKD_IOT_TARGET": "null://",
		"SOAKD_IOT_DURATION": "1ms", "SOAKD_LISTEN": "off", "SOAKD_CONTROL_TOKEN": "s3cret-token", "SOAKD_PPROF": "true"}
	code, _, errs := run(t, env)
	if code != cli.ExitOK || !strings.Contains(errs, "SOAKD_LISTEN=off serves no HTTP API") ||
		!strings.Contains(errs, "SOAKD_CONTROL_TOKEN") || !strings.Contains(errs, "SOAKD_PPROF") || strings.Contains(errs, "s3cret-token") {
		t.Errorf("exit %d, want 0 and a warning naming SOAKD_CONTROL_TOKEN and SOAKD_PPROF, not the token:\n%s", code, errs)
	}
	delete(env, "SOAKD_CONTROL_TOKEN")
	delete(env, "SOAKD_PPROF")
	if code, _, errs := run(t, env); code != cli.ExitOK || strings.Contains(errs, "serves no HTTP API") {
		t.Errorf("without them: exit %d, want 0 and no warning:\n%s", code, errs)
	}
}
