package sinks

import (
	"context"
	"net/url"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sources"
)

// Sink persists batches. The engine calls Write from up to Options.Workers
// goroutines at once (one per worker), each with its own batch. Write must
// store every unit of b or return an error, must return promptly when ctx
// is done, and must not keep b or any slice of it after it returns. It
// returns the payload bytes it sent (for soakd_bytes_total), also on error
// when some were sent.
type Sink interface {
	Write(ctx context.Context, b *sources.Batch) (bytes int, err error)
	// Close flushes and releases the sink. It is called once, after every
	// Write has returned.
	Close(ctx context.Context) error
}

// Options carries what a sink needs from the workload besides its URL.
type Options struct {
	// Workload is the name of the workload the sink serves (for logs).
	Workload string
	// Kind is the kind of batches the sink will receive.
	Kind sources.Kind
	// Schemas are the tables of a series source (nil for KV).
	Schemas []*sources.Schema
	// Workers is the number of goroutines that call Write concurrently;
	// connection pools are sized to it.
	Workers int
	// BatchSize is the number of units per batch (rows or pipelined ops).
	BatchSize int
	// Logger is the sink's logger, already named for the workload (see
	// Log).
	Logger *zap.Logger
	// Password and Token are secrets from SOAKD_<W>_PASSWORD(_FILE) and
	// SOAKD_<W>_TOKEN(_FILE); a sink uses them when its URL has none.
	// They must never be logged.
	Password string
	Token    string
	// Shape is how a KV source's records are stored (DATA_TYPE,
	// KEY_PREFIX), from its sources.Shaped; the zero value for sources
	// that have none.
	Shape sources.KVShape
	// Churn is the CHURN of the data set a query workload reads, from
	// its sources.QueryChurner (nil: none): device 0, whose rows a query
	// sink reads the data's range from, is replaced, so the sink follows
	// the devices holding slot 0 (ChurnRange).
	Churn *sources.QueryChurn
}

// Log is Logger (one that logs nothing when it is nil) with the fields
// every line of the sink carries, such as its target with secrets
// redacted.
func (o Options) Log(fields ...zap.Field) *zap.Logger {
	if o.Logger == nil {
		return zap.NewNop()
	}
	return o.Logger.With(fields...)
}

// OpenFunc opens a sink for a parsed URL. It should not do I/O: connecting
// and creating schema belong in Prepare and the first Write, so that a
// target that is down at startup does not stop the daemon.
type OpenFunc func(ctx context.Context, u *url.URL, o Options) (Sink, error)

// CheckFunc validates a sink URL without I/O, for config validation. It
// reports unknown or malformed parameters.
type CheckFunc func(u *url.URL, kind sources.Kind) error
