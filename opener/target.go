package opener

// A workload's wait for its target before its first phase: each setup
// step (connect, prepare, the load phase's probe) tried until the target
// answers, waited for with backoff while it is down, refused as a
// configuration error when it answers no, bounded by START_TIMEOUT; and
// the readiness /readyz, /status and the summary show of it.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/backoff"
	"github.com/soakd/soakd/internal/logthrottle"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// NotReadyMessage is the warning logged, throttled, while a workload waits
// for a target that is not up yet: a caller that silences a run's log
// (soakd sweep) keeps it, or the wait would pass without a word.
const NotReadyMessage = "target not ready; retrying"

// Target is a workload's readiness and the story of its setup: what
// /readyz, /status and the summary say of it. Init it before use.
type Target struct {
	cfg    *config.Workload
	log    *zap.Logger
	scrub  func(string) string
	errLog *logthrottle.Throttle

	mu       sync.Mutex
	prepared bool // every setup step done
	pingErr  error
	attempts int                 // setup attempts that failed
	lastErr  report.ErrorSummary // the last of them
	fatal    error               // why the workload stopped for good, if it did
	began    time.Time           // first setup attempt (START_TIMEOUT counts from it)
	step     string              // the setup step being tried or waited for
	next     time.Time           // when it is tried again (zero while it runs)
	// stoppedBy is why the run stopped while the workload waited for its
	// target, "" when it did not.
	stoppedBy string
}

// Init sets the workload w whose target t waits for, the logger of its
// setup and the scrubber of its secrets.
func (w *Target) Init(cfg *config.Workload, log *zap.Logger, scrub func(string) string) {
	w.cfg, w.log, w.scrub, w.errLog = cfg, log, scrub, logthrottle.New(10*time.Second)
}

// Ready reports whether the target is prepared and answers its ping.
func (w *Target) Ready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prepared && w.pingErr == nil
}

// Prepared reports whether every setup step is done.
func (w *Target) Prepared() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prepared
}

// Pinged notes the answer of a readiness ping after setup.
func (w *Target) Pinged(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pingErr = err
}

// Fail notes why the workload stopped for good.
func (w *Target) Fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fatal = err
}

// Stopped notes that the run stopped, for reason, while the workload
// waited for its target.
func (w *Target) Stopped(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stoppedBy = reason
}

// Outcome is how the setup ended, for the summary (report.Conclude;
// WriteError and StoppedBySignal are the engine's to fill), and why the
// run stopped while the workload waited, if it did.
func (w *Target) Outcome() (s report.Setup, stoppedBy string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s = report.Setup{Prepared: w.prepared, Attempts: w.attempts, SetupError: w.lastErr, Fatal: w.fatal != nil}
	if w.fatal != nil {
		s.FatalReason = w.scrub(w.fatal.Error())
	}
	return s, w.stoppedBy
}

// Setup steps: what a workload does with its target before its first
// phase, each through await, so that a target that is not up yet (a
// database starting after its sidecar) delays the run instead of ending
// it.
const (
	StepConnect = "connect"                  // the sink's Ping
	StepPrepare = "prepare"                  // schema, database, bucket; query workloads' time range
	StepProbe   = "check for loaded records" // kv LOAD=auto/on: the records' presence and type
)

// Bounds of one setup attempt: a target that swallows packets must not
// hold a step for the kernel's minutes of SYN retries. Prepare has none:
// DDL may wait for a lock, and a query workload's first time-range query
// may scan a large table.
const (
	connectAttemptTimeout = 10 * time.Second
	ProbeAttemptTimeout   = 30 * time.Second
)

// Backoff between setup attempts: 1 s doubling up to 5 s, ±20 % jitter
// (backoff's), so that many sidecars started at once do not knock in step.
const setupBackoff = time.Second

// TimeoutError is a workload whose target did not come up within
// START_TIMEOUT: the run fails (exit 1) and stops.
type TimeoutError struct {
	workload, target, setting string
	after                     time.Duration
	step, last                string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("workload %s: the target %s was not up within %s=%v (%s: %s)", e.workload, e.target, e.setting, e.after, e.step, e.last)
}

