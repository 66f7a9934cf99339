package targetwatch

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/procstat"
)

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the process watch reads Linux's /proc")
	}
}

// vmRSS is /proc/self/status's VmRSS, in bytes.
func vmRSS(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func watchOf(set string) (*procWatch, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	pw := &procWatch{setting: "SOAKD_SEQ_WATCH_PROCESS", log: zap.New(core)}
	if pid, err := strconv.Atoi(set); err == nil {
		pw.pid = pid
	} else {
		pw.name = set
	}
	return pw, logs
}

// Watching this test's own pid reads the RSS /proc/self/status reports,
// within 1 %, and CPU time that does not go backwards. Bugs caught: RSS
// in pages rather than bytes, the wrong statm field, CPU ticks not turned
// into seconds (100 times too many).
func TestProcessWatchReadsOwnPid(t *testing.T) {
	needProc(t)
	pw, _ := watchOf(strconv.Itoa(os.Getpid()))
	r := pw.read()
	want := vmRSS(t)
	if !r.ok {
		t.Fatalf("reading our own pid: %s", r.why)
	}
	if d := r.p.RSS/want - 1; d > 0.01 || d < -0.01 {
		t.Errorf("RSS %v bytes, VmRSS %v: %+.2f %%", r.p.RSS, want, 100*d)
	}
	// Burn some CPU: the second reading has at least as much, and not
	// more than the process's whole life could hold.
	x := 0
	for i := range 50_000_000 {
		x += i ^ x
	}
	_ = x
	r2 := pw.read()
	self, _ := procstat.Self()
	if !r2.ok || r2.p.CPUSeconds < r.p.CPUSeconds || r2.p.CPUSeconds > self+0.05 {
		t.Errorf("CPU %v then %v seconds, the process's own getrusage says %v", r.p.CPUSeconds, r2.p.CPUSeconds, self)
	}
}

// A name is found by argv[0]'s base name and by comm; the eldest of the
// processes that share it whose parent is none of them is the one
// watched. Bug caught: a lookup by comm alone (cut at 15 bytes, it misses
// longer names), or one watching a forked child.
func TestProcessFoundByName(t *testing.T) {
	needProc(t)
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{filepath.Base(os.Args[0]), strings.TrimSpace(string(comm))} {
		found, err := procstat.Find(name)
		if err != nil || !slices.ContainsFunc(found, func(p procstat.Proc) bool { return p.Pid == os.Getpid() }) {
			t.Errorf("Find(%q) = %+v, %v: want this process (pid %d) among them", name, found, err, os.Getpid())
		}
	}
	root := eldestRoot([]procstat.Proc{{Pid: 10, PPid: 1, Start: 5}, {Pid: 30, PPid: 20, Start: 6}, {Pid: 20, PPid: 10, Start: 7}})
	if root.Pid != 10 {
		t.Errorf("eldestRoot picked pid %d, want 10, the parent of the others", root.Pid)
	}
}

// startNamed starts a sleeping process whose argv[0] is name.
func startNamed(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// A watched pid that exits is logged once and watched no more; a watched
// name is looked up again, and a new process of that name is found (the
// target restarted). Bugs caught: a line per reading after the exit; a
// pid watch that resumes on a reused pid; a name watch that gives up.
func TestProcessExit(t *testing.T) {
	needProc(t)
	name := "soakdtw" + strconv.Itoa(os.Getpid())
	t.Run("pid", func(t *testing.T) {
		cmd := startNamed(t, name)
		pw, logs := watchOf(strconv.Itoa(cmd.Process.Pid))
		if r := pw.read(); !r.ok || r.p.Pid != cmd.Process.Pid {
			t.Fatalf("reading pid %d: %+v", cmd.Process.Pid, r)
		}
		stop(t, cmd)
		for range 5 {
			if r := pw.read(); r.ok || !strings.Contains(r.why, "exited") {
				t.Fatalf("after the exit: %+v", r)
			}
		}
		if n := count(logs, "has exited"); n != 1 {
			t.Errorf("the exit logged %d times over 5 readings, want once", n)
		}
	})
	t.Run("name", func(t *testing.T) {
		cmd := startNamed(t, name)
		pw, logs := watchOf(name)
		if r := pw.read(); !r.ok || r.p.Pid != cmd.Process.Pid {
			t.Fatalf("reading %s (pid %d): %+v", name, cmd.Process.Pid, r)
		}
		stop(t, cmd)
		for range 3 {
			if r := pw.read(); r.ok {
				t.Fatalf("after the exit: %+v", r)
			}
		}
		if n := count(logs, "has exited"); n != 1 {
			t.Errorf("the exit logged %d times, want once", n)
		}
		again := startNamed(t, name)
		if r := pw.read(); !r.ok || r.p.Pid != again.Process.Pid {
			t.Errorf("after a restart: %+v, want pid %d", r, again.Process.Pid)
		}
	})
}

// A name no process has is one warning naming SOAKD_<W>_WATCH_PROCESS,
// however many readings look for it, and /status says why; the workload
// runs on. With this test's own pid the run exports process_rss and the
// process's CPU time, the null sink reading nothing itself. Bugs caught:
// a warning per interval, or one that does not say which setting to fix;
// the process's figures not reaching /status or the metrics.
func TestProcessWatchInARun(t *testing.T) {
	needProc(t)
	t.Run("no such name", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tw, _, logs, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SEQ_RATE", "100",
				"SOAKD_SEQ_DURATION", "6s", "SOAKD_SEQ_WATCH_INTERVAL", "1s", "SOAKD_SEQ_WATCH_PROCESS", "no-such-soakd-target"), enginetest.Plugins())
			if err := sum.Failed(); err != nil {
				t.Fatalf("the run failed: %v", err)
			}
			warn := logs.FilterMessageSnippet("SOAKD_SEQ_WATCH_PROCESS=no-such-soakd-target: no process is named")
			if warn.Len() != 1 || warn.All()[0].Level != zapcore.WarnLevel {
				t.Errorf("%d warnings naming the setting, want one: %v", warn.Len(), logs.All())
			}
			st := statusOf(t, tw, "seq")
			if st.Readings < 5 || !strings.Contains(st.Unavailable["process"], "no process is named") || st.Process == nil ||
				st.Process.Pid != 0 || st.Process.Watch != "no-such-soakd-target" {
				t.Errorf("status %+v", st)
			}
		})
	})
	t.Run("own pid", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pid := strconv.Itoa(os.Getpid())
			tw, reg, _, _ := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SEQ_RATE", "100",
				"SOAKD_SEQ_DURATION", "3s", "SOAKD_SEQ_WATCH_INTERVAL", "1s", "SOAKD_SEQ_WATCH_PROCESS", pid), enginetest.Plugins())
			st := statusOf(t, tw, "seq")
			rss, ok := st.Memory[processRSS]
			if !ok || rss.Last <= 0 || rss.Peak < rss.Last || st.CPU == nil || st.CPU.From != "process" || st.Process.Pid != os.Getpid() {
				t.Errorf("status %+v", st)
			}
			if n, err := testutil.GatherAndCount(reg, "soakd_target_memory_bytes", "soakd_target_cpu_seconds_total"); err != nil || n != 2 {
				t.Errorf("%d series of process_rss and CPU (%v), want 2", n, err)
			}
			if st.Unavailable["target"] == "" || st.Unavailable["process"] != "" {
				t.Errorf("unavailable %v, want the null sink's reason alone", st.Unavailable)
			}
		})
	})
}

