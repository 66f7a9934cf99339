package daemon

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// ticket is one scheduled batch: its intended start (time since the
// workload started) and how many units it may carry.
type ticket struct {
	due   time.Duration
	units int
}

// schedule is the scheduler's current plan: units due at elapsed e are
// nBase + profile.Count(e − tBase). A control change (new rate, pause,
// resume) replaces it, so the count already sent is never re-planned.
type schedule struct {
	profile  pace.Profile // nil in closed-loop (max) mode
	tBase    time.Duration
	nBase    float64
	paused   bool
	pausedAt time.Duration
}

func (s *schedule) rateAt(e time.Duration) float64 {
	if s.profile == nil || s.paused {
		return 0
	}
	return s.profile.RateAt(e - s.tBase)
}

// controlReq is a run-time change asked through /control.
type controlReq struct {
	rate   *pace.Rate
	pause  bool
	resume bool
	reply  chan error
}

// errClosedLoop is returned when /control asks a closed-loop workload for
// something only open-loop workloads can do.
var errClosedLoop = errors.New("workload runs closed loop (RATE=max); restart it with a numeric rate to control it")

// runner runs one workload: a scheduler goroutine that emits tickets at the
// rate profile's times, and a pool of workers that fill batches from the
// source's streams and write them to the sink.
type runner struct {
	name      string
	cfg       *Workload
	kind      sources.Kind
	src       sources.Source
	sink      sinks.Sink
	log       *zap.Logger
	m         *workloadMetrics
	batchSize int
	errLog    *throttle

	// The schedule's origin: every due time is relative to the start of
	// the current phase (load, then run), read by the reporter and HTTP
	// while workers run, hence atomic. Monotonic offsets from monoBase.
	origin    atomic.Int64
	startWall atomic.Int64 // Unix ns at origin, for row timestamps
	first     atomic.Int64 // origin of the first phase; 0 = not started

	sched    atomic.Pointer[schedule]
	ctl      chan controlReq
	pending  atomic.Int64 // due (ns since origin) of the ticket the scheduler waits to enqueue; -1 = none
	lastLag  atomic.Int64 // lag (ns) of the last ticket a worker took
	dropOnce sync.Once
	finished atomic.Bool

	cur      atomic.Pointer[phaseStats] // the phase running now
	phasesMu sync.Mutex
	phases   []*phaseStats // every phase started, in order
}

// phaseStats are one phase's totals, for /status, progress lines and the
// summary (Prometheus has the same counts per workload, but reading them
// back is awkward and mixes a KV load phase with the run).
type phaseStats struct {
	name  string // load or run
	rate  pace.Rate
	begin time.Duration // mono() at the start
	ended atomic.Int64  // mono() at the end; 0 = running

	acked     atomic.Int64 // units acknowledged
	failedU   atomic.Int64 // units in batches that failed for good
	valuesN   atomic.Int64
	bytesN    atomic.Int64
	scheduled atomic.Int64 // units scheduled (sent to workers or dropped)
	dropped   atomic.Int64
	errCount  [5]atomic.Int64 // failed attempts, by position in sinks.Classes
	rec       [sources.NumOps + 1]struct{ response, service recorder }
}

// elapsed is the phase's running time, to its end or now.
func (ps *phaseStats) elapsed() time.Duration {
	end := time.Duration(ps.ended.Load())
	if end == 0 {
		end = mono()
	}
	return end - ps.begin
}

func (ps *phaseStats) errors() int64 {
	var n int64
	for i := range ps.errCount {
		n += ps.errCount[i].Load()
	}
	return n
}

func classPos(c sinks.Class) int {
	for i, k := range sinks.Classes {
		if k == c {
			return i
		}
	}
	return len(sinks.Classes) - 1
}

func newRunner(cfg *Workload, kind sources.Kind, src sources.Source, sink sinks.Sink, m *workloadMetrics, log *zap.Logger) *runner {
	r := &runner{
		name: cfg.Name, cfg: cfg, kind: kind, src: src, sink: sink, m: m, log: log,
		batchSize: cfg.BatchSize,
		ctl:       make(chan controlReq),
		errLog:    newThrottle(10 * time.Second),
	}
	if kind == sources.KV {
		r.batchSize = cfg.Pipeline
	}
	r.sched.Store(&schedule{})
	r.pending.Store(-1)
	return r
}

