// Package targetwatch watches each workload's target while the run goes:
// every SOAKD_<W>_WATCH_INTERVAL it reads the target's own figures, its
// memory, the storage soakd's data takes and its CPU time, through its
// sink (sinks.TargetWatcher), and the RSS and CPU time of the process
// SOAKD_<W>_WATCH_PROCESS names (from /proc: a sidecar sharing the
// target's process namespace), and exports them as soakd_target_* and in
// /status. A load that looks fine from the client side can hide a target
// whose memory or storage grows without bound: this is where that shows.
//
// A Watcher is a daemon.Observer, a daemon.StatusAdder and a
// daemon.Finisher. Each workload is read from a goroutine of its own,
// from its first phase until it finishes or the run stops scheduling,
// and once more at its end (its run phase ended, or the run is over),
// before the summary is built and the sinks close, so that the figures
// the run ends with are its end's; never from the engine's goroutines.
// What it keeps is bounded (the first reading, the last and the peak of
// each figure, no history).
package targetwatch

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/logthrottle"
)

// Options are where a Watcher reports besides /status.
type Options struct {
	// Metrics, when set, gets soakd_target_memory_bytes,
	// soakd_target_storage_bytes, soakd_target_cpu_seconds_total and
	// soakd_target_storage_bytes_per_value: the registry the run's
	// /metrics serves.
	Metrics prometheus.Registerer
	// Grace is the run's SHUTDOWN_GRACE: a run stopped before its end
	// (a signal, SOAKD_DURATION) closes its sinks by then, so each
	// workload's last reading is taken as it stops, within Grace (none
	// when it is 0).
	Grace time.Duration
}

// Watcher watches the targets of a run's workloads. One Watcher may serve
// runs one after another: each run's workloads replace the last run's.
type Watcher struct {
	log   *zap.Logger
	grace time.Duration // Options.Grace

	mu sync.Mutex
	// watches are the workloads of the run (opened, or started), in
	// order, those with the watch off included as nil; byName finds them.
	watches []*watch
	byName  map[string]*watch
	stop    context.CancelFunc // ends the run's watch goroutines
	wg      sync.WaitGroup
	// said are the lines logged once over every run (a sweep's many),
	// at most saidMax kinds.
	said *logthrottle.Once
}

var (
	_ daemon.Observer    = (*Watcher)(nil)
	_ daemon.StatusAdder = (*Watcher)(nil)
	_ daemon.Finisher    = (*Watcher)(nil)
)

// saidMax bounds the distinct "not available" lines a Watcher remembers
// having logged (a reason may hold a server's error text).
const saidMax = 256

// New returns a Watcher logging to log; it registers its metrics on
// o.Metrics when set (a registry that has them already keeps the first,
// with a warning).
func New(log *zap.Logger, o Options) *Watcher {
	w := &Watcher{log: log, byName: map[string]*watch{}, said: logthrottle.NewOnce(saidMax), grace: o.Grace}
	if o.Metrics != nil {
		if err := o.Metrics.Register(&collector{w: w}); err != nil {
			log.Warn("cannot export the targets' own figures", zap.Error(err))
		}
	}
	return w
}

// Opened sets up h's watch when its WATCH_INTERVAL is not 0. A workload
// whose name was opened before begins a new run: the last run's watches
// are dropped.
func (tw *Watcher) Opened(h *daemon.Handle) error {
	w := newWatch(h, tw.log.With(zap.String("workload", h.Name())), tw.said, tw.grace)
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if _, seen := tw.byName[h.Name()]; seen {
		tw.watches, tw.byName = nil, map[string]*watch{}
	}
	tw.watches = append(tw.watches, w)
	tw.byName[h.Name()] = w
	return nil
}

// Started starts a goroutine per watched workload; each reads from its
// workload's first phase until the workload ends (see watch.run).
func (tw *Watcher) Started(ctx context.Context, _ []*daemon.Handle, _ func(error)) {
	ctx, stop := context.WithCancel(ctx)
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.stop = stop
	for _, w := range tw.watches {
		if w == nil || !w.reads() {
			continue
		}
		tw.wg.Go(func() { w.run(ctx) })
	}
}

// PhaseBegun lets w's watch begin: its target is set up (connected,
// prepared) once a phase runs.
func (tw *Watcher) PhaseBegun(h *daemon.Handle, _ *daemon.Phase) {
	if w := tw.watchOf(h.Name()); w != nil {
		w.begin()
	}
}

// PhaseEnded makes h's watch take its last reading once h's run phase,
// its last, has ended (its writes acknowledged): the figures it ends with
// are the end's, however far the next interval was. The watch goes on
// across a load phase's end.
func (tw *Watcher) PhaseEnded(h *daemon.Handle, p *daemon.Phase, _ string) {
	if p.Name() != "run" {
		return
	}
	if w := tw.watchOf(h.Name()); w != nil {
		w.end()
	}
}

// Finished makes every watch that has not taken its last reading yet
// take it (its workload ended without a run phase, or never began one)
// and waits for the watch goroutines, before the engine builds the summary and
// closes the sinks they read through; a last reading waits for its target
// lastReadingTimeout at most. What they read stays in /status and the
// metrics until the next run opens.
func (tw *Watcher) Finished(bool) {
	tw.mu.Lock()
	stop := tw.stop
	tw.stop = nil
	ws := tw.watches
	tw.mu.Unlock()
	if stop != nil {
		stop()
	}
	for _, w := range ws {
		if w != nil {
			w.end()
		}
	}
	tw.wg.Wait()
}

// AddStatus adds "target_figures" to the workload's /status object when
// its watch is on (see Status): not "target", which is the target's URL
// there, as in the summary.
func (tw *Watcher) AddStatus(workload string) (string, any, bool) {
	w := tw.watchOf(workload)
	if w == nil {
		return "", nil, false
	}
	return "target_figures", w.status(), true
}

// watchOf is the watch of the workload named name in the run, nil when
// its watch is off.
func (tw *Watcher) watchOf(name string) *watch {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.byName[name]
}

// current are the run's watches, those off left out.
func (tw *Watcher) current() []*watch {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	out := make([]*watch, 0, len(tw.watches))
	for _, w := range tw.watches {
		if w != nil {
			out = append(out, w)
		}
	}
	return out
}
