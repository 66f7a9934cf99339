package daemon

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/clock"
	"github.com/soakd/soakd/pace"
)

// ticket is one scheduled batch: its intended start (time since the
// phase started) and how many units it may carry.
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

// planned is the units the plan has due by elapsed e: the rate profile's
// integral. The difference of two over a window is the window's mean
// target rate. The profile's clock stops while paused.
func (s *schedule) planned(e time.Duration) float64 {
	if s.profile == nil {
		return 0
	}
	if s.paused {
		e = min(e, s.pausedAt)
	}
	return s.nBase + s.profile.Count(max(e-s.tBase, 0))
}

// controlReq is a run-time change asked through /control.
type controlReq struct {
	rate   *pace.Rate
	pause  bool
	resume bool
	reply  chan error
	// state is 0 while the request waits, 1 once the scheduler applies
	// it, 2 once its sender gave up: ctl holds a request until a scheduler
	// takes it, which between phases may be after its sender's deadline,
	// and a request reported as failed must not change the plan later.
	state *atomic.Int32
}

// errClosedLoop is returned when /control asks a closed-loop workload for
// something only open-loop workloads can do.
var errClosedLoop = errors.New("workload runs closed loop (RATE=max); restart it with a numeric rate to control it")

// preciseSpan is how long before a due time the scheduler stops waiting on
// a runtime timer (which may wake a millisecond late) and sleeps precisely,
// where it has no alarm (see wait).
const preciseSpan = 2 * time.Millisecond

// maxAlarm is the furthest ahead the scheduler sets its alarm: a longer
// wait wakes once each maxAlarm and sets it again.
const maxAlarm = time.Hour

