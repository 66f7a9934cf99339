package history

import (
	"github.com/soakd/soakd/internal/procstat"

	"math"
	"runtime/metrics"
)

// procSample is soakd's own resource use at one instant, for the
// history's process series.
type procSample struct {
	at         float64 // seconds since the history's origin
	cpu        float64 // CPU seconds used so far (user + system); NaN if unknown
	rss        float64 // resident memory, bytes; NaN if unknown
	heap       float64 // Go heap in live and not yet swept objects, bytes
	goroutines float64
}

var procMetrics = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/sched/goroutines:goroutines"},
}

// readProc reads soakd's CPU time, memory and goroutines (without
// stopping the world, unlike runtime.ReadMemStats).
func readProc() procSample {
	s := make([]metrics.Sample, len(procMetrics))
	copy(s, procMetrics)
	metrics.Read(s)
	p := procSample{heap: math.NaN(), goroutines: math.NaN()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		p.heap = float64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		p.goroutines = float64(s[1].Value.Uint64())
	}
	p.cpu, p.rss = procstat.Self()
	return p
}