// monoBase is the process's monotonic time origin.
var monoBase = time.Now()

// mono is the monotonic time since monoBase, never 0.
func mono() time.Duration { return time.Since(monoBase) + 1 }

// since is the time since the current phase started.
func (r *runner) since() time.Duration { return mono() - time.Duration(r.origin.Load()) }

// started reports whether the workload's first phase has begun.
func (r *runner) started() bool { return r.cur.Load() != nil }

// elapsed is the workload's running time since its first phase began.
func (r *runner) elapsed() time.Duration {
	if f := r.first.Load(); f != 0 {
		return mono() - time.Duration(f)
	}
	return 0
}

// beginPhase starts phase name: now becomes the schedule's origin, the
// rate profile starts from its beginning, and the totals start at zero.
func (r *runner) beginPhase(name string, rate pace.Rate) *phaseStats {
	now := mono()
	ps := &phaseStats{name: name, rate: rate, begin: now}
	r.startWall.Store(time.Now().UnixNano())
	r.origin.Store(int64(now))
	r.first.CompareAndSwap(0, int64(now))
	s := &schedule{}
	if !rate.Max {
		s.profile = r.perShard(rate.Profile)
	}
	r.sched.Store(s)
	r.lastLag.Store(0)
	r.phasesMu.Lock()
	r.phases = append(r.phases, ps)
	r.phasesMu.Unlock()
	r.cur.Store(ps)
	return ps
}

// allPhases returns the phases started so far.
func (r *runner) allPhases() []*phaseStats {
	r.phasesMu.Lock()
	defer r.phasesMu.Unlock()
	return append([]*phaseStats(nil), r.phases...)
}

// perShard scales a rate, which is always the total over every shard, to
// this process's share (SHARD=i/N runs 1/N of it).
func (r *runner) perShard(p pace.Profile) pace.Profile {
	if n := r.cfg.Shard.Count; n > 1 {
		return pace.Scale(p, 1/float64(n))
	}
	return p
}

// phaseRun is the state of one pass over a source: the run itself, or a
// KV load phase before it.
type phaseRun struct {
	st        *phaseStats
	src       sources.Source
	streams   chan sources.Stream // free streams; a worker holds one across Fill and Write
	live      atomic.Int32
	exhausted chan struct{} // closed when every stream has ended
	queue     chan ticket
}

func (r *runner) newPhase(src sources.Source) (*phaseRun, error) {
	n := r.cfg.Workers
	p := &phaseRun{src: src, streams: make(chan sources.Stream, n), exhausted: make(chan struct{})}
	for i := 0; i < n; i++ {
		s, err := src.Stream(i, n)
		if err != nil {
			return nil, err
		}
		p.streams <- s
	}
	p.live.Store(int32(n))
	// Small and bounded: a ticket is two words, and a full queue makes
	// the scheduler fall behind, which MAX_LAG then turns into drops.
	p.queue = make(chan ticket, max(64, 2*n))
	return p, nil
}

// run executes one phase until its source ends, the duration passes, or
// genCtx is done; writes in flight may finish until drainCtx is done.
func (r *runner) run(genCtx, drainCtx context.Context, name string, src sources.Source, rate pace.Rate, duration time.Duration) error {
	p, err := r.newPhase(src)
	if err != nil {
		return err
	}
	p.st = r.beginPhase(name, rate)
	defer func() { p.st.ended.Store(int64(mono())) }()
	closedLoop := rate.Max
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if closedLoop {
				r.closedWorker(genCtx, drainCtx, p, duration)
			} else {
				r.openWorker(drainCtx, p)
			}
		}()
	}
	if !closedLoop {
		r.schedule(genCtx, p, duration)
		close(p.queue)
	}
	wg.Wait()
	return nil
}

