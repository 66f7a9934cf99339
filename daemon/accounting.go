package daemon

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Every unit a phase schedules ends in exactly one of three places:
// acknowledged by the target, failed for good, or dropped unsent. Until
// then it is in flight (queued for a worker, or being written). So at
// every instant
//
//	scheduled = acked + failed + dropped + in flight
//
// and in flight is 0 once the phase has ended. The counts live in tallies:
// one for the scheduler and one per worker, each behind its own mutex, so
// workers never share a lock or a cache line on the hot path. Readers (the
// summary, /status, the progress line and /metrics) all go through
// phaseStats.snapshot, which sums the tallies.

// numClasses is the number of error classes; per-class counters are
// arrays of this size, indexed by sinks.Class.Index.
const numClasses = len(sinks.Classes)

// opSlots are the ops a phase counts: the KV ops, the series op "write"
// (writeOp), the read-back checks of VERIFY (verifyOp), which have
// latencies but are no writes (they are in no unit count), then the query
// types (from queryOp0).
const opSlots = queryOp0 + int(sources.NumQueryTypes)

// writeOp is the slot of the series op "write".
const writeOp = int(sources.NumOps)

// verifyOp is the slot of the op "verify": reading back what was
// acknowledged.
const verifyOp = writeOp + 1

// queryOp0 is the slot of the first query type; query type t counts in
// slot queryOp0+t.
const queryOp0 = verifyOp + 1

// opNames are the names of the op slots, in slot order.
var opNames = func() []string {
	out := make([]string, opSlots)
	for i := range out {
		out[i] = opName(i)
	}
	return out
}()

func opName(i int) string {
	switch {
	case i == writeOp:
		return "write"
	case i == verifyOp:
		return "verify"
	case i >= queryOp0:
		return sources.QueryType(i - queryOp0).String()
	}
	return sources.Op(i).String()
}

// opSlot is the slot of op name s, or allOps for "".
func opSlot(s string) int {
	if s == "" {
		return allOps
	}
	return slices.Index(opNames, s)
}

// opsFor lists the op slots a workload of kind k reports: write for
// series, every KV op, and for queries the types src issues (every type
// when it does not say).
func opsFor(k sources.Kind, src sources.Source) []int {
	switch k {
	case sources.Series:
		return []int{writeOp}
	case sources.Queries:
		var out []int
		if qs, ok := src.(interface{ QueryTypes() []sources.QueryType }); ok {
			for _, t := range qs.QueryTypes() {
				if t < sources.NumQueryTypes {
					out = append(out, queryOp0+int(t))
				}
			}
		}
		if len(out) == 0 {
			for t := range int(sources.NumQueryTypes) {
				out = append(out, queryOp0+t)
			}
		}
		return out
	}
	out := make([]int, sources.NumOps)
	for i := range out {
		out[i] = i
	}
	return out
}

// opCounts are one op's outcomes.
type opCounts struct {
	// ok and failed count batches for series (op write), operations for
	// KV and queries for query workloads, as soakd_ops_total does.
	ok, failed int64
	// rows counts the rows that acknowledged queries returned.
	rows int64
	// errors counts failed attempts by class (retries included); for KV
	// each attempt counts once per operation of that op in the batch.
	errors [numClasses]int64
}

// counts are a phase's totals, or one tally's share of them.
type counts struct {
	// scheduled is the number of units the schedule released. A worker's
	// tally can hold a negative share: the units of a ticket beyond the
	// end of a finite data set, which never existed, are taken back.
	scheduled int64
	acked     int64 // units the target acknowledged (stored)
	failed    int64 // units in batches that failed for good
	dropped   int64 // units never sent: later than MAX_LAG, or still queued when writes were cut at shutdown
	cut       int64 // of dropped, those cut at shutdown
	waited    int64 // of dropped, those that waited for a worker while every worker was busy
	values    int64 // field values acknowledged (series)
	bytes     int64 // payload bytes sent, failed attempts included
	ops       [opSlots]opCounts
	verify    verifyCounts // VERIFY's read-back checks of acknowledged units
}

