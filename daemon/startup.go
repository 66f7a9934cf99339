package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Setup steps: what a workload does with its target before its first
// phase, each through await, so that a target that is not up yet (a
// database starting after its sidecar) delays the run instead of ending
// it.
const (
	stepConnect = "connect"                  // the sink's Ping
	stepPrepare = "prepare"                  // schema, database, bucket; query workloads' time range
	stepProbe   = "check for loaded records" // kv LOAD=auto/on: the records' presence and type
)

// Bounds of one setup attempt: a target that swallows packets must not
// hold a step for the kernel's minutes of SYN retries. Prepare has none:
// DDL may wait for a lock, and a query workload's first time-range query
// may scan a large table.
const (
	connectAttemptTimeout = 10 * time.Second
	probeAttemptTimeout   = 30 * time.Second
)

// Backoff between setup attempts: 1 s doubling up to 5 s, ±20 % jitter
// (backoff's), so that many sidecars started at once do not knock in step.
const setupBackoff = time.Second

// startTimeoutError is a workload whose target did not come up within
// START_TIMEOUT: the run fails (exit 1) and stops.
type startTimeoutError struct {
	workload, target, setting string
	after                     time.Duration
	step, last                string
}

func (e *startTimeoutError) Error() string {
	return fmt.Sprintf("workload %s: the target %s was not up within %s=%v (%s: %s)", e.workload, e.target, e.setting, e.after, e.step, e.last)
}

// setupStart marks the start of the workload's setup: START_TIMEOUT
// counts from here.
func (w *workload) setupStart() {
	w.ready.mu.Lock()
	defer w.ready.mu.Unlock()
	if w.ready.began.IsZero() {
		w.ready.began = time.Now()
	}
}

// setupDone marks the target ready: /readyz and soakd_ready follow the
// readiness pings from now on.
func (w *workload) setupDone() {
	w.ready.mu.Lock()
	w.ready.prepared, w.ready.pingErr, w.ready.step, w.ready.next = true, nil, "", time.Time{}
	took := time.Since(w.ready.began)
	w.ready.mu.Unlock()
	w.log.Info("target ready", zap.String("target", w.cfg.Sink.Redacted), zap.Duration("took", took))
}

// await runs one setup step until it succeeds. A target that does not
// answer (connection refused or reset, timeout, unknown host) or answers
// that it cannot serve yet (starting up, busy) is waited for: retried with
// capped exponential backoff and jitter, /readyz saying why, until it
// answers, the run is stopped (ctx; then await returns ctx's error) or
// START_TIMEOUT passes. A target that answers and refuses (wrong
// password, unknown database, permission denied, a table of another
// shape, records of another DATA_TYPE) is a configuration error naming
// the setting: waiting would not fix it.
func (w *workload) await(ctx context.Context, step string, limit time.Duration, fn func(context.Context) error) error {
	w.setupStart()
	for attempt := 0; ; attempt++ {
		w.ready.mu.Lock()
		w.ready.step, w.ready.next = step, time.Time{}
		w.ready.mu.Unlock()
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
			w.ready.mu.Lock()
			end := w.ready.began.Add(to)
			w.ready.mu.Unlock()
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
			return errors.Join(config.PrefixSettingErrors(err, config.Prefix(w.name))...)
		}
		class := sinks.ClassOf(err)
		text := w.scrub(err.Error())
		now := time.Now()
		w.ready.mu.Lock()
		w.ready.pingErr = err
		w.ready.attempts++
		if w.ready.lastErr.First.IsZero() {
			w.ready.lastErr.First = t0
		}
		w.ready.lastErr.Text, w.ready.lastErr.Class, w.ready.lastErr.Last = text, class, now
		began := w.ready.began
		w.ready.mu.Unlock()
		if class == sinks.Rejected {
			return w.refused(step, text, sinks.TLSRefused(err))
		}
		_, after := sinks.Retryable(err)
		delay := backoff(setupBackoff, attempt, after)
		if to := w.cfg.StartTimeout; to > 0 {
			left := began.Add(to).Sub(now)
			if left <= 0 {
				return &startTimeoutError{workload: w.name, target: w.cfg.Sink.Redacted, setting: config.Prefix(w.name) + "START_TIMEOUT",
					after: to, step: step, last: text}
			}
			// One last attempt when START_TIMEOUT is reached.
			delay = min(delay, left)
		}
		w.ready.mu.Lock()
		w.ready.next = now.Add(delay)
		w.ready.mu.Unlock()
		if n, ok := w.errLog.Allow("setup"); ok {
			w.log.Warn("target not ready; retrying", zap.String("target", w.cfg.Sink.Redacted), zap.String("step", step),
				zap.String("class", string(class)), zap.String("error", text), zap.Int("attempt", attempt+1),
				zap.Duration("next_retry_in", delay.Round(time.Millisecond)), zap.Int("suppressed_since_last", n))
		}
		if !sleepCtx(ctx, delay) {
			return ctx.Err()
		}
	}
}