// schedule emits tickets at the profile's times until the profile ends,
// the duration passes, every stream ends or ctx is done. Every unit it
// releases is counted in the phase's scheduler tally before a worker can
// see it; a ticket it could not hand over is taken back. byDuration says
// whether DURATION had passed when it stopped (not the profile's end,
// even when the writes in flight then drain past DURATION).
func (r *runner) schedule(ctx context.Context, p *phaseRun, duration time.Duration) (byDuration bool) {
	defer func() { byDuration = duration > 0 && r.since() >= duration }()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	B := float64(r.batchSize)
	maxLag := r.cfg.MaxLag
	// slack (SLACK) is the least time between two wake-ups: at high rates
	// each wake-up hands over every ticket due by then. Each wake-up of
	// the scheduler and of a worker costs tens of microseconds of CPU
	// (more in a virtual machine), so a wake-up per ticket at 100,000
	// tickets/s would take a core; the default, 100 µs, keeps it near half
	// of one at the price of at most that much extra lateness.
	slack := r.cfg.Slack
	st := &p.st.sched
	sent := 0.0 // units scheduled so far in this phase (always whole)
	var lastWake time.Duration
	heldOnTime := false // see held below
	defer r.pending.Store(-1)

	// wait sleeps for d; false when the schedule must be re-planned
	// (control change) or stopped. It listens to control, context and
	// source throughout.
	//
	// On Linux it waits for a timerfd alarm set to the due time itself,
	// read by this goroutine through the runtime's network poller: the
	// kernel fires it without timer slack, the thread blocked in the
	// poller wakes and runs the scheduler and then, on the same thread,
	// the worker the ticket went to. Nothing of soakd's is awake between
	// tickets and no thread sits in a system call, so the runtime's
	// monitor sleeps too. A control request, the end of ctx and the end
	// of the data set kick the alarm (Alarm.Kick), and the scheduler
	// looks at all three whenever it wakes. The scheduler is not locked
	// to a thread: a locked one costs two more thread wake-ups per ticket
	// (the poller's thread handing over to it, and it handing the worker
	// to a third), each tens of µs of CPU and of lateness on a VM.
	//
	// Without an alarm (a fake clock, other systems) it waits on a runtime
	// timer until the last preciseSpan, which it sleeps precisely on a
	// locked thread (see precise_linux.go).
	alarm, err := clock.NewAlarm()
	if err != nil {
		alarm = nil
	} else {
		defer alarm.Close()
		r.alarm.Store(alarm)
		defer r.alarm.Store(nil)
		defer context.AfterFunc(ctx, alarm.Kick)()
		// The data set ends in a worker (execute closes p.exhausted).
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-p.exhausted:
				alarm.Kick()
			case <-done:
			}
		}()
	}
	var cpu *clock.CPUMeter // nil (doing nothing) on a locked thread
	if alarm == nil {
		unlock, tcpu := clock.LockPrecise()
		defer unlock()
		cpu0 := tcpu()
		defer func() { p.st.schedCPU.Store(int64(tcpu() - cpu0)) }()
	} else {
		// The scheduler's CPU is summed from wake-up to wait, on
		// whichever thread it ran.
		cpu = new(clock.CPUMeter)
		cpu.Start()
		defer func() { p.st.schedCPU.Store(int64(cpu.Total())) }()
	}
	var ctlReq *controlReq
	ctlHeld := false // ctlReq came while a ticket waited for a busy worker
	// ctlDue is the units the plan had due when ctlReq was heard (NaN
	// until then). Workers free to take them get them before the change
	// applies, as they would have had the request come a moment later:
	// only a backlog the busy workers hold is dropped with it. The count
	// is fixed when the request is heard, so a scheduler that never
	// catches up still applies it.
	ctlDue := math.NaN()
	var ctlAt time.Duration // when ctlReq was heard: the change applies from then
	// A request taken and not yet applied is applied on the way out, so
	// its sender never waits for an answer that does not come.
	defer func() {
		if ctlReq != nil {
			r.applyControl(*ctlReq, sent, st, ctlHeld, r.since())
		}
	}()
	// woken says whether something other than the time woke the
	// scheduler (on an alarm, which hears nothing but its kicks).
	woken := func() bool {
		if ctlReq != nil {
			return true // one waiting to apply: hear no other yet
		}
		select {
		case c := <-r.ctl:
			ctlReq = &c
			return true
		default:
		}
		return ctx.Err() != nil || isClosed(p.exhausted)
	}
	wait := func(d time.Duration) (ok bool) {
		until := mono() + d
		if alarm != nil {
			cpu.Pause()
			defer cpu.Start()
			for {
				if woken() {
					return false
				}
				now := mono()
				left := until - now // right even when until overflowed (d = forever)
				if left <= 0 {
					return true
				}
				// Set again after each wake short of the time: a kick,
				// or the kernel's clock a hair ahead of Mono's reading
				// of it. A wait without end (a pause, a rate of 0) is d =
				// MaxInt64, whose until overflows: the alarm is set at
				// most maxAlarm ahead, from now, and set again when it
				// goes off.
				if !alarm.Wait(now + min(left, maxAlarm)) {
					return false // closed: only on the way out
				}
			}
		}
		for {
			now := mono()
			left := until - now // right even when until overflowed (d = forever)
			if left <= 0 {
				return true
			}
			if left <= preciseSpan {
				clock.SleepUntil(until)
				return true
			}
			if ctlReq != nil {
				return false // one waiting to apply: hear no other yet
			}
			timer.Reset(left - preciseSpan)
			select {
			case <-timer.C:
				continue
			case <-ctx.Done():
			case <-p.exhausted:
			case c := <-r.ctl:
				ctlReq = &c
			}
			timer.Stop() // since Go 1.23 no stale tick survives Stop
			return false
		}
	}
	for {
		if ctlReq != nil {
			s := r.sched.Load()
			if math.IsNaN(ctlDue) {
				ctlAt = r.since()
				e := ctlAt
				if duration > 0 {
					e = min(e, duration)
				}
				ctlDue = s.planned(e)
			}
			handOverFirst := !ctlHeld && s.profile != nil && !s.paused && ctlDue-sent >= B &&
				ctx.Err() == nil && !isClosed(p.exhausted)
			if !handOverFirst {
				sent += r.applyControl(*ctlReq, sent, st, ctlHeld, ctlAt)
				ctlReq, ctlHeld, ctlDue = nil, false, math.NaN()
			}
		}
		if ctx.Err() != nil || isClosed(p.exhausted) {
			return // a request still waiting is applied on the way out
		}
		s := r.sched.Load()
		now := r.since()
		// idle waits while nothing is due (a pause, a rate of 0 without
		// end) for a control change, a stop, or the end of DURATION;
		// true when the phase is over.
		idle := func() bool {
			limit := time.Duration(math.MaxInt64)
			if duration > 0 {
				if limit = duration - now; limit <= 0 {
					return true
				}
			}
			return wait(limit)
		}
		if s.paused { // profile is never nil here: closed loop has no scheduler
			if idle() {
				return
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
				if idle() {
					return
				}
				continue
			}
			units = math.Floor(s.nBase+s.profile.Count(end)) - sent
			if units < 1 {
				// Nothing is left to send, and the profile still runs
				// to its end: a last stage at 0 (a cool-down to watch
				// the target recover) lasts as long as it says.
				left := s.tBase + end - now
				if duration > 0 {
					left = min(left, duration-now)
				}
				if left <= 0 || wait(left) {
					return
				}
				continue
			}
			// The partial batch is due when its last unit is, which
			// can be well before the end (a last stage at 0).
			at = end
			if t, ok := s.profile.At(sent + units - s.nBase); ok {
				at = min(t, end)
			}
		}
		// A unit centuries away (a tiny rate) is at MaxInt64: due must
		// saturate, not wrap to a time long past.
		due := s.tBase + at
		if at > math.MaxInt64-s.tBase {
			due = math.MaxInt64
		}
		if duration > 0 && due > duration {
			// Everything due within the duration has been released, even
			// if the scheduler ran late: the count is the rate's integral.
			if now >= duration || wait(duration-now) {
				return
			}
			continue
		}
		// held: the last ticket was dropped because the queue stayed
		// full, and the scheduler woke on time to drop it. Tickets that
		// came due meanwhile and are late now were held by the busy
		// workers too, not by a scheduler that fell behind.
		held := heldOnTime
		heldOnTime = false
		if due > now {
			// Wake no sooner than slack after the last wake: at high
			// rates each wake hands several tickets over at once, which
			// costs far less CPU than a wake per ticket.
			d := max(due-now, lastWake+slack-now)
			if !wait(d) {
				continue
			}
			now = r.since()
			lastWake = now
		}
		if late := now - due; late > maxLag {
			// Drop in bulk every batch already later than MAX_LAG: the
			// scheduler catches up in O(1) however far behind it is. Only
			// up to DURATION: a scheduler stalled past it (a stopped
			// process, a paused VM) drops what was due within it, the
			// rate's integral, not what an endless profile counts beyond.
			edge := now - maxLag
			if duration > 0 {
				edge = min(edge, duration)
			}
			cutoff := math.Floor(s.nBase + s.profile.Count(edge-s.tBase))
			n := math.Max(units, math.Floor((cutoff-sent)/B)*B)
			sent += n
			st.releaseAndDrop(int64(n), held)
			r.warnDrop()
			continue
		}
		r.pending.Store(int64(due))
		st.release(int64(units))
		tk := ticket{due: due, units: int(units)}
		// Control is heard here too: at high rates the scheduler may
		// never wait long enough to hear it in wait. It is applied once
		// this ticket, due now, is handed over.
		if ctlReq == nil {
			select {
			case c := <-r.ctl:
				ctlReq = &c
			default:
			}
		}
		if p.offer(tk) {
			sent += units
			r.pending.Store(-1)
			continue
		}
		if ctlReq != nil {
			// Every worker is busy: the change does not wait for one,
			// and the ticket, due and not sent, is dropped with it.
			st.release(-int64(units))
			ctlHeld = true
			r.pending.Store(-1)
			continue
		}
		// Every worker is busy and the queue is full. The ticket waits
		// only until it is later than MAX_LAG; then it is dropped and the
		// loop goes on (dropping in bulk what is late by then), so during
		// a stall of the target the count scheduled keeps growing at the
		// rate and the drops are counted as they happen, instead of both
		// freezing until a worker is free.
		timer.Reset(max(due+maxLag-now, 0))
		cpu.Pause()
		select {
		case p.queue <- tk:
			sent += units
			p.unstrand()
		case <-timer.C:
			sent += units
			st.dropWaited(int64(units))
			r.warnDrop()
			heldOnTime = r.since()-(due+maxLag) <= heldTolerance(maxLag)
		case <-ctx.Done():
			st.release(-int64(units))
			return
		case <-p.exhausted:
			st.release(-int64(units))
			return
		case c := <-r.ctl:
			st.release(-int64(units))
			ctlReq, ctlHeld = &c, true
		}
		cpu.Start()
		timer.Stop()
		r.pending.Store(-1)
	}
}

