package sinks

import (
	"context"
	"fmt"
	"net/url"

	"github.com/soakd/soakd/sources"
)

// Target is a sink URL parsed once, as it travels with its workload: the
// registry opens it, and logs, /status and summaries show Redacted.
type Target struct {
	// URL is the parsed URL, secrets included: never log it.
	URL *url.URL
	// Redacted is the URL with its password and secret parameters hidden.
	Redacted string
}

// ParseTarget parses a target URL ("-" is standard output).
func ParseTarget(raw string) (Target, error) {
	u, err := Parse(raw)
	if err != nil {
		return Target{}, err
	}
	t := Target{URL: u, Redacted: raw} // as the user wrote it, unless it holds a secret
	if r, changed := redact(u); changed {
		t.Redacted = r
	}
	return t, nil
}

// Scheme is the URL's scheme, which picks the sink.
func (t Target) Scheme() string { return t.URL.Scheme }

// CheckTarget validates t for a workload of the given kind without doing
// I/O.
func (r *Registry) CheckTarget(t Target, kind sources.Kind) error {
	e, err := r.lookup(t.URL, kind)
	if err != nil {
		return err
	}
	if e.Check != nil {
		return e.Check(t.URL, kind)
	}
	return nil
}

// OpenTarget opens the sink registered for t's scheme.
func (r *Registry) OpenTarget(ctx context.Context, t Target, o Options) (Sink, error) {
	e, err := r.lookup(t.URL, o.Kind)
	if err != nil {
		return nil, err
	}
	s, err := e.Open(ctx, t.URL, o)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s sink: %w", t.Scheme(), err)
	}
	return s, nil
}
