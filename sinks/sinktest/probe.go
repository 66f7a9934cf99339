package sinktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Probe checks a sinks.Prober: Present finds want of the keys b's
// operations read (b is a source's probe batch, sources.Preloader), and
// sends nothing that fails.
func Probe(t *testing.T, s sinks.Sink, b *sources.Batch, want int) {
	t.Helper()
	n, err := present(t, s, b)
	if err != nil || n != want {
		t.Fatalf("Present = %d of %d keys, %v; want %d", n, len(b.Ops), err, want)
	}
}

// ProbeRefused checks that Present refuses b, whose keys hold records the
// sink's settings cannot use, with a *sources.SettingError naming setting
// and saying each of says. It returns the error for the sink's own
// checks.
func ProbeRefused(t *testing.T, s sinks.Sink, b *sources.Batch, setting string, says ...string) error {
	t.Helper()
	n, err := present(t, s, b)
	var se *sources.SettingError
	if !errors.As(err, &se) || se.Setting != setting {
		t.Fatalf("Present = %d, %v; want a %s setting error", n, err, setting)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error lacks %q: %v", s, err)
		}
	}
	return err
}

func present(t *testing.T, s sinks.Sink, b *sources.Batch) (int, error) {
	t.Helper()
	p, ok := s.(sinks.Prober)
	if !ok {
		t.Fatalf("%T is not a sinks.Prober", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Present(ctx, b)
}
