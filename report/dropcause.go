package report

import (
	"fmt"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/sources"
)

// DropCause says why a phase dropped scheduled work (later than MAX_LAG),
// so a run that drops work does not leave its reader to guess whether the
// target or soakd could not keep up.
type DropCause struct {
	// Bottleneck is "workers" (every worker was busy nearly all the time:
	// too few of them for the target's service time, or the target is at
	// its limit) or "soakd" (workers were often idle yet work was late:
	// soakd's CPU or scheduling fell behind).
	Bottleneck string `json:"bottleneck"`
	// WorkersBusy is the share of the phase the workers spent on their
	// tickets (writes, failed ones, retries and their waits): busy
	// seconds / (workers × seconds).
	WorkersBusy float64 `json:"workers_busy_share"`
	Diagnosis   string  `json:"diagnosis"`
}

// busyLimitRun is the workers' busy share above which the workers are
// the run's bottleneck: a pool busy 80 % of the time leaves bursts
// nowhere to go.
const busyLimitRun = 0.8

// DiagnoseDrops diagnoses a phase that dropped work other than at
// shutdown, from its entry, busy, the seconds its workers spent on
// their tickets, summed (writes that failed, timed out or waited to retry
// included: the service times of the acknowledged ones left those out),
// and waited, the units dropped after waiting for a worker while every
// worker was busy; nil when it dropped none.
//
// The busy share is the whole phase's, so a target that stalls or fails
// for a few seconds of a long phase leaves it low although every worker
// was held by it while the work was dropped: when most of the units
// dropped waited for a busy worker, the workers (and the target behind
// them) are named, whatever the phase's share.
func (ws *WorkloadSummary) DiagnoseDrops(busy float64, waited int64) *DropCause {
	dropped := ws.Dropped - ws.DroppedAtShutdown
	if dropped <= 0 || ws.Seconds <= 0 || ws.Workers <= 0 {
		return nil
	}
	series := ws.Kind == sources.Series.String()
	share := min(busy/(ws.Seconds*float64(ws.Workers)), 1)
	p := config.Prefix(ws.Name)
	units := "PIPELINE"
	if series {
		units = "BATCH_SIZE"
	}
	dispatch := pace.FormatSeconds(ws.Dispatch.P99)
	if share >= busyLimitRun {
		return &DropCause{Bottleneck: LimitWorkers, WorkersBusy: share, Diagnosis: fmt.Sprintf(
			"the %d workers were busy %.0f%% of the time (dispatch p99 %s): raise %sWORKERS (now %d) or %s%s (now %d); "+
				"if the target's service time rose, the target is at its limit instead (soakd capacity tells which)",
			ws.Workers, 100*share, dispatch, p, ws.Workers, p, units, ws.Batch)}
	}
	if 2*waited >= dropped {
		return &DropCause{Bottleneck: LimitWorkers, WorkersBusy: share, Diagnosis: fmt.Sprintf(
			"%d of the %d units dropped waited for a worker while all %d were busy (busy %.0f%% of the phase on average, dispatch p99 %s): "+
				"the target held them for a while (slow, stalled or failing: see its service time, the errors and %sRETRIES), "+
				"or raise %sWORKERS (now %d) or %s%s (now %d)",
			waited, dropped, ws.Workers, 100*share, dispatch, p, p, ws.Workers, p, units, ws.Batch)}
	}
	return &DropCause{Bottleneck: LimitSoakd, WorkersBusy: share, Diagnosis: fmt.Sprintf(
		"the %d workers were busy only %.0f%% of the time, yet work was sent late (dispatch p99 %s): soakd itself fell behind "+
			"(CPU or scheduling); give it more CPU or split the rate over processes with %sSHARD",
		ws.Workers, 100*share, dispatch, p)}
}

// What limited the work (DropCause.Bottleneck, a capacity step's): the
// target, soakd's workers, or soakd itself.
const (
	LimitTarget  = "target"
	LimitWorkers = "workers"
	LimitSoakd   = "soakd"
)
