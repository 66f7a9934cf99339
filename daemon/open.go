package daemon

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon/internal/opener"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Opened is a workload's source and sink, opened the one way every
// command opens them (soakd run, capacity, sweep and verify).
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
	e := p.Sources.Lookup(w.Source)
	if e == nil {
		return nil, fmt.Errorf("%sSOURCE: unknown source %q", config.Prefix(w.Name), w.Source)
	}
	src, err := w.NewSource()
	if err != nil {
		return nil, opener.Scrubbed(w, fmt.Errorf("%sSOURCE: cannot build source %q: %w", config.Prefix(w.Name), w.Source, err))
	}
	sink, err := opener.Sink(ctx, p, w, e.Kind, src, workers, batch, log)
	if err != nil {
		return nil, err
	}
	return &Opened{Entry: e, Source: src, Sink: sink}, nil
}
