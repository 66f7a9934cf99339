// Package opener opens a workload's sink the one way the engine and every
// command do, with errors that name the setting at fault and hold none of
// the workload's secrets.
package opener

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

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
		return nil, Scrubbed(w, fmt.Errorf("%sTARGET: %w", config.Prefix(w.Name), err))
	}
	return sink, nil
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
