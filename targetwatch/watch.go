package targetwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/logthrottle"
	"github.com/soakd/soakd/readmodel"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Keys of the figures a watch names unavailable besides those its sink
// names: the sink's figures as a whole, and the watched process.
const (
	unavailableSink    = "target"
	unavailableProcess = "process"
)

// processRSS is the memory kind the process watch reports.
const processRSS = "process_rss"

// notSummed are the storage kinds that are no part of soakd's data but a
// whole that holds it (database), the server's own (wal, written by every
// client), or another view of parts counted already (compressed and
// uncompressed: a TimescaleDB hypertable's chunks, in table and index):
// they are shown and exported, but the storage total, and what it is
// divided by the values acknowledged, sums the other kinds.
var notSummed = map[string]bool{"database": true, "wal": true, "compressed": true, "uncompressed": true}

// watch reads one workload's target.
type watch struct {
	h        *daemon.Handle
	log      *zap.Logger
	interval time.Duration
	grace    time.Duration // the run's SHUTDOWN_GRACE: bounds the last reading of a stopped run
	scrub    func(string) string
	// figures reads the target through its sink; nil when the sink
	// cannot (and noFigures says why).
	figures   sinks.TargetWatcher
	noFigures string
	// proc watches WATCH_PROCESS; nil when it is empty.
	proc *procWatch
	// counted is what storage is divided by: values (series) or records
	// (KV); "" for a workload that writes neither (queries).
	counted string

	begun     chan struct{} // closed when the workload's first phase begins
	beginOnce sync.Once
	ended     chan struct{} // closed when the workload's run phase has ended, or the run is over
	endOnce   sync.Once

	// said is what the Watcher logged already, so that a figure missing
	// at every reading is logged once, over every run it serves (a
	// sweep's); target is the URL those lines are of.
	said    *logthrottle.Once
	target  string
	prefix  string // the workload's settings' prefix, SOAKD_<W>_
	failing bool   // of the watch's goroutine alone: the last reading through the sink failed (and was logged)

	mu sync.Mutex
	st state
}

// state is what a watch has read, bounded: the first, last and peak of
// each figure, no history.
type state struct {
	readings, errors int64
	lastError        string
	firstAt, lastAt  time.Time
	memory, storage  map[string]*figure // by the sink's kind
	stats            map[string]*figure // by sinks.Stats' names
	rss              *figure            // the watched process's
	storageTotal     *figure            // storage summed over kinds (notSummed aside)
	cpu              *figure
	cpuFrom          string // target or process
	// cpuUsed is the CPU time used between cpu's first reading and its
	// last: the sum of the increases between readings, a reading below
	// the one before (the target restarted, its counter from 0) adding
	// itself, as Prometheus' rate() reads a counter reset.
	cpuUsed float64
	// perValue is storageTotal's last ÷ acknowledged, the values or
	// records acknowledged when it was read; hasPerValue says whether
	// there is one.
	perValue, acknowledged float64
	hasPerValue            bool
	unavailable            map[string]string
	pid                    int // the process watched now, 0 = none
	// saidLoss: bit i set once lossWarnings[i] was logged (once a run).
	saidLoss uint8
	// instance is the server process the last reading came from (the
	// sink's TargetFigures.Instance), restarts how often it changed from
	// one reading to the next, lastRestart the reading that saw the
	// last change.
	instance    string
	restarts    int64
	lastRestart time.Time
}

// figure is one figure over the run: its first, last and peak readings.
type figure struct {
	first, last, peak float64
	firstAt, lastAt   time.Time
	// current is false once a reading left it out (the sink names it
	// unavailable, the process exited): it is no longer exported.
	current bool
	// rise is what a counter rose by since the first reading: the sum of
	// the increases between readings, a reading below the one before
	// (the target restarted, its counter from 0) adding itself, as
	// Prometheus' increase() reads a counter reset. Of a gauge it means
	// nothing.
	rise float64
}

func (f *figure) add(v float64, at time.Time) *figure {
	if f == nil {
		return &figure{first: v, last: v, peak: v, firstAt: at, lastAt: at, current: true}
	}
	if d := v - f.last; d >= 0 {
		f.rise += d
	} else {
		f.rise += v
	}
	f.last, f.lastAt, f.current = v, at, true
	f.peak = max(f.peak, v)
	return f
}