// schedule emits tickets at the profile's times on one reused timer until
// the profile ends, the duration passes, every stream ends or ctx is done.
func (r *runner) schedule(ctx context.Context, p *phaseRun, duration time.Duration) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	B := float64(r.batchSize)
	maxLag := r.cfg.MaxLag
	sent := 0.0 // units scheduled so far in this phase (always whole)
	defer r.pending.Store(-1)

	// wait sleeps until elapsed reaches due; false when the schedule must
	// be re-planned (control change) or stopped.
	var ctlReq *controlReq
	wait := func(d time.Duration) (ok bool) {
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
		case <-p.exhausted:
		case c := <-r.ctl:
			ctlReq = &c
		}
		timer.Stop() // since Go 1.23 no stale tick survives Stop
		return false
	}
	for {
		if ctlReq != nil {
			r.applyControl(*ctlReq, sent)
			ctlReq = nil
		}
		if ctx.Err() != nil || isClosed(p.exhausted) {
			return
		}
		s := r.sched.Load()
		now := r.since()
		if duration > 0 && now >= duration {
			return
		}
		if s.paused { // profile is never nil here: closed loop has no scheduler
			limit := time.Duration(math.MaxInt64)
			if duration > 0 {
				limit = duration - now
			}
			if wait(limit) {
				return // duration over while paused
			}
			continue
		}
		units := B
		at, ok := s.profile.At(sent + B - s.nBase)
		if !ok {
			// The profile ends (or its rate is 0 forever): send what is
			// left as a partial batch at the end, then stop.
			end := s.profile.End()
			if end == 0 {
				if wait(time.Duration(math.MaxInt64)) {
					return
				}
				continue
			}
			units = math.Floor(s.nBase+s.profile.Count(end)) - sent
			if units < 1 {
				return
			}
			at = end
		}
		due := s.tBase + at
		if duration > 0 && due > duration {
			if wait(duration - now) {
				return
			}
			continue
		}
		if due > now {
			if !wait(due - now) {
				continue
			}
			now = r.since()
		}
		if late := now - due; late > maxLag {
			// Drop in bulk every batch already later than MAX_LAG: the
			// scheduler catches up in O(1) however far behind it is.
			cutoff := math.Floor(s.nBase + s.profile.Count(now-maxLag-s.tBase))
			n := math.Max(units, math.Floor((cutoff-sent)/B)*B)
			sent += n
			p.st.scheduled.Add(int64(n))
			r.drop(p.st, int64(n))
			continue
		}
		r.pending.Store(int64(due))
		select {
		case p.queue <- ticket{due: due, units: int(units)}:
			sent += units
			p.st.scheduled.Add(int64(units))
		case <-ctx.Done():
			return
		case <-p.exhausted:
			return
		case c := <-r.ctl:
			ctlReq = &c
		}
		r.pending.Store(-1)
	}
}

// applyControl changes the plan. sent is the count already scheduled, so
// a new profile starts from now without a burst or a gap.
func (r *runner) applyControl(c controlReq, sent float64) {
	old := r.sched.Load()
	now := r.since()
	next := *old
	var err error
	switch {
	case old.profile == nil:
		err = errClosedLoop
	case c.rate != nil:
		if c.rate.Max {
			err = errors.New("rate max (closed loop) cannot be set at run time")
			break
		}
		next = schedule{profile: r.perShard(c.rate.Profile), tBase: now, nBase: sent, paused: old.paused, pausedAt: now}
	case c.pause:
		if !old.paused {
			next.paused, next.pausedAt = true, now
		}
	case c.resume:
		if old.paused {
			// The profile's clock stops while paused, so a ramp resumes
			// where it was instead of bursting to catch up.
			next.paused = false
			next.tBase += now - old.pausedAt
		}
	}
	if err == nil {
		r.sched.Store(&next)
	}
	c.reply <- err
}

