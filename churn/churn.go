// Package churn shows what CHURN did over a run: for each workload whose
// source replaces devices (sources.ChurnReporter), /status and the
// summary carry a "churn" field (sources.ChurnFigures: the setting, the
// devices reporting at any time, how many were replaced, the devices and
// series created so far), and the text summary a line of it, so that a
// user sees the churn asked for.
package churn

import (
	"context"
	"sync"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/sources"
)

// Field is the name of the field in /status and the summary.
const Field = "churn"

// Reporter is the daemon.Observer that adds the churn figures.
type Reporter struct {
	mu     sync.Mutex
	byName map[string]sources.ChurnReporter
}

var (
	_ daemon.StatusAdder  = (*Reporter)(nil)
	_ daemon.SummaryAdder = (*Reporter)(nil)
)

// New returns the churn reporter of a run (or of the runs of a sweep,
// one after the other).
func New() *Reporter { return &Reporter{byName: map[string]sources.ChurnReporter{}} }

// Opened notes w's source when it replaces devices.
func (r *Reporter) Opened(w *daemon.Handle) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byName, w.Name())
	if cr, ok := w.Source().(sources.ChurnReporter); ok && cr.Churning() {
		r.byName[w.Name()] = cr
	}
	return nil
}

// Started does nothing.
func (r *Reporter) Started(context.Context, []*daemon.Handle, func(error)) {}

// PhaseBegun does nothing.
func (r *Reporter) PhaseBegun(*daemon.Handle, *daemon.Phase) {}

// PhaseEnded does nothing.
func (r *Reporter) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// AddStatus adds the churn figures so far to the workload's /status.
func (r *Reporter) AddStatus(workload string) (string, any, bool) { return r.figures(workload) }

// SummaryField adds the churn figures of the run to the summary.
func (r *Reporter) SummaryField(workload string) (string, any, bool) { return r.figures(workload) }

func (r *Reporter) figures(workload string) (string, any, bool) {
	r.mu.Lock()
	cr := r.byName[workload]
	r.mu.Unlock()
	if cr == nil {
		return "", nil, false
	}
	return Field, cr.ChurnFigures(), true
}
