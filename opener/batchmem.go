package opener

import (
	"fmt"
	"unsafe"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// Each worker holds one batch, and its sink one encoded copy of it (a COPY
// buffer, a line-protocol body, a pipeline): the memory a workload needs
// grows with WORKERS × BATCH_SIZE (PIPELINE) × the size of a unit, and a
// setting that multiplies out to more than the machine has would only end
// in the kernel's OOM killer. Such settings are refused before anything
// runs, naming them.

// batchBytes estimates one batch of units of src: what the source says
// of a unit (sources.UnitSizer: the key and every field value of a KV
// operation), else 8 bytes per column of a series row (time, device,
// fields), a query and its rendered text, or a KV operation's key.
func batchBytes(kind sources.Kind, src sources.Source, units int) int64 {
	if u, ok := src.(sources.UnitSizer); ok {
		return u.UnitBytes() * int64(units)
	}
	if kind == sources.Queries {
		return (int64(unsafe.Sizeof(sources.Query{})) + queryTextBytes) * int64(units)
	}
	if kind == sources.KV {
		return 64 * int64(units)
	}
	cols := 0
	for _, sc := range src.Schemas() {
		cols = max(cols, 2+len(sc.Fields))
	}
	return int64(cols) * 8 * int64(units)
}

// queryTextBytes is about the longest query text a sink renders.
const queryTextBytes = 4 << 10

// memoryBudget is how much of the machine's memory the batches of every
// workload together may take: half of it (8 GiB when it is unknown).
func memoryBudget() int64 {
	if m := sysinfo.Collect("").Memory; m > 0 {
		return int64(m / 2)
	}
	return 8 << 30
}

// CheckMemory refuses a workload whose batches, with their encoded copies,
// would not fit in memoryBudget, with a *settings.Error naming
// BATCH_SIZE or PIPELINE.
func CheckMemory(w *config.Workload, kind sources.Kind, src sources.Source) error {
	key, units := "BATCH_SIZE", w.BatchSize
	if kind != sources.Series {
		key, units = "PIPELINE", w.Pipeline
	}
	need := 2 * int64(w.Workers) * batchBytes(kind, src, units)
	if budget := memoryBudget(); need > budget {
		return &settings.Error{Key: config.Prefix(w.Name) + key, Err: fmt.Errorf(
			"%d units per batch × %d WORKERS would take about %.1f GiB for batches and their encoded copies, more than half this machine's memory (%.1f GiB): lower %s or WORKERS",
			units, w.Workers, float64(need)/(1<<30), float64(budget)/(1<<30), key)}
	}
	return nil
}