// applyControl changes the plan from now, when the request was heard (the
// units the old plan had due by then were handed over, or are dropped
// when every worker was busy: held). sent is the count already scheduled, so
// a new profile starts from now without a burst or a gap.
//
// A new rate plans from the units sent so far. Whole batches the old plan
// had due by now that were not sent (a ticket waiting for a busy worker)
// are counted scheduled and dropped (in st; held says the scheduler was
// held by a full queue, see dropWaited): the new plan does not send them,
// and a change of rate left them neither scheduled nor dropped. It
// returns how many units it counted so.
func (r *runner) applyControl(c controlReq, sent float64, st *tally, held bool, now time.Duration) (dropped float64) {
	if c.state != nil && !c.state.CompareAndSwap(0, 1) {
		return 0 // its sender gave up
	}
	old := r.sched.Load()
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
		B := float64(r.batchSize)
		if due := math.Floor((old.planned(now)-sent)/B) * B; due > 0 {
			dropped = due
			st.releaseAndDrop(int64(due), held)
			r.warnDrop()
		}
		next = schedule{profile: r.perShard(c.rate.Profile), tBase: now, nBase: sent + dropped, paused: old.paused, pausedAt: now}
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
		if ps := r.cur.Load(); ps != nil && c.rate != nil {
			text := c.rate.String()
			ps.rate.Store(&text)
		}
	}
	c.reply <- err
	return dropped
}

