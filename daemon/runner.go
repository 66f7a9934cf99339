package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/clock"
	"github.com/soakd/soakd/internal/logthrottle"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// runner runs one workload: for each phase (a KV load phase, then the
// run) a scheduler goroutine emits tickets at the rate profile's times
// (scheduler.go) and a pool of workers fills batches from the source's
// streams and writes them to the sink (worker.go, retry.go). The counts
// are kept as accounting.go describes.
type runner struct {
	name      string
	cfg       *config.Workload
	kind      sources.Kind
	src       sources.Source
	sink      sinks.Sink
	conns     sinks.ConnCounter // the sink, when it counts its connections; kept after Close sets sink to nil
	log       *zap.Logger
	batchSize int
	ops       []int // the op slots the workload reports (opsFor)
	errLog    *logthrottle.Throttle
	scrub     func(string) string // removes the workload's secrets from error text

	// The schedule's origin: every due time is relative to the start of
	// the current phase, read by the reporter and HTTP while workers run,
	// hence atomic. Monotonic offsets from monoBase.
	origin    atomic.Int64
	startWall atomic.Int64 // Unix ns at origin, for row timestamps

	sched    atomic.Pointer[schedule]
	ctl      chan controlReq             // holds one request, so a sender can kick alarm once it is in
	alarm    atomic.Pointer[clock.Alarm] // the scheduler's, while it waits on one
	pending  atomic.Int64                // due (ns since origin) of the ticket the scheduler waits to enqueue; -1 = none
	dropOnce sync.Once
	finished atomic.Bool
	stopping atomic.Bool // the run stopped scheduling (a signal, SOAKD_DURATION) and drains

	cur      atomic.Pointer[phaseStats] // the phase running now
	phasesMu sync.Mutex
	phases   []*phaseStats // every phase started, in order

	errMu   sync.Mutex
	lastErr errorNote // the last failed write

	// followers follow each batch written (BatchObserver), nil when
	// nobody does: the workers then pay one length check per batch.
	followers []WriteFollower

	handle    *Handle    // what observers see of this workload
	observers []Observer // told of each phase's edges (Deps.Observers)
}

// errorNote is the last error of a kind, for summaries and /status.
type errorNote struct {
	Text  string
	Class sinks.Class
	First time.Time // when the first such error happened
	Last  time.Time
}

func newRunner(cfg *config.Workload, kind sources.Kind, src sources.Source, sink sinks.Sink, log *zap.Logger) *runner {
	r := &runner{
		name: cfg.Name, cfg: cfg, kind: kind, src: src, sink: sink, log: log,
		ctl:    make(chan controlReq, 1),
		errLog: logthrottle.New(10 * time.Second),
		scrub:  cfg.Scrubber(),
	}
	r.batchSize, _ = cfg.BatchUnits(kind)
	r.ops = opsFor(kind, src)
	r.conns, _ = sink.(sinks.ConnCounter)
	r.sched.Store(&schedule{})
	r.pending.Store(-1)
	return r
}

// monoBase is the process's monotonic time origin.
var monoBase = clock.Base

// mono is the monotonic time since monoBase, never 0.
func mono() time.Duration { return clock.Mono() }

// since is the time since the current phase started.
func (r *runner) since() time.Duration { return mono() - time.Duration(r.origin.Load()) }

// started reports whether the workload's first phase has begun.
func (r *runner) started() bool { return r.cur.Load() != nil }

// beginPhase starts phase name: now becomes the schedule's origin, the
// rate profile starts from its beginning, and the counts start at zero.
func (r *runner) beginPhase(name string, rate pace.Rate, starts []sources.Position) *phaseStats {
	ps := newPhaseStats(name, rate.String(), r.cfg.Workers)
	// Set before the phase is published: scrapes and the history read them.
	ps.starts = starts
	if r.cfg.Verify > 0 {
		ps.verify = &tally{} // counted into by the Verifier (ReadBack)
	}
	r.startWall.Store(time.Now().UnixNano())
	r.origin.Store(int64(ps.begin))
	s := &schedule{}
	if old := r.sched.Load(); rate.Max && old != nil && old.paused {
		r.log.Warn("the workload was paused in its load phase; its run phase is closed loop (RATE=max), which cannot pause: it runs",
			zap.String("phase", name))
	}
	if !rate.Max {
		s.profile = r.perShard(rate.Profile)
		// A workload paused in its load phase stays paused in its run
		// until resumed: the pause was answered ok.
		if old := r.sched.Load(); old != nil && old.paused {
			s.paused = true
		}
	}
	r.sched.Store(s)
	r.phasesMu.Lock()
	r.phases = append(r.phases, ps)
	r.phasesMu.Unlock()
	r.cur.Store(ps)
	return ps
}

// allPhases returns the phases started so far.
func (r *runner) allPhases() []*phaseStats {
	r.phasesMu.Lock()
	defer r.phasesMu.Unlock()
	return append([]*phaseStats(nil), r.phases...)
}

