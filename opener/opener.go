// Package opener is how a workload meets its target, the one way the
// engine and every command (soakd run, capacity, sweep and verify) do it:
// its source built and its sink opened, with errors that name the setting
// at fault and hold none of the workload's secrets (Open, Sink); batches
// that would not fit in memory refused before anything runs
// (CheckMemory); and the wait for the target before the first phase —
// connect, prepare, probe, START_TIMEOUT — with the readiness /readyz,
// /status and the summary show of it (Target). It sits below the engine,
// which opens each workload through it, and below the features and
// commands, which share it.
package opener

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Opened is a workload's source and sink, opened the one way every
// command opens them.
type Opened struct {
	Entry  *sources.Entry
	Source sources.Source
	Sink   sinks.Sink
}

// Open builds w's source and opens its sink for workers workers writing
// batches of batch units; log is the sink's logger (nil: none). Errors
// name the setting at fault (SOAKD_<W>_SOURCE, SOAKD_<W>_TARGET) and hold
// none of w's secrets.
func Open(ctx context.Context, p *config.Plugins, w *config.Workload, workers, batch int, log *zap.Logger) (*Opened, error) {
	e, src, err := Source(p, w)
	if err != nil {
		return nil, err
	}
	sink, err := Sink(ctx, p, w, e.Kind, src, workers, batch, log)
	if err != nil {
		return nil, err
	}
	return &Opened{Entry: e, Source: src, Sink: sink}, nil
}

// Source builds w's source; its errors name SOAKD_<W>_SOURCE and hold
// none of w's secrets.
func Source(p *config.Plugins, w *config.Workload) (*sources.Entry, sources.Source, error) {
	e := p.Sources.Lookup(w.Source)
	if e == nil {
		return nil, nil, fmt.Errorf("%sSOURCE: unknown source %q", config.Prefix(w.Name), w.Source)
	}
	src, err := w.NewSource()
	if err != nil {
		return nil, nil, Scrubbed(w, fmt.Errorf("%sSOURCE: cannot build source %q: %w", config.Prefix(w.Name), w.Source, err))
	}
	return e, src, nil
}

// Sink opens w's sink for src, for workers workers writing batches of
// batch units; log is the sink's logger (nil: none). Its errors name
// SOAKD_<W>_TARGET and hold none of w's secrets.
func Sink(ctx context.Context, p *config.Plugins, w *config.Workload, kind sources.Kind, src sources.Source, workers, batch int, log *zap.Logger) (sinks.Sink, error) {
	if w.Sink.URL == nil {
		return nil, fmt.Errorf("%sTARGET: the configuration was not validated (call Config.Check first)", config.Prefix(w.Name))
	}
	if log == nil {
		log = zap.NewNop()
	}
	password, token := w.Secret()
	var shape sources.KVShape
	if sh, ok := src.(sources.Shaped); ok {
		shape = sh.Shape()
	}
	var churn *sources.QueryChurn
	if qc, ok := src.(sources.QueryChurner); ok {
		churn = qc.QueryChurn()
	}
	sink, err := p.Sinks.OpenTarget(ctx, w.Sink, sinks.Options{
		Workload: w.Name, Kind: kind, Schemas: src.Schemas(), Workers: workers,
		BatchSize: batch, Logger: log.With(zap.String("sink", w.Sink.Scheme())),
		Password: password, Token: token, Shape: shape, Churn: churn,
	})
	if err != nil {
		if w.Builtin {
			// The in-process target, not a setting: it could not start.
			return nil, Scrubbed(w, fmt.Errorf("%sTARGET: %w", config.Prefix(w.Name), err))
		}
		// Opening does no I/O: what it refuses is the configuration
		// (credentials given two ways, a password without a user, a
		// schema the target cannot name), exit 2 as at the config check,
		// not a run that failed.
		return nil, Scrubbed(w, &settings.Error{Key: config.Prefix(w.Name) + "TARGET", Err: err})
	}
	if err := checkResolution(w, src, sink); err != nil {
		_ = sink.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return sink, nil
}

// checkResolution refuses a source whose readings of one device are
// closer together (INTERVAL) than the times the target keeps apart
// (InfluxDB's precision=s, remote write's milliseconds, PostgreSQL's
// microseconds): the target would store a device's readings at one time,
// keeping one of them, though it acknowledged every one.
//
// Under CLOCK=wall a device's rows are as far apart as the rate makes
// them, and the rounds of devices one batch holds share its intended
// time: the source is told to keep a device's rows res apart, and a rate
// that would make them closer than that (more than SCALE rows per res,
// RATE=max) is refused, naming RATE, for the rows' times would then run
// ahead of the clock.
func checkResolution(w *config.Workload, src sources.Source, sink sinks.Sink) error {
	r, ok := sink.(interface{ Resolution() time.Duration })
	if !ok {
		return nil
	}
	res := r.Resolution()
	if ws, ok := src.(sources.WallStamped); ok && res > 0 {
		if wall, devices := ws.WallClock(); wall {
			ws.KeepApart(res)
			if peak := w.Rate.Peak(); res > time.Microsecond && peak*res.Seconds() > float64(devices) {
				p := config.Prefix(w.Name)
				return &settings.Error{Key: p + "RATE", Err: fmt.Errorf(
					"%s under %sCLOCK=wall writes each of the %d devices more often than once in %s, the times the target %s keeps: a device's rows would share a time, or be stamped ahead of the clock to keep them apart; "+
						"set %sRATE to at most %g, %sSCALE higher, have the target keep finer times (influx and file: precision=), or %sCLOCK=simulated",
					w.Rate, p, devices, res, w.Sink.Redacted, p, float64(devices)/res.Seconds(), p, p)}
			}
		}
	}
	sp, ok := src.(sources.Spaced)
	if !ok {
		return nil
	}
	iv := sp.Interval()
	if res <= 0 || iv >= res {
		return nil
	}
	p := config.Prefix(w.Name)
	return &settings.Error{Key: p + "INTERVAL", Err: fmt.Errorf(
		"%s is finer than the times the target %s keeps (%s): a device's readings would share a time and the target would keep one of them, though it acknowledged every one; set %sINTERVAL to %s or more, or have the target keep finer times (influx and file: precision=)",
		iv, w.Sink.Redacted, res, p, res)}
}

// scrubbedError is an error whose text has w's secrets hidden; errors.Is
// and errors.As still see what it wraps.
type scrubbedError struct {
	text string
	err  error
}

func (e *scrubbedError) Error() string { return e.text }
func (e *scrubbedError) Unwrap() error { return e.err }

// Scrubbed is err with w's secrets hidden from its text.
func Scrubbed(w *config.Workload, err error) error {
	return &scrubbedError{text: w.Scrubber()(err.Error()), err: err}
}
