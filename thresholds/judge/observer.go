// Package judge evaluates each workload's SOAKD_<W>_THRESHOLDS on its run
// phase while the engine runs it (see judge.go for how): a
// daemon.Observer whose verdicts (daemon.Checker) show in /status and
// /metrics and end up in the summary, and which stops the run when a check
// marked ! fails.
package judge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
)

// TargetFigures are the target's own figures, as its watch reads them
// while the run goes: the last reading of each of a workload's target
// and when it was taken; ok is false while there is none. Memory is one
// figure (its kinds overlap: the watch picks one), Storage the storage
// the workload's data takes, StoragePerValue that divided by the values
// or records acknowledged; bytes. The watch of the targets implements it.
type TargetFigures interface {
	Memory(workload string) (v float64, at time.Time, ok bool)
	Storage(workload string) (v float64, at time.Time, ok bool)
	StoragePerValue(workload string) (v float64, at time.Time, ok bool)
}

// Options are what the judges read besides the engine.
type Options struct {
	// Target, when set, gives the target. checks their figures; without
	// it they are not available (and fail the final verdict).
	Target TargetFigures
}

// Judges judges every workload of a run that has thresholds. One Judges
// may serve runs one after another (a sweep's points): each run's
// workloads replace the last run's.
type Judges struct {
	log    *zap.Logger
	target TargetFigures

	mu     sync.Mutex
	byName map[string]*judge
}

// New returns the judges of a run, logging to log.
func New(log *zap.Logger, o Options) *Judges {
	return &Judges{log: log, target: o.Target, byName: map[string]*judge{}}
}

// Opened judges w when it has thresholds, once its source is built:
// a check of an op the source never issues (a query type of another use
// case, or one left out) could never be judged, and is refused.
func (js *Judges) Opened(w *daemon.Handle) error {
	wc := w.Config()
	js.mu.Lock()
	defer js.mu.Unlock()
	delete(js.byName, wc.Name)
	if len(wc.Checks) == 0 {
		return nil
	}
	ops := w.ReportedOps()
	for _, t := range wc.Checks {
		if t.Op != "" && !slices.Contains(ops, t.Op) {
			return &settings.Error{Key: config.Prefix(wc.Name) + "THRESHOLDS", Err: fmt.Errorf(
				"%s: source %s issues no op %q (its ops: %s)", t, wc.Source, t.Op, strings.Join(ops, ", "))}
		}
	}
	j := newJudge(wc, js.log.With(zap.String("workload", wc.Name)))
	j.target = js.target
	js.byName[wc.Name] = j
	return nil
}

// Started evaluates each judge live until ctx ends or its run phase does;
// a failed check marked ! stops the run.
func (js *Judges) Started(ctx context.Context, ws []*daemon.Handle, stop func(error)) {
	for _, w := range ws {
		j := js.judgeOf(w.Name())
		if j == nil {
			continue
		}
		j.done = make(chan struct{})
		go func() {
			defer close(j.done)
			j.run(ctx, stop)
		}()
	}
}

// PhaseBegun attaches a workload's judge to its run phase.
func (js *Judges) PhaseBegun(w *daemon.Handle, p *daemon.Phase) {
	if j := js.judgeOf(w.Name()); j != nil && p.Name() == "run" {
		j.begin(p)
	}
}

// PhaseEnded is nothing to the judges: the final judgement is the
// summary's (Verdicts with final).
func (js *Judges) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Verdicts returns the workload's verdicts so far, or its final ones,
// once its live evaluation has stopped; nil when it has no thresholds.
func (js *Judges) Verdicts(workload string, final bool) []report.ThresholdResult {
	j := js.judgeOf(workload)
	if j == nil {
		return nil
	}
	if !final {
		return j.live()
	}
	if j.done != nil {
		<-j.done // the run's context has ended: so does run
	}
	return j.finish()
}

func (js *Judges) judgeOf(name string) *judge {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byName[name]
}
