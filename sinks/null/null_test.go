package null

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

func parse(t testing.TB, s string) (Config, error) {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return ParseURL(u)
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	c, err := parse(t, "null://?latency=1ms..5ms&capacity=50000&stall=1s@10s&slowdown=2ms@30s&fail=0.25&fail_class=timeout")
	if err != nil {
		t.Fatal(err)
	}
	if c.Latency != (Dist{Kind: "uniform", Min: time.Millisecond, Max: 5 * time.Millisecond}) || c.Capacity != 50000 ||
		c.StallFor != time.Second || c.StallAt != 10*time.Second || c.SlowBy != 2*time.Millisecond || c.SlowAt != 30*time.Second ||
		c.Fail != 0.25 || c.FailClass != sinks.Timeout {
		t.Fatalf("parsed %+v", c)
	}
	for in, want := range map[string]string{
		"null://?latency=fast":     `latency "fast"`,
		"null://?latency=5ms..1ms": "MIN <= MAX",
		"null://?latency=exp:-1ms": "exp:MEAN",
		"null://?capacity=0":       "capacity",
		"null://?capacity=NaN":     "capacity",
		"null://?stall=1s":         "DURATION@AFTER",
		"null://?slowdown=2ms":     "DURATION@AFTER",
		"null://?slowdown=0s@1s":   "slowdown",
		"null://?slowdown=1ms@-1s": "slowdown",
		"null://?fail=2":           "fraction",
		"null://?fail_class=slow":  "fail_class",
		"null://?latncy=1ms":       `unknown parameter "latncy"`,
	} {
		if _, err := parse(t, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestWriteModel(t *testing.T) {
	t.Parallel()
	// On the fake clock: the modelled waits are exact, and a loaded machine
	// cannot make an instant write look slow.
	synctest.Test(t, func(t *testing.T) {
		b := &sources.Batch{Ops: make([]sources.KVOp, 100)}
		// 1000 units/s: two writes of 100 units queue behind each other.
		s := New(Config{Capacity: 1000})
		t0 := time.Now()
		for i := 0; i < 3; i++ {
			if _, err := s.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(t0); d != 300*time.Millisecond {
			t.Errorf("3 writes of 100 units at capacity 1000/s took %v, want 300ms", d)
		}
		// A slowdown from 200 ms after the first write on: the writes before
		// are instant, those after take 100 ms longer.
		step := New(Config{SlowAt: 200 * time.Millisecond, SlowBy: 100 * time.Millisecond})
		t0 = time.Now()
		if _, err := step.Write(context.Background(), b); err != nil || time.Since(t0) != 0 {
			t.Fatalf("write before the slowdown: %v, took %v", err, time.Since(t0))
		}
		time.Sleep(250 * time.Millisecond)
		t0 = time.Now()
		if _, err := step.Write(context.Background(), b); err != nil || time.Since(t0) != 100*time.Millisecond {
			t.Fatalf("write after the slowdown: %v, took %v, want 100ms", err, time.Since(t0))
		}
		f := New(Config{Fail: 1, FailClass: sinks.Rejected})
		_, err := f.Write(context.Background(), b)
		if sinks.ClassOf(err) != sinks.Rejected || !errors.Is(err, ErrInjected) {
			t.Errorf("injected failure: %v", err)
		}
		if ok, _ := sinks.Retryable(err); ok {
			t.Error("a rejected write is not retryable")
		}
		slow := New(Config{Latency: Dist{Kind: "fixed", Min: time.Hour}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := slow.Write(ctx, b); sinks.ClassOf(err) != sinks.Timeout {
			t.Errorf("cancelled write: %v, want a timeout", err)
		}
	})
}

// TestWriteCancelled: a write whose context is done fails as a timeout,
// whatever the model, and the modelled server does not count it.
func TestWriteCancelled(t *testing.T) {
	t.Parallel()
	b := &sources.Batch{Ops: make([]sources.KVOp, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []Config{{}, {Capacity: 1e9}, {Latency: Dist{Kind: "fixed"}}, {Fail: 1, FailClass: sinks.Rejected}} {
		s := New(c)
		_, err := s.Write(ctx, b)
		if sinks.ClassOf(err) != sinks.Timeout || !errors.Is(err, context.Canceled) {
			t.Errorf("%+v: cancelled write: %v, want a timeout wrapping context.Canceled", c, err)
		}
		if !s.nextFree.IsZero() {
			t.Errorf("%+v: the cancelled write took the modelled server's capacity", c)
		}
	}
}

// TestConformance runs the sink suite: the null sink stores nothing to
// count and has no network target.
func TestConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Harness{
		Kinds: []sources.Kind{sources.Series, sources.KV},
		Open: func(t *testing.T, _ string, o sinks.Options) sinktest.Target {
			u, _ := url.Parse("null://")
			s, err := Open(context.Background(), u, o)
			if err != nil {
				t.Fatal(err)
			}
			return sinktest.Target{Sink: s}
		},
	})
}

func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, func(t *testing.T, u *url.URL) {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatalf("Check accepts %s, ParseURL does not: %v", u, err)
		}
		if c.Capacity < 0 || c.Fail < 0 || c.Fail > 1 || c.Latency.Min < 0 || c.Latency.Max < c.Latency.Min && c.Latency.Kind == "uniform" {
			t.Fatalf("accepted %s as %+v", u, c)
		}
		_ = c.Latency.Sample()
	}, "null://", "null://?latency=2ms", "null://?latency=1ms..5ms&capacity=5", "null://?stall=1s@2s&fail=0.5",
		"null://?latency=exp:3ms", "null://?latency=..", "null://?stall=@")
}