// refused is the configuration error of a target that answered a setup
// step with a refusal.
// tlsRefused tells that the refusal is of a TLS certificate: the text
// names the URL parameter of the CA file (sslrootcert, ca) or of the
// client certificate.
func (w *workload) refused(step, text string, tlsRefused bool) error {
	p := config.Prefix(w.name)
	hint := fmt.Sprintf(" (check the target URL's database and user, and the credentials: the URL's, %sPASSWORD or %sTOKEN, or their _FILE)", p, p)
	switch {
	case tlsRefused:
		hint = " (a TLS certificate does not verify: fix the CA or certificate files the target URL names, or the host it connects to)"
	case strings.Contains(text, sinks.AuthFailed):
		hint = "" // the text already names the settings that hold the password
	case w.cfg.Sink.URL != nil && w.cfg.Sink.URL.Scheme == "file":
		hint = "" // a path, not a server: the text names it and the OS error
	}
	return &settings.Error{Key: p + "TARGET", Err: fmt.Errorf("%s refused %q: %s%s", w.cfg.Sink.Redacted, step, text, hint)}
}

// setup connects to the target and prepares it (schema, database), each
// step waited for while the target is down.
func (w *workload) setup(ctx context.Context) error {
	w.setupStart() // also for a target with no step to wait for: "took" counts from here
	if p, ok := w.sink.(sinks.Pinger); ok {
		if err := w.await(ctx, stepConnect, connectAttemptTimeout, p.Ping); err != nil {
			return err
		}
	}
	if p, ok := w.sink.(sinks.Preparer); ok {
		t0 := time.Now()
		if err := w.await(ctx, stepPrepare, 0, p.Prepare); err != nil {
			return err
		}
		w.log.Info("target prepared", zap.Duration("took", time.Since(t0)))
	}
	return nil
}

// notReady says why the workload is not ready, for /readyz: "" when it is.
func (w *workload) notReady() string {
	r := &w.ready
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.fatal != nil:
		return w.name + ": failed: " + w.scrub(r.fatal.Error())
	case r.prepared && r.pingErr == nil:
		return ""
	case r.prepared:
		return fmt.Sprintf("%s: %s error: %s: %s", w.name, sinks.ClassOf(r.pingErr), w.cfg.Sink.Redacted, w.scrub(r.pingErr.Error()))
	case r.step == "":
		return w.name + ": not started yet"
	case r.lastErr.Text == "" || r.next.IsZero() && r.attempts == 0:
		return fmt.Sprintf("%s: waiting for %s (%s)", w.name, w.cfg.Sink.Redacted, r.step)
	}
	next := "retrying now"
	if !r.next.IsZero() {
		next = "next retry in " + max(time.Until(r.next), 0).Round(100*time.Millisecond).String()
	}
	return fmt.Sprintf("%s: %s error, waiting for %s (%s; %d attempts failed, %s): %s",
		w.name, r.lastErr.Class, w.cfg.Sink.Redacted, r.step, r.attempts, next, r.lastErr.Text)
}

// waiting is what the workload waits for, nil once its setup is done
// (or failed, or was never begun).
func (w *workload) waiting() *report.StatusWaiting {
	r := &w.ready
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
		s.LastError, s.Class = r.lastErr.Text, string(r.lastErr.Class)
	}
	return s
}