// newWatch sets up h's watch, nil when its WATCH_INTERVAL is 0.
func newWatch(h *daemon.Handle, log *zap.Logger, said *logthrottle.Once, grace time.Duration) *watch {
	cfg := h.Config()
	if cfg.WatchInterval <= 0 {
		return nil
	}
	w := &watch{h: h, log: log, interval: cfg.WatchInterval, scrub: cfg.Scrubber(), begun: make(chan struct{}),
		ended: make(chan struct{}), said: said, target: cfg.Target, grace: grace,
		prefix: config.Prefix(cfg.Name)}
	w.st.memory, w.st.storage, w.st.stats, w.st.unavailable = map[string]*figure{}, map[string]*figure{}, map[string]*figure{}, map[string]string{}
	switch h.Kind() {
	case sources.Series:
		w.counted = "values"
	case sources.KV:
		w.counted = "records"
	}
	tw, ok := h.Sink().(sinks.TargetWatcher)
	switch {
	case ok && !cfg.Builtin:
		w.figures = tw
	case cfg.Builtin:
		// The built-in Redis answers INFO with little but refusals,
		// which a summary would list as figures not read; what it holds
		// and costs is soakd's own process.
		w.noFigures = "the built-in target runs in soakd's own process: its figures are soakd's"
	default:
		w.noFigures = fmt.Sprintf("the %s sink cannot read its target's own figures", cfg.Sink.Scheme())
		if cfg.WatchProcess == "" {
			w.noFigures += fmt.Sprintf(" (%sWATCH_PROCESS can watch its process)", config.Prefix(cfg.Name))
		}
	}
	if w.figures == nil {
		w.st.unavailable[unavailableSink] = w.noFigures
		// The built-in targets live in this process: nothing to say
		// about them unless asked.
		logAt := log.Info
		if cfg.Builtin {
			logAt = log.Debug
		}
		logAt("the target's own figures are not read through its sink", zap.String("why", w.noFigures))
	}
	if pid, name := cfg.WatchedProcess(); pid != 0 || name != "" {
		w.proc = &procWatch{pid: pid, name: name, setting: config.Prefix(cfg.Name) + "WATCH_PROCESS", log: log}
	}
	return w
}

// reads reports whether the watch has anything to read.
func (w *watch) reads() bool { return w.figures != nil || w.proc != nil }

// begin lets the watch's goroutine take its first reading.
func (w *watch) begin() { w.beginOnce.Do(func() { close(w.begun) }) }

// end makes the watch's goroutine take its last reading and return.
func (w *watch) end() { w.endOnce.Do(func() { close(w.ended) }) }

// lastReadingTimeout bounds the reading taken at the workload's end (or
// its WATCH_INTERVAL, when shorter): the engine waits for it before it
// builds the summary and closes the sinks, so a target that does not
// answer then holds the shutdown this long at most.
const lastReadingTimeout = 5 * time.Second