// inflight is what is neither acknowledged, failed nor dropped yet.
func (c *counts) inflight() int64 { return c.scheduled - c.acked - c.failed - c.dropped }

// byClass sums failed attempts per class over every op.
func (c *counts) byClass() [numClasses]int64 {
	var out [numClasses]int64
	for op := range c.ops {
		for i, e := range c.ops[op].errors {
			out[i] += e
		}
	}
	return out
}

func (c *counts) add(o *counts) {
	c.scheduled += o.scheduled
	c.acked += o.acked
	c.failed += o.failed
	c.dropped += o.dropped
	c.cut += o.cut
	c.waited += o.waited
	c.values += o.values
	c.bytes += o.bytes
	c.verify.add(&o.verify)
	for op := range c.ops {
		c.ops[op].ok += o.ops[op].ok
		c.ops[op].failed += o.ops[op].failed
		c.ops[op].rows += o.ops[op].rows
		for i := range c.ops[op].errors {
			c.ops[op].errors[i] += o.ops[op].errors[i]
		}
	}
}

// tally is the share of a phase's counts kept by one goroutine (the
// scheduler or a worker), with the latency samples it has not yet handed
// to the phase's histograms. Only its owner writes it.
type tally struct {
	mu  sync.Mutex
	c   counts
	lat sampleBuf

	// writing is set while the worker is inside Sink.Write (soakd_inflight).
	writing atomic.Bool
	// busy is the time the worker spent on its tickets (ns): writes,
	// failed or not, and the waits between retries.
	busy atomic.Int64
	// started is the phase time the ticket under way began at, plus 1
	// (0: none), so the busy share of a phase still running counts a
	// write that has not ended yet (a stalled target).
	started atomic.Int64
	// lag is the lateness of the last ticket the worker took, and lagAt
	// when it took it (mono), for soakd_schedule_lag_seconds.
	lag, lagAt atomic.Int64

	_ [64]byte // keep neighbouring tallies off this one's cache lines
}

// phaseStats is one phase (load or run) of a workload: its tallies,
// latency histograms and how it ended.
type phaseStats struct {
	name  string                 // load or run
	rate  atomic.Pointer[string] // the phase's rate, as configured, or as last set at run time (see rateText)
	begin time.Duration
	ended atomic.Int64 // mono() at the end; 0 = running

	sched   tally    // the scheduler's: units released, bulk drops
	workers []*tally // one per worker
	hist    phaseHist

	stopMu  sync.Mutex
	stopped string // why the phase ended, once it has

	// verify is the read-back checker's share (VERIFY), nil when off;
	// starts where each stream stood when the phase began.
	verify *tally
	starts []sources.Position

	schedCPU atomic.Int64 // CPU time of the scheduler's thread, once it has ended (ns)
}

func newPhaseStats(name, rate string, workers int) *phaseStats {
	ps := &phaseStats{name: name, begin: mono(), workers: make([]*tally, workers)}
	ps.rate.Store(&rate)
	for i := range ps.workers {
		ps.workers[i] = &tally{}
	}
	return ps
}

// rateText is the phase's rate as configured, or as last set at run
// time (/control, each step of soakd capacity): what the console,
// /status and the summary show as the phase's rate.
func (ps *phaseStats) rateText() string { return *ps.rate.Load() }

// snapshot sums the tallies. Every tally is locked before any is read
// and released only once all are: a unit is counted scheduled before a
// worker can count it finished, and a cut taken under all the locks
// shows each unit in exactly one state. Reading the tallies one after
// the other would let units that finish, and the units scheduled in
// their place, slip between two reads, and the units in flight read
// above what the queue and the workers can hold. Latency samples are
// merged into the histograms in the same pass, so histogram counts agree
// with the op counts read (see phaseHist).
func (ps *phaseStats) snapshot() counts { return ps.snapshotThen(nil) }

