package daemon

import (
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// BenchHandle is a series workload in its run phase, for simulating the
// features that read the engine (the history) without running it.
func BenchHandle() *Handle {
	rate := pace.MustParse("100000")
	cfg := &config.Workload{Name: "iot", Workers: 4, BatchSize: 1000, Rate: rate, MaxLag: time.Second}
	w := &workload{runner: newRunner(cfg, sources.Series, nil, nil, zap.NewNop())}
	w.handle = &Handle{w}
	w.beginPhase("run", rate, nil)
	return w.handle
}

// Simulate advances h (a BenchHandle) by secs seconds of 100,000 rows/s,
// 100 batches of 1000 a second, calling each after every second s
// (1..secs).
func Simulate(h *Handle, secs int, each func(s int)) {
	ps := h.w.cur.Load()
	for s := 1; s <= secs; s++ {
		t := ps.workers[s%len(ps.workers)]
		ps.sched.release(100_000)
		t.mu.Lock()
		t.c.acked += 100_000
		t.c.values += 1_000_000
		t.c.bytes += 8_000_000
		t.c.ops[writeOp].ok += 100
		for i := 0; i < 100; i++ {
			if t.lat.n == sampleCap {
				ps.hist.mu.Lock()
				ps.hist.mergeLocked(&t.lat)
				ps.hist.mu.Unlock()
			}
			d := time.Duration(1+i%13) * time.Millisecond
			t.lat.add(sample{op: uint8(writeOp), n: 1, units: 1000, response: d + 50*time.Microsecond, service: d, dispatch: 50 * time.Microsecond})
		}
		t.mu.Unlock()
		each(s)
	}
}

// What the external tests (package daemon_test) share with the internal
// ones: the seq source and the null sink, a configuration from a few
// settings, and the reading of /metrics's text.
var (
	Plugins      = testPlugins
	LoadTest     = loadTest
	Env          = testEnv
	ParseMetrics = parseMetrics
)

// Books are a phase's counts as the engine keeps them, read in one
// snapshot: what the external tests hold /metrics and /status to.
type Books struct {
	Name  string
	Ended bool
	// Scheduled = Acked + Failed + Dropped + InFlight; Cut is the part of
	// Dropped cut at shutdown.
	Scheduled, Acked, Failed, Dropped, Cut, InFlight, Bytes int64
	// The op write's acknowledged and failed batches, and its failed
	// attempts of class other.
	WriteOK, WriteFailed, WriteOtherErrors int64
}

// Add adds o to b, field by field.
func (b *Books) Add(o Books) {
	b.Scheduled += o.Scheduled
	b.Acked += o.Acked
	b.Failed += o.Failed
	b.Dropped += o.Dropped
	b.Cut += o.Cut
	b.InFlight += o.InFlight
	b.Bytes += o.Bytes
	b.WriteOK += o.WriteOK
	b.WriteFailed += o.WriteFailed
	b.WriteOtherErrors += o.WriteOtherErrors
}

// PhaseBooks are the books of each phase of h begun so far, in order.
func PhaseBooks(h *Handle) []Books {
	var out []Books
	for _, ps := range h.w.allPhases() {
		c := ps.snapshot()
		w := &c.ops[writeOp]
		out = append(out, Books{Name: ps.name, Ended: ps.ended.Load() != 0,
			Scheduled: c.scheduled, Acked: c.acked, Failed: c.failed, Dropped: c.dropped, Cut: c.cut,
			InFlight: c.inflight(), Bytes: c.bytes,
			WriteOK: w.ok, WriteFailed: w.failed, WriteOtherErrors: w.errors[sinks.Other.Index()]})
	}
	return out
}
