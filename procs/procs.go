// Package procs sizes the Go scheduler to soakd's load: while soakd uses
// little CPU, its Go code runs on one thread (GOMAXPROCS=1); as soon as it
// uses more, on as many as the runtime would give it.
//
// A second P costs more than it gives to a sidecar that is nearly idle.
// Each goroutine the network poller readies (a worker's reply, the
// scheduler's alarm, a bell) lets the thread that took it wake an idle
// one to look for work, find none and sleep again: at 10 operations a
// second against Redis, soakd's steady state made 24–28 thread switches a
// second on one P against 28–33 on two, and used about an eighth less CPU.
// Busier, one P saves more CPU but costs precision: at 10,000 operations
// a second (YCSB A, two cores shared with redis-server) 42–46 µs per
// operation against 51–53, but the dispatch delay's p99 went from
// 175–216 µs to as much as 525 µs in some 5-second intervals, as the
// scheduler's wake-ups waited behind workers on the one P. So only a
// process using less than lowerBelow of a core goes to one P.
//
// GOMAXPROCS set in the environment pins the scheduler as the runtime
// documents it: the governor then does nothing.
package procs

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/procstat"
)

const (
	// raiseAbove: at one P, a second in which soakd used more than this
	// many cores gives it every P back at once, long before one core is
	// the bottleneck of the test or its wake-ups queue behind the workers.
	raiseAbove = 0.5
	// lowerBelow: with every P, calmSeconds seconds in a row below this
	// many cores take soakd to one P (where the same load uses less: the
	// gap to raiseAbove keeps it from going back and forth).
	lowerBelow  = 0.3
	calmSeconds = 10
	// At one P, goroutines kept waiting to run also give every P back:
	// more than lateShare of the second's waits (and at least lateMin)
	// that took lateWait or longer. CPU alone would miss a burst that
	// queues work behind the one P within a second that, on average,
	// looks light.
	lateWait  = time.Millisecond
	lateShare = 0.01
	lateMin   = 10
)

// Governor is the daemon.Ticker that sets GOMAXPROCS each second from
// the CPU soakd used in the second before.
type Governor struct {
	log *zap.Logger
	off bool
	// cpu reads the CPU seconds used so far; waits the goroutine
	// scheduling waits so far, all and those of lateWait or longer; set
	// sets GOMAXPROCS (0: the runtime's default).
	cpu   func() float64
	waits func() (all, late uint64)
	set   func(n int)

	low  bool
	calm int
	// The readings of the tick before; prevAt is zero before the first.
	prevAt   time.Time
	prevCPU  float64
	prevAll  uint64
	prevLate uint64
}

// New returns the governor, off (it never changes GOMAXPROCS) when
// GOMAXPROCS is set in the environment or the runtime would use one P
// anyway.
func New(log *zap.Logger) *Governor {
	g := &Governor{log: log, cpu: procstat.CPU, waits: schedWaits(), set: setProcs}
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) <= 1 {
		g.off = true
	}
	return g
}

// setProcs sets GOMAXPROCS to n, or for 0 back to the runtime's default
// (which also resumes its following of the CPU limit of soakd's cgroup).
func setProcs(n int) {
	if n == 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}

// schedWaits reads the runtime's histogram of the time goroutines waited
// to run after they became runnable (of a sample of them: the runtime
// times one wake-up in eight, which keeps the share).
func schedWaits() func() (all, late uint64) {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	return func() (all, late uint64) {
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindFloat64Histogram {
			return 0, 0
		}
		h := s[0].Value.Float64Histogram()
		for i, n := range h.Counts {
			all += n
			// Buckets[i] is bucket i's lower bound.
			if h.Buckets[i] >= lateWait.Seconds() {
				late += n
			}
		}
		return all, late
	}
}

// Opened does nothing: the governor follows the process, not a workload.
func (g *Governor) Opened(*daemon.Handle) error { return nil }

// Started does nothing (see Opened).
func (g *Governor) Started(context.Context, []*daemon.Handle, func(error)) {}

// PhaseBegun does nothing (see Opened).
func (g *Governor) PhaseBegun(*daemon.Handle, *daemon.Phase) {}

// PhaseEnded does nothing (see Opened).
func (g *Governor) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Finished gives soakd every P back: the summary and the reports are
// written with them, and a process that goes on (a test's) keeps none of
// the run's setting.
func (g *Governor) Finished(bool) {
	if g.low {
		g.set(0)
		g.low, g.calm = false, 0
	}
}

// Tick judges the second that ended at at.
func (g *Governor) Tick(at time.Time, _ bool) {
	if g.off {
		return
	}
	cpu := g.cpu()
	all, late := g.waits()
	prevAt, prevCPU, prevAll, prevLate := g.prevAt, g.prevCPU, g.prevAll, g.prevLate
	g.prevAt, g.prevCPU, g.prevAll, g.prevLate = at, cpu, all, late
	dt := at.Sub(prevAt).Seconds()
	if prevAt.IsZero() || dt <= 0 || math.IsNaN(cpu) || math.IsNaN(prevCPU) {
		return
	}
	used := (cpu - prevCPU) / dt
	if g.low {
		lateWaits, waits := late-prevLate, all-prevAll
		if used > raiseAbove || (lateWaits >= lateMin && float64(lateWaits) > lateShare*float64(waits)) {
			g.set(0)
			g.low, g.calm = false, 0
			g.log.Debug("soakd's Go code runs on every P again", zap.Float64("cores_used", used),
				zap.Uint64("waits_over_1ms", lateWaits), zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)))
		}
		return
	}
	if used >= lowerBelow {
		g.calm = 0
		return
	}
	if g.calm++; g.calm >= calmSeconds {
		g.set(1)
		g.low, g.calm = true, 0
		g.log.Debug("soakd's Go code runs on one P while it uses little CPU", zap.Float64("cores_used", used))
	}
}