// Start marks the start of the workload's setup: START_TIMEOUT counts
// from here.
func (w *Target) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.began.IsZero() {
		w.began = time.Now()
	}
}

// Done marks the target ready: /readyz and soakd_ready follow the
// readiness pings from now on.
func (w *Target) Done() {
	w.mu.Lock()
	w.prepared, w.pingErr, w.step, w.next = true, nil, "", time.Time{}
	took := time.Since(w.began)
	w.mu.Unlock()
	w.log.Info("target ready", zap.String("target", w.cfg.Sink.Redacted), zap.Duration("took", took))
}

// Await runs one setup step until it succeeds. A target that does not
// answer (connection refused or reset, timeout, unknown host) or answers
// that it cannot serve yet (starting up, busy) is waited for: retried with
// capped exponential backoff and jitter, /readyz saying why, until it
// answers, the run is stopped (ctx; then await returns ctx's error) or
// START_TIMEOUT passes. A target that answers and refuses (wrong
// password, unknown database, permission denied, a table of another
// shape, records of another DATA_TYPE) is a configuration error naming
// the setting: waiting would not fix it.
func (w *Target) Await(ctx context.Context, step string, limit time.Duration, fn func(context.Context) error) error {
	w.Start()
	for attempt := 0; ; attempt++ {
		w.mu.Lock()
		w.step, w.next = step, time.Time{}
		w.mu.Unlock()
		t0 := time.Now()
		actx, cancel := ctx, context.CancelFunc(func() {})
		if limit > 0 {
			actx, cancel = context.WithTimeout(ctx, limit)
		}
		if to := w.cfg.StartTimeout; to > 0 {
			// No attempt outlasts START_TIMEOUT by more than a second: a
			// DDL stuck behind a lock would otherwise hold the wait past
			// its bound. The second lets the last attempt, made when
			// START_TIMEOUT is reached, tell what the target answers.
			w.mu.Lock()
			end := w.began.Add(to)
			w.mu.Unlock()
			if floor := t0.Add(time.Second); end.Before(floor) {
				end = floor
			}
			outer := cancel
			var inner context.CancelFunc
			actx, inner = context.WithDeadline(actx, end)
			cancel = func() { inner(); outer() }
		}
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err() // stopped while waiting: not the target's failure
		}
		var se *sources.SettingError
		if errors.As(err, &se) {
			// The target holds what this workload's settings cannot use.
			return errors.Join(config.PrefixSettingErrors(err, config.Prefix(w.cfg.Name))...)
		}
		class := sinks.ClassOf(err)
		text := w.scrub(err.Error())
		now := time.Now()
		w.mu.Lock()
		w.pingErr = err
		w.attempts++
		if w.lastErr.First.IsZero() {
			w.lastErr.First = t0
		}
		w.lastErr.Text, w.lastErr.Class, w.lastErr.Last = text, string(class), now
		began := w.began
		w.mu.Unlock()
		if class == sinks.Rejected {
			return w.refused(step, text, err)
		}
		_, after := sinks.Retryable(err)
		delay := backoff.Delay(setupBackoff, attempt, after)
		if to := w.cfg.StartTimeout; to > 0 {
			left := began.Add(to).Sub(now)
			if left <= 0 {
				return &TimeoutError{workload: w.cfg.Name, target: w.cfg.Sink.Redacted, setting: config.Prefix(w.cfg.Name) + "START_TIMEOUT",
					after: to, step: step, last: text}
			}
			// One last attempt when START_TIMEOUT is reached.
			delay = min(delay, left)
		}
		w.mu.Lock()
		w.next = now.Add(delay)
		w.mu.Unlock()
		if n, ok := w.errLog.Allow("setup"); ok {
			w.log.Warn(NotReadyMessage, zap.String("target", w.cfg.Sink.Redacted), zap.String("step", step),
				zap.String("class", string(class)), zap.String("error", text), zap.Int("attempt", attempt+1),
				zap.Duration("next_retry_in", delay.Round(time.Millisecond)), zap.Int("suppressed_since_last", n))
		}
		if !backoff.Sleep(ctx, delay) {
			return ctx.Err()
		}
	}
}