// control asks the scheduler for a change and waits for its answer.
func (r *runner) control(ctx context.Context, c controlReq) error {
	if r.sched.Load().profile == nil {
		return errClosedLoop
	}
	c.reply = make(chan error, 1)
	select {
	case r.ctl <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drop counts n scheduled units as dropped.
func (r *runner) drop(ps *phaseStats, n int64) {
	ps.dropped.Add(n)
	r.m.dropped.Add(float64(n))
	r.dropOnce.Do(func() {
		r.log.Warn("dropping scheduled work: the target or the workers cannot keep up; "+
			"work later than MAX_LAG is counted in soakd_dropped_total (logged once)",
			zap.Duration("max_lag", r.cfg.MaxLag), zap.Int("workers", r.cfg.Workers))
	})
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// worker holds what one worker reuses across batches.
type worker struct {
	st     *phaseStats
	b      *sources.Batch
	wctx   *writeCtx
	counts [sources.NumOps]int64
}

func (r *runner) newWorker(drainCtx context.Context, st *phaseStats, src sources.Source) *worker {
	return &worker{st: st, b: newBatch(src), wctx: newWriteCtx(drainCtx, r.cfg.Timeout)}
}

// newBatch returns an empty batch shaped for src.
func newBatch(src sources.Source) *sources.Batch {
	if bs, ok := src.(sources.Batcher); ok {
		return bs.NewBatch()
	}
	return sources.NewSeriesBatch(src.Schemas())
}

// openWorker takes tickets until the queue is closed.
func (r *runner) openWorker(drainCtx context.Context, p *phaseRun) {
	w := r.newWorker(drainCtx, p.st, p.src)
	defer w.wctx.close()
	maxLag := r.cfg.MaxLag
	for t := range p.queue {
		if drainCtx.Err() != nil {
			p.st.scheduled.Add(-int64(t.units)) // drain the queue without sending
			continue
		}
		lag := r.since() - t.due
		r.lastLag.Store(int64(lag))
		if lag > maxLag {
			r.drop(p.st, int64(t.units))
			continue
		}
		if !r.execute(drainCtx, p, w, t) {
			return
		}
	}
}

// closedWorker sends batch after batch as fast as the target answers
// (RATE=max); the intended start of a batch is when the worker starts it.
func (r *runner) closedWorker(genCtx, drainCtx context.Context, p *phaseRun, duration time.Duration) {
	w := r.newWorker(drainCtx, p.st, p.src)
	defer w.wctx.close()
	for genCtx.Err() == nil && !isClosed(p.exhausted) {
		now := r.since()
		if duration > 0 && now >= duration {
			return
		}
		p.st.scheduled.Add(int64(r.batchSize))
		if !r.execute(drainCtx, p, w, ticket{due: now, units: r.batchSize}) {
			return
		}
	}
}

// execute fills one batch from a free stream and writes it. It returns
// false when the worker should stop (every stream ended, or shutdown).
func (r *runner) execute(ctx context.Context, p *phaseRun, w *worker, t ticket) bool {
	b := w.b
	b.Reset()
	// A stream that ends (or owns no devices at all) before the ticket is
	// full hands over to the next live stream, so no scheduled unit is
	// lost while data remains.
	var held sources.Stream
	for held == nil && b.Len() < t.units {
		var st sources.Stream
		select {
		case st = <-p.streams:
		case <-p.exhausted:
		case <-ctx.Done():
		}
		if st == nil {
			break
		}
		err := st.Fill(b, t.units-b.Len(), r.startWall.Load()+int64(t.due))
		if err == nil {
			held = st
			break
		}
		if !errors.Is(err, sources.ErrDone) {
			r.errLog.log(r.log, "source", "cannot generate a batch; retiring the stream", err)
		}
		if p.live.Add(-1) == 0 {
			close(p.exhausted)
		}
	}
	if b.Len() > 0 {
		r.write(ctx, w, t.due)
	}
	if n := t.units - b.Len(); held == nil && n > 0 {
		// The data set ended inside this ticket: those units never existed.
		w.st.scheduled.Add(-int64(n))
	}
	if held == nil {
		return !isClosed(p.exhausted) && ctx.Err() == nil
	}
	// The stream goes back only after the write, so one device's rows
	// reach the target in time order.
	p.streams <- held
	return true
}

// write sends w.b, retrying when the sink says it is safe, and records the
// outcome. due is the batch's intended start.
func (r *runner) write(ctx context.Context, w *worker, due time.Duration) {
	b := w.b
	kv := r.kind == sources.KV
	if kv {
		w.counts = [sources.NumOps]int64{}
		for i := range b.Ops {
			w.counts[b.Ops[i].Op]++
		}
	}
	for attempt := 0; ; attempt++ {
		sendStart := r.since()
		w.wctx.arm()
		r.m.inflight.Inc()
		n, err := r.sink.Write(w.wctx, b)
		r.m.inflight.Dec()
		w.wctx.disarm()
		done := r.since()
		if n > 0 {
			r.m.bytes.Add(float64(n))
			w.st.bytesN.Add(int64(n))
		}
		if err == nil {
			r.succeeded(w, done-due, done-sendStart)
			return
		}
		class := sinks.ClassOf(err)
		if class == sinks.Other && errors.Is(w.wctx.Err(), context.DeadlineExceeded) {
			class = sinks.Timeout
		}
		r.failed(w, class, false)
		r.errLog.log(r.log, string(class), "write failed", err)
		retry, after := sinks.Retryable(err)
		if !retry || attempt >= r.cfg.Retries || ctx.Err() != nil {
			r.failed(w, class, true)
			if n := min(sinks.Stored(err), b.Len()); n > 0 {
				// A partial write: count what the target kept.
				w.st.acked.Add(int64(n))
				w.st.failedU.Add(-int64(n))
				if !kv {
					r.m.rows.Add(float64(n))
				}
			}
			return
		}
		if !sleepCtx(ctx, backoff(r.cfg.RetryBackoff, attempt, after)) {
			r.failed(w, class, true)
			return
		}
	}
}

// succeeded counts an acknowledged batch and records its latencies.
func (r *runner) succeeded(w *worker, response, service time.Duration) {
	b := w.b
	w.st.acked.Add(int64(b.Len()))
	if r.kind != sources.KV {
		w.st.valuesN.Add(int64(b.NumValues))
		om := r.m.ops[writeOp]
		om.ok.Inc()
		om.response.Observe(response.Seconds())
		om.service.Observe(service.Seconds())
		r.m.rows.Add(float64(b.Len()))
		r.m.values.Add(float64(b.NumValues))
		rec := &w.st.rec[writeOp]
		rec.response.record(response, 1)
		rec.service.record(service, 1)
		return
	}
	rs, ss := response.Seconds(), service.Seconds()
	for op, c := range w.counts {
		if c == 0 {
			continue
		}
		om := r.m.ops[op]
		om.ok.Add(float64(c))
		for i := int64(0); i < c; i++ {
			om.response.Observe(rs)
			om.service.Observe(ss)
		}
		w.st.rec[op].response.record(response, c)
		w.st.rec[op].service.record(service, c)
	}
}

// failed counts a failed attempt by class, or (final) the batch's units
// as failed operations.
func (r *runner) failed(w *worker, class sinks.Class, final bool) {
	if final {
		w.st.failedU.Add(int64(w.b.Len()))
	} else {
		w.st.errCount[classPos(class)].Add(1)
	}
	if r.kind != sources.KV {
		om := r.m.ops[writeOp]
		if final {
			om.failed.Inc()
		} else {
			om.errors[class].Inc()
		}
		return
	}
	for op, c := range w.counts {
		if c == 0 {
			continue
		}
		om := r.m.ops[op]
		if final {
			om.failed.Add(float64(c))
		} else {
			om.errors[class].Add(float64(c))
		}
	}
}

// backoff is the wait before retry attempt+1: base·2^attempt capped at
// 5 s, with ±20 % jitter so workers do not retry in lockstep; a server's
// Retry-After wins when longer.
func backoff(base time.Duration, attempt int, after time.Duration) time.Duration {
	d := base << min(attempt, 16)
	if d > 5*time.Second || d <= 0 {
		d = 5 * time.Second
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(d, after)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// lagNow is how far behind schedule the workload is: the wait of the
// ticket the scheduler cannot hand over, or of the last ticket a worker
// took.
func (r *runner) lagNow() time.Duration {
	lag := time.Duration(r.lastLag.Load())
	if d := r.pending.Load(); d >= 0 {
		lag = max(lag, r.since()-time.Duration(d))
	}
	return max(lag, 0)
}

// throttle limits repeated log lines: the first of each kind, then one per
// period with the number suppressed.
type throttle struct {
	period time.Duration
	mu     sync.Mutex
	last   map[string]time.Time
	count  map[string]int
}

func newThrottle(period time.Duration) *throttle {
	return &throttle{period: period, last: map[string]time.Time{}, count: map[string]int{}}
}

func (t *throttle) log(l *zap.Logger, kind, msg string, err error) {
	t.mu.Lock()
	now := time.Now()
	suppressed := t.count[kind]
	if last, ok := t.last[kind]; ok && now.Sub(last) < t.period {
		t.count[kind]++
		t.mu.Unlock()
		return
	}
	t.last[kind], t.count[kind] = now, 0
	t.mu.Unlock()
	l.Warn(msg, zap.String("class", kind), zap.Error(err), zap.Int("suppressed_since_last", suppressed))
}