// control asks the scheduler for a change and waits for its answer.
func (r *runner) control(ctx context.Context, c controlReq) error {
	if r.sched.Load().profile == nil {
		return errClosedLoop
	}
	c.reply, c.state = make(chan error, 1), new(atomic.Int32)
	select {
	case r.ctl <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	// A scheduler waiting on its alarm hears the request only when it
	// wakes: kick it, after the request is in (ctl holds one), so it
	// cannot wake, find nothing and wait again. One that starts after
	// the load below finds the request when it first looks.
	if a := r.alarm.Load(); a != nil {
		a.Kick()
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		if c.state.CompareAndSwap(0, 2) {
			return ctx.Err() // never applied
		}
		return <-c.reply // being applied: the answer is on its way
	}
}

// warnDrop logs, once per workload, that work is being dropped.
func (r *runner) warnDrop() {
	r.dropOnce.Do(func() {
		r.log.Warn("dropping scheduled work: the target or the workers cannot keep up; "+
			"work later than MAX_LAG is counted in soakd_dropped_total (logged once)",
			zap.Duration("max_lag", r.cfg.MaxLag), zap.Int("workers", r.cfg.Workers))
	})
}

// heldTolerance is how late the scheduler may wake from its wait on a full
// queue and still have been held by the queue, not by its own lateness
// (its CPU, a starved process): a runtime timer's usual lateness, or a
// twentieth of MAX_LAG when that is more. Work that came due within it is
// dropped in bulk when the scheduler loops, at high rates most of a
// target's stall.
func heldTolerance(maxLag time.Duration) time.Duration {
	return max(2*time.Millisecond, maxLag/20)
}
