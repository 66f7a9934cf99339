package daemon_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/pace"
)

// A workload paused without end (DURATION unset) on the real clock, where
// the scheduler waits on its timerfd alarm: it sleeps. A wait without end
// is MaxInt64 long, whose due time overflows; an alarm set to that time
// went off at once, again and again, and the scheduler spun a core for as
// long as the pause lasted. The process's CPU over a one-second pause is
// a few milliseconds when it sleeps and about what a thread spinning for
// that second gets of the machine when it spins: the test measures that
// spin right after the pause, so a busy machine lowers both.
func TestPausedSchedulerSleepsOnRealClock(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "1"), p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{runs: make(chan *daemon.Phase, 1)}
	type result struct {
		err       error
		cpu, spin time.Duration
	}
	paused := make(chan result, 1)
	r.steer = func(w *daemon.Handle) {
		defer cancel()
		<-r.runs
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		if err := w.Pause(pctx); err != nil {
			paused <- result{err: err}
			return
		}
		time.Sleep(100 * time.Millisecond) // the scheduler waits by now
		cpu0 := processCPU(t)
		time.Sleep(time.Second)
		cpu := processCPU(t) - cpu0
		paused <- result{cpu: cpu, spin: spinCPU(time.Second)}
	}
	if _, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{r}}); err != nil {
		t.Fatal(err)
	}
	res := <-paused
	if res.err != nil {
		t.Fatalf("Pause: %v", res.err)
	}
	if res.cpu > res.spin/3 {
		t.Errorf("paused for 1 s, the process used %v of CPU, where a thread spinning 1 s got %v: the scheduler does not sleep", res.cpu, res.spin)
	}
	t.Logf("CPU over a 1 s pause: %v (a thread spinning 1 s: %v)", res.cpu, res.spin)
}

// spinCPU is the CPU time a thread spinning for d gets on this machine
// now.
func spinCPU(d time.Duration) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a)
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b)
	return time.Duration(b.Nano() - a.Nano())
}

func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// On the real clock the scheduler sleeps on its alarm until the next due
// time, here 1000 s away (a rate of 0.001/s): a rate change, a pause and
// the end of the run must each wake it, or each would wait out the 1000
// s (the control calls until their 20 s context ends).
func TestSleepingSchedulerHearsControlOnRealClock(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "0.001", "SOAKD_SEQ_BATCH_SIZE", "1"), p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &recorder{runs: make(chan *daemon.Phase, 1)}
	steered := make(chan error, 1)
	r.steer = func(w *daemon.Handle) {
		defer cancel() // the end of the run: a third wake
		<-r.runs
		time.Sleep(100 * time.Millisecond) // the scheduler sleeps by now
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		if err := w.SetRate(cctx, pace.MustParse("0.002")); err != nil {
			steered <- fmt.Errorf("SetRate: %w", err)
			return
		}
		time.Sleep(100 * time.Millisecond)
		if err := w.Pause(cctx); err != nil {
			steered <- fmt.Errorf("Pause: %w", err)
			return
		}
		steered <- nil
	}
	ended := make(chan error, 1)
	go func() {
		_, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{r}})
		ended <- err
	}()
	if err := <-steered; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s of its context")
	}
}
