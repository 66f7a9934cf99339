package sinks

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

// Entry registers one sink implementation.
type Entry struct {
	// Schemes are the URL schemes that select this sink (lower case).
	Schemes []string
	// Kinds are the kinds of batches the sink accepts.
	Kinds []sources.Kind
	// Open builds the sink.
	Open OpenFunc
	// Check validates a URL without I/O (optional).
	Check CheckFunc
	// CheckShape validates a URL for a workload whose KV records have the
	// given shape (DATA_TYPE, KEY_PREFIX), without I/O (optional; the
	// zero shape for other workloads): a sink that cannot store a data
	// type refuses it at config check rather than when it opens.
	CheckShape ShapeCheckFunc
	// CheckQueries validates a URL for a query workload that runs the
	// given query types, without I/O (optional): a sink whose query
	// language cannot express a type refuses it at config check.
	CheckQueries QueriesCheckFunc
	// Params are the URL's parameters, which soakd config --sinks lists
	// (optional).
	Params *urlparam.Set
}

// ShapeCheckFunc validates a sink URL for a workload of the given kind
// and record shape, without I/O.
type ShapeCheckFunc func(u *url.URL, kind sources.Kind, shape sources.KVShape) error

// QueriesCheckFunc validates a sink URL for a query workload that runs
// types, without I/O.
type QueriesCheckFunc func(u *url.URL, types []sources.QueryType) error

// Registry maps URL schemes to sinks. It is filled once at startup and read
// concurrently afterwards.
type Registry struct {
	byScheme map[string]*Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byScheme: map[string]*Entry{}} }

// Add registers e. It panics on a duplicate scheme: that is a programming
// error in the one list of sinks.
func (r *Registry) Add(e Entry) {
	if e.Open == nil || len(e.Schemes) == 0 {
		panic("BUG: sinks.Registry.Add: entry without Open or Schemes")
	}
	for _, s := range e.Schemes {
		if _, dup := r.byScheme[s]; dup {
			panic("BUG: sinks.Registry.Add: duplicate scheme " + s)
		}
		r.byScheme[s] = &e
	}
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []string {
	out := make([]string, 0, len(r.byScheme))
	for s := range r.byScheme {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Parse parses a target URL; "-" is shorthand for file://- (standard output).
func Parse(raw string) (*url.URL, error) {
	if raw == "-" {
		raw = "file://-"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", redactErr(err))
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("URL %q has no scheme (want e.g. postgres://, influx://, redis://, null://)", Redact(raw))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return u, nil
}

func (r *Registry) lookup(u *url.URL, kind sources.Kind) (*Entry, error) {
	e, ok := r.byScheme[u.Scheme]
	if !ok {
		return nil, fmt.Errorf("unknown scheme %q (known: %s)", u.Scheme, strings.Join(r.Schemes(), ", "))
	}
	if kind != 0 && !slices.Contains(e.Kinds, kind) {
		return nil, fmt.Errorf("scheme %q does not accept %s workloads", u.Scheme, kind)
	}
	return e, nil
}

// CheckShaped is CheckTarget for a workload whose records have the given
// shape: the entry's Check and then its CheckShape see it.
func (r *Registry) CheckShaped(t Target, kind sources.Kind, shape sources.KVShape) error {
	if err := r.CheckTarget(t, kind); err != nil {
		return err
	}
	e, _ := r.lookup(t.URL, kind) // CheckTarget found it
	if e.CheckShape != nil {
		return e.CheckShape(t.URL, kind, shape)
	}
	return nil
}

// CheckQueries asks t's entry (found by CheckTarget for sources.Queries)
// whether it runs query types types; nil when the entry does not say.
func (r *Registry) CheckQueries(t Target, types []sources.QueryType) error {
	e, err := r.lookup(t.URL, sources.Queries)
	if err != nil || e.CheckQueries == nil {
		return nil // CheckTarget reports a URL it cannot find
	}
	return e.CheckQueries(t.URL, types)
}

// Entries lists the registered sinks once each, in the order of their
// first scheme.
func (r *Registry) Entries() []*Entry {
	var out []*Entry
	for _, s := range r.Schemes() {
		if e := r.byScheme[s]; !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Check validates a raw target URL for a workload of the given kind
// without doing I/O.
func (r *Registry) Check(raw string, kind sources.Kind) error {
	t, err := ParseTarget(raw)
	if err != nil {
		return err
	}
	return r.CheckTarget(t, kind)
}

// Open parses raw and opens the sink registered for its scheme.
func (r *Registry) Open(ctx context.Context, raw string, o Options) (Sink, error) {
	t, err := ParseTarget(raw)
	if err != nil {
		return nil, err
	}
	return r.OpenTarget(ctx, t, o)
}

// Redact returns raw with any password in its user info replaced by
// "xxxxx" and any token/password query parameter hidden, for logs and
// /status. Unparsable input is returned as a fixed placeholder so a secret
// in a malformed URL never leaks.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	if s, changed := redact(u); changed {
		return s
	}
	return raw // unchanged: keep it as the user wrote it
}

// RedactURL is Redact for a parsed URL.
func RedactURL(u *url.URL) string {
	s, _ := redact(u)
	return s
}

func redact(u *url.URL) (string, bool) {
	c := *u
	changed := false
	if c.User != nil {
		if _, has := c.User.Password(); has {
			c.User = url.UserPassword(c.User.Username(), "xxxxx")
			changed = true
		}
	}
	q := c.Query()
	qChanged := false
	for k := range q {
		if SecretParam(k) {
			q.Set(k, "xxxxx")
			qChanged = true
		}
	}
	if qChanged {
		c.RawQuery = q.Encode()
	}
	return c.String(), changed || qChanged
}

// SecretParam reports whether the URL query parameter k holds a secret
// (a password, a token, InfluxDB 1.x's p=, a request header that may
// carry an API key) that Redact hides and no error message may repeat.
func SecretParam(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "password") || strings.Contains(k, "token") || k == "secret" ||
		k == "sslkey" || strings.HasSuffix(k, "secret") ||
		k == "p" || // InfluxDB 1.x: ?u=USER&p=PASSWORD
		k == "header" // remote write: header=X-Api-Key:KEY
}

// redactErr drops the URL text that url.Parse puts in its errors (it may
// hold a password) and keeps the reason, without the escape a malformed
// one quotes.
func redactErr(err error) error {
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	return urlparam.HideEscape(err)
}
