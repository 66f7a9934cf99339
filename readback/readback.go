// Package readback is VERIFY's continuous read-back (see verifier.go for
// how): a daemon.Verifier that follows each workload with
// SOAKD_<W>_VERIFY set, picks a fraction of the units of its acknowledged
// batches and reads them back while the run goes on, counting what it
// finds into each phase's daemon.ReadBack, whence the engine shows it in
// /status, /metrics, the history and the summary, and fails the run
// (exit 1) when acknowledged units are missing, changed or repeated.
package readback

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
)

// Checkers are the read-back checkers of a run, one per workload with
// VERIFY set. One Checkers may serve runs one after another (a sweep's
// points): each run's workloads replace the last run's.
type Checkers struct {
	log *zap.Logger

	mu     sync.Mutex
	byName map[string]*verifier
}

// New returns the read-back checkers of a run, logging to log.
func New(log *zap.Logger) *Checkers {
	return &Checkers{log: log, byName: map[string]*verifier{}}
}

var _ daemon.Verifier = (*Checkers)(nil)

// Opened builds w's checker when VERIFY is set: a target that cannot
// read back (or a source that cannot say what it must hold) is a
// configuration error naming VERIFY.
func (cs *Checkers) Opened(w *daemon.Handle) error {
	name := w.Name()
	cs.mu.Lock()
	delete(cs.byName, name)
	cs.mu.Unlock()
	v, err := newVerifier(w, cs.log.With(zap.String("workload", name)))
	if err != nil || v == nil {
		return err
	}
	cs.mu.Lock()
	cs.byName[name] = v
	cs.mu.Unlock()
	return nil
}

// Follow returns w's checker, or nil when w does not verify: its
// workers then pay nothing for read-back.
func (cs *Checkers) Follow(w *daemon.Handle) daemon.WriteFollower {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if v := cs.byName[w.Name()]; v != nil {
		return v
	}
	return nil
}

// ReadsBack marks Checkers as the run's daemon.Verifier.
func (cs *Checkers) ReadsBack() {}

// Started does nothing: each checker runs from its workload's first
// write to its last (daemon.WriteFollower).
func (cs *Checkers) Started(context.Context, []*daemon.Handle, func(error)) {}

// PhaseBegun does nothing: a unit is counted into the phase that wrote
// it, whichever phase runs when it is read back.
func (cs *Checkers) PhaseBegun(*daemon.Handle, *daemon.Phase) {}

// PhaseEnded does nothing (see PhaseBegun).
func (cs *Checkers) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// monoBase is the checkers' monotonic time origin.
var monoBase = time.Now()

// mono is the monotonic time since monoBase: when units are due to be
// read back, and their reads' latencies.
func mono() time.Duration { return time.Since(monoBase) + 1 }
