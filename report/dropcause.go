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
// shutdown, from its entry and busy, the seconds its workers spent on
// their tickets, summed (writes that failed, timed out or waited to retry
// included: the service times of the acknowledged ones left those out);
// nil when it dropped none.
func (ws *WorkloadSummary) DiagnoseDrops(busy float64) *DropCause {
	if ws.Dropped-ws.DroppedAtShutdown <= 0 || ws.Seconds <= 0 || ws.Workers <= 0 {
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