// perShard scales a rate, which is always the total over every shard, to
// this process's share (SHARD=i/N runs 1/N of it).
func (r *runner) perShard(p pace.Profile) pace.Profile {
	if n := r.cfg.Shard.Count; n > 1 {
		return pace.Scale(p, 1/float64(n))
	}
	return p
}

// Why a phase ended, as the summary and /status report it.
const (
	stopEndOfData    = "end of data set"
	stopEndOfProfile = "end of rate profile"
	stopDuration     = "DURATION"
	stopLoadDuration = "LOAD_DURATION"
	stopHard         = "SOAKD_DURATION"
	stopSignal       = "signal"
	stopConfig       = "configuration error"
	stopStartTimeout = "START_TIMEOUT"
)

// phaseRun is the state of one pass over a source.
type phaseRun struct {
	st        *phaseStats
	src       sources.Source
	streams   chan *stream // free streams; a worker holds one across Fill and Write
	starts    []sources.Position
	live      atomic.Int32
	exhausted chan struct{} // closed when every stream has ended
	queue     chan ticket

	// Workers that wait on an alarm of their own, idle, in the order they
	// became so: the scheduler hands a ticket to the first of them
	// directly (offer), else through queue. See openWorker.
	handMu sync.Mutex
	idle   []*worker
	closed bool         // no more tickets: queue is closed, or about to be
	direct atomic.Int64 // tickets handed to an idle worker directly
}

// stream is the phase's stream number i, with its position when it
// reports one (for the spans of WriteOutcome).
type stream struct {
	sources.Stream
	i   int
	pos sources.Positioner
}

func (r *runner) newPhase(src sources.Source) (*phaseRun, error) {
	n := r.cfg.Workers
	p := &phaseRun{src: src, streams: make(chan *stream, n), starts: make([]sources.Position, n), exhausted: make(chan struct{})}
	for i := 0; i < n; i++ {
		s, err := src.Stream(i, n)
		if err != nil {
			return nil, err
		}
		st := &stream{Stream: s, i: i}
		if st.pos, _ = s.(sources.Positioner); st.pos != nil {
			p.starts[i] = st.pos.Position()
		}
		p.streams <- st
	}
	p.live.Store(int32(n))
	// Small and bounded: a ticket is two words, and a full queue makes
	// the scheduler fall behind, which MAX_LAG then turns into drops.
	p.queue = make(chan ticket, max(64, 2*n))
	return p, nil
}

// run executes one phase until its source ends, its rate profile ends,
// duration passes (durationName says which setting it is), or genCtx is
// done; writes in flight may finish until drainCtx is done. It returns
// why the phase ended.
func (r *runner) run(genCtx, drainCtx context.Context, name string, src sources.Source, rate pace.Rate, duration time.Duration, durationName string) (string, error) {
	p, err := r.newPhase(src)
	if err != nil {
		return "", err
	}
	p.st = r.beginPhase(name, rate, p.starts)
	r.notifyBegun(p.st)
	closedLoop := rate.Max
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Workers; i++ {
		w := r.newWorker(drainCtx, p, p.st.workers[i], !closedLoop)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.close()
			if closedLoop {
				r.closedWorker(genCtx, p, w, duration)
			} else {
				r.openWorker(p, w)
			}
		}()
	}
	byDuration := false
	if !closedLoop {
		byDuration = r.schedule(genCtx, p, duration)
		p.closeQueue()
	}
	wg.Wait()
	if closedLoop {
		byDuration = duration > 0 && r.since() >= duration
	}
	reason := stopEndOfProfile
	switch {
	case isClosed(p.exhausted):
		reason = stopEndOfData
	case genCtx.Err() != nil:
		reason = stopCause(genCtx)
	case byDuration:
		reason = durationName
	}
	p.st.end(reason)
	r.notifyEnded(p.st, reason)
	return reason, nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// lagNow is how far behind schedule the workload is: the wait of the
// ticket the scheduler cannot hand over, or the lateness of the tickets
// workers took in the last second.
func (r *runner) lagNow() time.Duration {
	var lag time.Duration
	if d := r.pending.Load(); d >= 0 {
		lag = r.since() - time.Duration(d)
	}
	if ps := r.cur.Load(); ps != nil {
		now := mono()
		for _, t := range ps.workers {
			if now-time.Duration(t.lagAt.Load()) < time.Second {
				lag = max(lag, time.Duration(t.lag.Load()))
			}
		}
	}
	return max(lag, 0)
}

// noteError remembers err as the workload's last write error.
func (r *runner) noteError(err error, class sinks.Class) {
	now := time.Now()
	text := r.scrub(err.Error())
	r.errMu.Lock()
	if r.lastErr.First.IsZero() {
		r.lastErr.First = now
	}
	r.lastErr.Text, r.lastErr.Class, r.lastErr.Last = text, class, now
	r.errMu.Unlock()
}

func (r *runner) lastError() errorNote {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.lastErr
}
