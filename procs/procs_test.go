package procs

import (
	"math"
	"os"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
)

// fake drives a Governor through seconds of given CPU use and scheduling
// waits, and records what it set.
type fake struct {
	g          *Governor
	at         time.Time
	cpu        float64
	all, late  uint64
	sets       []int
	secondsRun int
}

func newFake() *fake {
	f := &fake{at: time.Unix(1000, 0)}
	f.g = &Governor{log: zap.NewNop(),
		cpu:   func() float64 { return f.cpu },
		waits: func() (uint64, uint64) { return f.all, f.late },
		set:   func(n int) { f.sets = append(f.sets, n) }}
	f.g.Tick(f.at, false) // the first tick only primes
	return f
}

// second ticks once, after a second in which soakd used cores and had
// waits scheduling waits, late of them of a millisecond or more.
func (f *fake) second(cores float64, waits, late uint64) {
	f.at = f.at.Add(time.Second)
	f.cpu += cores
	f.all += waits
	f.late += late
	f.secondsRun++
	f.g.Tick(f.at, false)
}

func (f *fake) seconds(n int, cores float64) {
	for range n {
		f.second(cores, 100, 0)
	}
}

func (f *fake) wantSets(t *testing.T, want ...int) {
	t.Helper()
	if len(f.sets) != len(want) {
		t.Fatalf("after %d s: set GOMAXPROCS %v, want %v", f.secondsRun, f.sets, want)
	}
	for i := range want {
		if f.sets[i] != want[i] {
			t.Fatalf("after %d s: set GOMAXPROCS %v, want %v", f.secondsRun, f.sets, want)
		}
	}
}

func TestGovernorLowersAfterCalmSecondsAndRaisesAboveTheBand(t *testing.T) {
	f := newFake()
	f.seconds(calmSeconds-1, 0.05)
	f.wantSets(t) // not yet: a second short
	f.seconds(1, 0.05)
	f.wantSets(t, 1)
	// Within the band at one P: it stays.
	f.seconds(30, 0.45)
	f.wantSets(t, 1)
	f.seconds(1, 0.55)
	f.wantSets(t, 1, 0)
	// Within the band with every P: it stays too (no going back and
	// forth at a load between the two thresholds).
	f.seconds(30, 0.35)
	f.wantSets(t, 1, 0)
	f.seconds(calmSeconds, 0.25)
	f.wantSets(t, 1, 0, 1)
}

func TestGovernorCalmSecondsMustBeInARow(t *testing.T) {
	f := newFake()
	f.seconds(calmSeconds-1, 0.1)
	f.seconds(1, 0.35) // one busier second starts the count again
	f.seconds(calmSeconds-1, 0.1)
	f.wantSets(t)
	f.seconds(1, 0.1)
	f.wantSets(t, 1)
}

func TestGovernorRaisesOnLateWaitsAtOneP(t *testing.T) {
	f := newFake()
	f.seconds(calmSeconds, 0.1)
	f.wantSets(t, 1)
	f.second(0.2, 10000, 20) // 0.2 %: a few late waits among many
	f.second(0.2, 100, lateMin-1)
	f.wantSets(t, 1)
	f.second(0.2, 1000, 20) // 2 %
	f.wantSets(t, 1, 0)
	// With every P, late waits do not lower nor raise anything.
	f.second(0.4, 1000, 900)
	f.wantSets(t, 1, 0)
}

func TestGovernorIgnoresUnknownCPUAndClockSteps(t *testing.T) {
	f := newFake()
	f.cpu = math.NaN()
	f.seconds(3*calmSeconds, 0.1)
	f.wantSets(t)
	f.cpu = 0
	f.seconds(1, 0.1) // the NaN before: this second is not judged either
	// A tick at the same instant as the one before is not a second.
	f.g.Tick(f.at, false)
	f.seconds(calmSeconds-1, 0.1)
	f.wantSets(t)
	f.seconds(1, 0.1)
	f.wantSets(t, 1)
}

func TestGovernorFinishedGivesEveryPBack(t *testing.T) {
	f := newFake()
	f.g.Finished(true)
	f.wantSets(t) // every P already
	f.seconds(calmSeconds, 0.1)
	f.g.Finished(true)
	f.wantSets(t, 1, 0)
	f.seconds(calmSeconds-1, 0.1) // the count starts again
	f.wantSets(t, 1, 0)
}

func TestGovernorOffWhenGOMAXPROCSIsSet(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	g := New(zap.NewNop())
	if !g.off {
		t.Fatal("GOMAXPROCS set in the environment: the governor must be off")
	}
	sets := 0
	g.cpu, g.set = func() float64 { return 0 }, func(int) { sets++ }
	at := time.Unix(1000, 0)
	for i := range 3 * calmSeconds {
		g.Tick(at.Add(time.Duration(i)*time.Second), false)
	}
	if sets != 0 {
		t.Fatalf("set GOMAXPROCS %d times while off", sets)
	}
}

// The real setter: one P, then the runtime's default again; and the
// scheduling waits read from the runtime grow as goroutines run.
func TestSetProcsAndSchedWaits(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set: the runtime's default ignores it, so it is not the setting to come back to")
	}
	def := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(def) })
	setProcs(1)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after setProcs(1), want 1", n)
	}
	setProcs(0)
	if n := runtime.GOMAXPROCS(0); n != def {
		t.Fatalf("GOMAXPROCS %d after setProcs(0), want the default %d", n, def)
	}

	waits := schedWaits()
	all0, late0 := waits()
	done := make(chan struct{})
	for range 100 {
		go func() { done <- struct{}{} }()
		<-done
	}
	all1, late1 := waits()
	// The runtime times one goroutine wake-up in eight.
	if all1 < all0+100/8-2 {
		t.Fatalf("scheduling waits went from %d to %d over 100 goroutines run, want about 12 more", all0, all1)
	}
	if late1 < late0 || late1 > all1 {
		t.Fatalf("late waits %d → %d of %d: not a count within all waits", late0, late1, all1)
	}
}