// A sink reading cut by the run's end takes the process's reading with
// it no more: the process is read whatever became of the sink's, so a
// run shorter than the sink's slowest answer still has the target's RSS.
// The last reading, at the run's end, is not cut: it waits its
// lastReadingTimeout (under the 10 s interval), and a target that does not
// answer then has failed it. Bugs caught: a cut sink reading discarding
// the whole reading; one counted as the target's failure; a last reading
// that waits the whole interval.
func TestProcessReadWhenTheSinkReadingIsCut(t *testing.T) {
	needProc(t)
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{block: true}
		t0 := time.Now()
		tw, _, logs, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_DURATION", "2s", "SOAKD_SEQ_WATCH_INTERVAL", "10s", "SOAKD_SEQ_WATCH_PROCESS", strconv.Itoa(os.Getpid())), plugins(s))
		if d := time.Since(t0); d > 2*time.Second+lastReadingTimeout+500*time.Millisecond {
			t.Errorf("the run took %v, want its 2 s and the last reading's %v at most", d, lastReadingTimeout)
		}
		if err := sum.Failed(); err != nil {
			t.Fatalf("the run failed: %v", err)
		}
		st := statusOf(t, tw, "seq")
		if rss, ok := st.Memory[processRSS]; !ok || rss.Last <= 0 {
			t.Errorf("status %+v: want the process's RSS though the sink's reading was cut", st)
		}
		if st.Readings != 2 || st.Errors != 1 || !strings.Contains(st.LastError, "deadline") {
			t.Errorf("%d readings, %d errors (%q): want the cut one not counted, the last one failed at its deadline", st.Readings, st.Errors, st.LastError)
		}
		if n := count(logs, "cannot take the last reading of the target's own figures"); n != 1 {
			t.Errorf("the failed last reading logged %d times, want once", n)
		}
	})
}