// refused is the configuration error of a target that answered a setup
// step with a refusal.
// A refusal of a TLS certificate gets a hint naming the URL's certificate
// files; a protocol mismatch's text already says what to change.
func (w *Target) refused(step, text string, err error) error {
	p := config.Prefix(w.cfg.Name)
	hint := fmt.Sprintf(" (check the target URL's database, or its path for an HTTP target, and user, and the credentials: the URL's, %sPASSWORD or %sTOKEN, or their _FILE)", p, p)
	switch {
	case sinks.IsProtocolMismatch(err):
		hint = ""
	case sinks.TLSRefused(err):
		hint = " (a TLS certificate does not verify: fix the CA or certificate files the target URL names, or the host it connects to)"
	case strings.Contains(text, sinks.AuthFailed):
		hint = "" // the text already names the settings that hold the password
	case w.cfg.Sink.URL != nil && w.cfg.Sink.URL.Scheme == "file":
		hint = "" // a path, not a server: the text names it and the OS error
	case step != StepConnect:
		// Connected: the credentials were taken. What the target
		// holds, or what the user may do, is at fault: the text says.
		hint = " (the target was reached: check what it already holds where this workload writes, and what the target URL's user may do there)"
	}
	return &settings.Error{Key: p + "TARGET", Err: fmt.Errorf("%s refused %q: %s%s", w.cfg.Sink.Redacted, step, text, hint)}
}

// Setup connects to the target (sink) and prepares it (schema,
// database), each step waited for while the target is down.
func (w *Target) Setup(ctx context.Context, sink sinks.Sink) error {
	w.Start() // also for a target with no step to wait for: "took" counts from here
	if p, ok := sink.(sinks.Pinger); ok {
		if err := w.Await(ctx, StepConnect, connectAttemptTimeout, p.Ping); err != nil {
			return err
		}
	}
	if p, ok := sink.(sinks.Preparer); ok {
		t0 := time.Now()
		if err := w.Await(ctx, StepPrepare, 0, p.Prepare); err != nil {
			return err
		}
		w.log.Info("target prepared", zap.Duration("took", time.Since(t0)))
	}
	return nil
}

// NotReady says why the workload is not ready, for /readyz: "" when it
// is.
func (w *Target) NotReady() string {
	r := w
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.fatal != nil:
		return w.cfg.Name + ": failed: " + w.scrub(r.fatal.Error())
	case r.prepared && r.pingErr == nil:
		return ""
	case r.prepared:
		return fmt.Sprintf("%s: %s error: %s: %s", w.cfg.Name, sinks.ClassOf(r.pingErr), w.cfg.Sink.Redacted, w.scrub(r.pingErr.Error()))
	case r.step == "":
		return w.cfg.Name + ": not started yet"
	case r.lastErr.Text == "" || r.next.IsZero() && r.attempts == 0:
		return fmt.Sprintf("%s: waiting for %s (%s)", w.cfg.Name, w.cfg.Sink.Redacted, r.step)
	}
	next := "retrying now"
	if !r.next.IsZero() {
		next = "next retry in " + max(time.Until(r.next), 0).Round(100*time.Millisecond).String()
	}
	return fmt.Sprintf("%s: %s error, waiting for %s (%s; %d attempts failed, %s): %s",
		w.cfg.Name, r.lastErr.Class, w.cfg.Sink.Redacted, r.step, r.attempts, next, r.lastErr.Text)
}

// Waiting is what the workload waits for, nil once its setup is done
// (or failed, or was never begun).
func (w *Target) Waiting() *report.StatusWaiting {
	r := w
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prepared || r.step == "" || r.fatal != nil || r.stoppedBy != "" {
		return nil
	}
	s := &report.StatusWaiting{Target: w.cfg.Sink.Redacted, Step: r.step, Seconds: time.Since(r.began).Seconds(), Attempts: r.attempts}
	if !r.next.IsZero() {
		s.NextRetrySeconds = max(time.Until(r.next), 0).Seconds()
	}
	if r.attempts > 0 {
		s.LastError, s.Class = r.lastErr.Text, r.lastErr.Class
	}
	return s
}