// busy is the time the phase's workers spent on their tickets by now
// (phase time), summed, the tickets under way included.
func (ps *phaseStats) busy(now time.Duration) time.Duration {
	var d int64
	for _, t := range ps.workers {
		d += t.busy.Load()
		if s := t.started.Load(); s > 0 {
			d += max(int64(now)-(s-1), 0)
		}
	}
	return time.Duration(d)
}

// snapshotThen is snapshot, calling then (if not nil) with the histograms
// before they can change again, so what it reads matches the counts.
func (ps *phaseStats) snapshotThen(then func(*phaseHist)) counts {
	if then == nil {
		return ps.snapshotWith(nil)
	}
	return ps.snapshotWith(func(_ *counts, h *phaseHist) { then(h) })
}

// snapshotWith is snapshotThen, also handing then the counts read. The
// locks are taken in the order every writer takes them: the histograms'
// before a worker's (lockRoom), and no writer holds two tallies' locks.
func (ps *phaseStats) snapshotWith(then func(*counts, *phaseHist)) counts {
	var c counts
	ps.hist.mu.Lock()
	for _, t := range ps.workers {
		t.mu.Lock()
	}
	if v := ps.verify; v != nil {
		v.mu.Lock()
	}
	ps.sched.mu.Lock()
	for _, t := range ps.workers {
		c.add(&t.c)
		ps.hist.mergeLocked(&t.lat)
	}
	if v := ps.verify; v != nil {
		c.add(&v.c)
		ps.hist.mergeLocked(&v.lat)
	}
	c.add(&ps.sched.c)
	ps.sched.mu.Unlock()
	if v := ps.verify; v != nil {
		v.mu.Unlock()
	}
	for _, t := range ps.workers {
		t.mu.Unlock()
	}
	if then != nil {
		then(&c, &ps.hist)
	}
	ps.hist.mu.Unlock()
	return c
}

// elapsed is the phase's running time, to its end or now.
func (ps *phaseStats) elapsed() time.Duration {
	end := time.Duration(ps.ended.Load())
	if end == 0 {
		end = mono()
	}
	return end - ps.begin
}

// writing is the number of workers inside Sink.Write now.
func (ps *phaseStats) writing() int {
	n := 0
	for _, t := range ps.workers {
		if t.writing.Load() {
			n++
		}
	}
	return n
}

// end records why the phase ended and when.
func (ps *phaseStats) end(reason string) {
	ps.stopMu.Lock()
	if ps.stopped == "" {
		ps.stopped = reason
	}
	ps.stopMu.Unlock()
	ps.ended.CompareAndSwap(0, int64(mono()))
}

// stopReason is why the phase ended ("" while it runs).
func (ps *phaseStats) stopReason() string {
	ps.stopMu.Lock()
	defer ps.stopMu.Unlock()
	return ps.stopped
}

// release counts n units as scheduled by the scheduler.
func (t *tally) release(n int64) {
	t.mu.Lock()
	t.c.scheduled += n
	t.mu.Unlock()
}

// drop counts n scheduled units as dropped; cut says they were cut at
// shutdown rather than late.
func (t *tally) drop(n int64, cut bool) {
	t.mu.Lock()
	t.c.dropped += n
	if cut {
		t.c.cut += n
	}
	t.mu.Unlock()
}

// dropWaited counts n units dropped after waiting for a worker while
// every worker was busy: the queue stayed full until they were later than
// MAX_LAG, or they were that late when a worker took them from it. The
// scheduler queues a ticket only when no worker is idle, so these drops
// are the workers' (and the target's that holds them), not soakd's.
func (t *tally) dropWaited(n int64) {
	t.mu.Lock()
	t.c.dropped += n
	t.c.waited += n
	t.mu.Unlock()
}

// releaseAndDrop counts n units as scheduled and dropped at once (the
// scheduler's bulk drop when it is behind); waited says they came due
// while the scheduler was held by a full queue (see dropWaited).
func (t *tally) releaseAndDrop(n int64, waited bool) {
	t.mu.Lock()
	t.c.scheduled += n
	t.c.dropped += n
	if waited {
		t.c.waited += n
	}
	t.mu.Unlock()
}