// run reads the target every interval from the workload's first phase,
// and once more at its end (its run phase has ended, it has finished, or
// the run is over), so that the figures the summary and the report end
// with are the end's, not those of the last interval that came round. The
// readings in between are cut when ctx ends (the run stops scheduling:
// writes in flight may still land); the last is taken once the workload
// is done, bounded by lastReadingTimeout, not by ctx.
func (w *watch) run(ctx context.Context) {
	select {
	case <-w.begun:
	case <-w.ended:
		if !isClosed(w.begun) {
			return // no phase began: no target set up to read
		}
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
wait:
	for !isClosed(w.ended) && !w.h.Finished() {
		w.read(ctx, w.interval, false)
		select {
		case <-t.C:
		case <-w.ended:
			break wait
		case <-ctx.Done():
			if isClosed(w.ended) {
				break wait // it ended first: the run stops as it is over
			}
			// Stopped before its end: the run closes its sinks by the end
			// of SHUTDOWN_GRACE, so the last reading is taken now, within
			// it, as the writes in flight drain (none with no grace: the
			// sinks close at once).
			if w.grace > 0 {
				w.read(context.WithoutCancel(ctx), min(w.interval, lastReadingTimeout, w.grace), true)
			}
			return
		}
	}
	w.read(context.WithoutCancel(ctx), min(w.interval, lastReadingTimeout), true)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// read takes one reading: the sink's figures, within timeout, the
// process's, and what the workload had acknowledged then; last says it is
// the reading taken at the workload's end.
func (w *watch) read(ctx context.Context, timeout time.Duration, last bool) {
	at := time.Now()
	var f sinks.TargetFigures
	var sinkErr error
	sinkRead := false
	if w.figures != nil {
		// A reading that takes longer than the interval would pile up
		// behind the next one; the last holds the run's end.
		rctx, cancel := context.WithTimeout(ctx, timeout)
		f, sinkErr = w.figures.TargetFigures(rctx)
		cancel()
		if sinkErr != nil && ctx.Err() != nil {
			// Cut by the run's end: not the target's failure, and no
			// figures of the sink. The process's, which take no time,
			// are still read: a run shorter than the sink's slowest
			// answer keeps the target's RSS. A reading that came back
			// whole counts, however late in the run.
			if w.proc == nil {
				return
			}
			sinkErr = nil
		} else {
			sinkRead = sinkErr == nil
			w.logSink(sinkErr, timeout, last)
		}
	}
	var pr procReading
	if w.proc != nil {
		pr = w.proc.read()
	}
	acked := w.acknowledged()

	w.mu.Lock()
	defer w.mu.Unlock()
	st := &w.st
	st.readings++
	if sinkErr != nil {
		st.errors++
		st.lastError = w.scrub(sinkErr.Error())
	}
	if sinkRead || pr.ok {
		if st.firstAt.IsZero() {
			st.firstAt = at
		}
		st.lastAt = at
	}
	if sinkRead {
		addKinds(st.memory, f.Memory, at)
		addKinds(st.storage, f.Storage, at)
		addKinds(st.stats, f.Stats, at)
		w.sayLosses(st)
		w.sayRestart(st, f.Instance, at)
		// A total only of the kinds summed: a reading with none of them
		// (the table and index sizes refused, the database's and the
		// WAL's read) has no total, not one of 0 B.
		var total float64
		summed := false
		for k, v := range f.Storage {
			if !notSummed[k] {
				total += v
				summed = true
			}
		}
		if summed {
			st.storageTotal = st.storageTotal.add(total, at)
			st.acknowledged = acked
			// A total of 0 B under values acknowledged is no figure per
			// value: the target holds them where the summed kinds do not
			// count (Prometheus in its head and WAL until it cuts a block),
			// and "0 B a value" would pass any threshold on it.
			st.perValue, st.hasPerValue = total/acked, w.counted != "" && acked > 0 && total > 0
		} else if st.storageTotal != nil {
			st.storageTotal.current, st.hasPerValue = false, false
		}
		// The sink's reasons replace the last reading's; the watch's own
		// stay.
		for k := range st.unavailable {
			if k != unavailableSink && k != unavailableProcess {
				delete(st.unavailable, k)
			}
		}
		for k, why := range f.Unavailable {
			st.unavailable[k] = w.why(why)
		}
	}
	switch {
	case pr.ok:
		st.rss = st.rss.add(pr.p.RSS, at)
		st.pid = pr.p.Pid
		delete(st.unavailable, unavailableProcess)
	case w.proc != nil:
		if st.rss != nil {
			st.rss.current = false
		}
		st.pid = 0
		st.unavailable[unavailableProcess] = pr.why
	}
	// The target's own CPU time when it gives one, else its process's.
	switch {
	case sinkRead && f.HasCPU:
		st.addCPU(f.CPUSeconds, at, "target")
	case pr.ok:
		st.addCPU(pr.p.CPUSeconds, at, "process")
	case st.cpu != nil && (sinkRead || w.figures == nil):
		st.cpu.current = false
	}
	if sinkRead {
		for k, why := range f.Unavailable {
			if w.said.First(w.log, w.target+"\x00"+k+"\x00"+why) {
				w.log.Info("a figure of the target is not available", zap.String("figure", k), zap.String("why", w.why(why)))
			}
		}
	}
}

// why is a sink's reason for a figure not read as /status, the summary and
// the log show it: the settings it names as SOAKD_<W>_X (a sink does not
// know the workload's prefix) named as this workload's, and the workload's
// secrets hidden (a server's words may quote them).
func (w *watch) why(s string) string {
	return w.scrub(strings.ReplaceAll(s, "SOAKD_<W>_", w.prefix))
}

// lossWarnings are the target's counts of what it acknowledged and no
// longer holds, and what soakd says, once a run, when one rises since
// the first reading: soakd counts those writes as acknowledged, and
// nothing else tells (a KV workload's reads of evicted keys fail as
// empty, but a load alone reads nothing).
var lossWarnings = []struct{ stat, msg string }{
	{sinks.StatDiscarded, "the target discards values it answers as written: acknowledged counts overstate what it holds " +
		"(its own count, other writers' values too; by_reason says why, e.g. VictoriaMetrics' small_timestamp or big_timestamp: " +
		"older than its -retentionPeriod, from a START long ago, or more than 2 days ahead, from a simulated CLOCK; too_many_labels: " +
		"-maxLabelsPerTimeseries; invalid_TYPE: lines it could not parse, sent to the wrong path)"},
	{sinks.StatEvictions, "the target evicts keys to stay under its memory limit: records acknowledged are gone, and reads of them fail as empty " +
		"(Redis: maxmemory with an eviction policy; raise maxmemory, set maxmemory-policy noeviction to have writes refused instead, or lower RECORDS)"},
	{sinks.StatFlushes, "the target was emptied during the run (Redis: FLUSHALL or FLUSHDB called, by another client; FLUSHDB of another database leaves soakd's keys): " +
		"records acknowledged before are gone, and reads of them fail as empty (find who flushes it, or give soakd a target of its own)"},
}

// sayLosses warns of each of lossWarnings' counts that rose since the
// first reading, once a run, with the reasons the target gives.
func (w *watch) sayLosses(st *state) {
	for i, lw := range lossWarnings {
		f := st.stats[lw.stat]
		if f == nil || st.saidLoss&(1<<i) != 0 || f.rise <= 0 {
			continue
		}
		st.saidLoss |= 1 << i
		fields := []zap.Field{zap.Float64(lw.stat, f.rise), zap.String("since", f.firstAt.UTC().Format(time.RFC3339))}
		if lw.stat == sinks.StatDiscarded {
			fields = append(fields, zap.Any("by_reason", st.discardedBy()))
		}
		w.log.Warn(lw.msg, fields...)
	}
}

// restartWarning is what soakd says, once a run, when the target's
// server process changed between two readings: soakd counts what it
// wrote before as acknowledged, and a target that keeps its data in
// memory alone starts empty.
const restartWarning = "the target restarted during the run (Redis: its run_id changed; of a cluster or behind sentinels, a master's, " +
	"also by a failover, which loses the writes not yet replicated): " +
	"what it held in memory alone is gone, records acknowledged before the restart among it, and reads of them fail as empty " +
	"(give it persistence, appendonly yes, or find why it restarted; soakd verify lists the records lost)"

// sayRestart counts a reading whose instance is another than the
// reading before's, and warns of the first of the run.
func (w *watch) sayRestart(st *state, instance string, at time.Time) {
	if instance == "" {
		return // the sink cannot tell: no change to see
	}
	prev := st.instance
	st.instance = instance
	if prev == "" || prev == instance {
		return
	}
	st.restarts++
	st.lastRestart = at
	if st.restarts == 1 {
		w.log.Warn(restartWarning, zap.String("seen", at.UTC().Format(time.RFC3339)))
	}
}

// discardedBy is the rise of the target's discarded count since the
// first reading by its reason, those that rose; nil when none did.
func (st *state) discardedBy() map[string]float64 {
	var by map[string]float64
	for k, f := range st.stats {
		reason, ok := strings.CutPrefix(k, sinks.StatDiscarded+".")
		if !ok || f.rise <= 0 {
			continue
		}
		if by == nil {
			by = map[string]float64{}
		}
		by[reason] = f.rise
	}
	return by
}

// addCPU adds a reading of the CPU time, from the target or its process.
func (st *state) addCPU(v float64, at time.Time, from string) {
	if st.cpu != nil {
		d := v - st.cpu.last
		if d < 0 {
			d = v // a restart: its counter started again from 0
		}
		st.cpuUsed += d
	}
	st.cpu, st.cpuFrom = st.cpu.add(v, at), from
}

// addKinds adds a reading's figures by kind to figs; a kind the reading
// leaves out is no longer current.
func addKinds(figs map[string]*figure, read map[string]float64, at time.Time) {
	for k, f := range figs {
		if _, ok := read[k]; !ok {
			f.current = false
		}
	}
	for k, v := range read {
		figs[k] = figs[k].add(v, at)
	}
}

// logSink logs the first of a run of failed readings, and the reading
// that ends it: a target down for an hour is two lines, not one per
// interval. last says err is of the reading at the workload's end, which
// waited at most timeout.
func (w *watch) logSink(err error, timeout time.Duration, last bool) {
	switch {
	case err != nil && !w.failing && last:
		w.failing = true
		w.log.Warn("cannot take the last reading of the target's own figures, at the workload's end: its figures are those of the reading before",
			zap.String("error", w.scrub(err.Error())), zap.Duration("waited", timeout))
	case err != nil && !w.failing:
		w.failing = true
		w.log.Warn("cannot read the target's own figures; the run goes on, and this is not logged again until a reading succeeds",
			zap.String("error", w.scrub(err.Error())), zap.Duration("every", w.interval))
	case err == nil && w.failing:
		w.failing = false
		w.log.Info("the target's own figures can be read again")
	}
}

// acknowledged is what storage is divided by: the field values (series)
// or the records inserted (KV: the insert operations acknowledged, of the
// load phase and of the run) acknowledged so far.
func (w *watch) acknowledged() float64 {
	switch w.counted {
	case "values":
		return float64(readmodel.Totals(w.h).Values)
	case "records":
		return float64(readmodel.Totals(w.h).Op(sources.OpInsert.String()).OK)
	}
	return 0
}
