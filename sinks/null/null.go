// Package null is a sink that stores nothing. Without parameters it
// measures the generator and engine ceiling; with them it models a target,
// so the engine, capacity search and dashboards can be exercised without a
// database:
//
//	null://                          discard, answer at once
//	null://?latency=2ms              every write takes 2 ms
//	null://?latency=1ms..5ms         uniformly between 1 and 5 ms
//	null://?latency=exp:2ms          exponentially distributed, mean 2 ms
//	null://?capacity=50000           a server that handles 50,000 units/s;
//	                                 beyond that requests queue (FIFO)
//	null://?stall=1s@10s             10 s after the first write the server
//	                                 stalls for 1 s (writes in flight wait)
//	null://?slowdown=2ms@30s         from 30 s after the first write on,
//	                                 every write takes 2 ms longer (a step,
//	                                 as when a compaction backlog builds up)
//	null://?fail=0.01&fail_class=server
//	                                 1 % of writes fail with that class
package null

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

// Config is the parsed form of a null:// URL.
type Config struct {
	Latency   Dist
	Capacity  float64       // units per second; 0 = unlimited
	StallAt   time.Duration // after the first write
	StallFor  time.Duration
	SlowAt    time.Duration // after the first write
	SlowBy    time.Duration // added to every write from SlowAt on
	Fail      float64       // fraction of writes that fail
	FailClass sinks.Class
}

// Dist is a latency distribution.
type Dist struct {
	Kind     string // "", "fixed", "uniform", "exp"
	Min, Max time.Duration
}

// Sample draws one latency.
func (d Dist) Sample() time.Duration {
	switch d.Kind {
	case "fixed":
		return d.Min
	case "uniform":
		return d.Min + time.Duration(rand.Int64N(int64(d.Max-d.Min)+1))
	case "exp":
		return time.Duration(rand.ExpFloat64() * float64(d.Min))
	}
	return 0
}

// ParseDist parses a latency: "2ms", "1ms..5ms" or "exp:2ms".
func ParseDist(s string) (Dist, error) {
	if s == "" {
		return Dist{}, nil
	}
	if rest, ok := strings.CutPrefix(s, "exp:"); ok {
		m, err := time.ParseDuration(rest)
		if err != nil || m <= 0 {
			return Dist{}, fmt.Errorf("latency %q: want exp:MEAN with a positive duration", s)
		}
		return Dist{Kind: "exp", Min: m}, nil
	}
	if a, b, ok := strings.Cut(s, ".."); ok {
		lo, err1 := time.ParseDuration(a)
		hi, err2 := time.ParseDuration(b)
		if err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return Dist{}, fmt.Errorf("latency %q: want MIN..MAX durations with 0 <= MIN <= MAX", s)
		}
		return Dist{Kind: "uniform", Min: lo, Max: hi}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return Dist{}, fmt.Errorf("latency %q: want a duration like 2ms, MIN..MAX or exp:MEAN", s)
	}
	return Dist{Kind: "fixed", Min: d}, nil
}

// Params are the null:// URL's parameters.
var Params = urlparam.Set{Params: []urlparam.Param{
	{Name: "latency", Type: urlparam.Custom, Parse: func(s string) (any, error) { return ParseDist(s) }, Syntax: "DURATION|MIN..MAX|exp:MEAN",
		Help: "time every write takes: 2ms, MIN..MAX (uniform) or exp:MEAN (exponential); none by default"},
	{Name: "capacity", Type: urlparam.Float, Range: urlparam.Above(0).AtMost(1e12), Want: "a positive number of units per second",
		Help: "units per second the modelled server handles; beyond that requests queue (FIFO); unlimited by default"},
	{Name: "stall", Type: urlparam.DurationAt, Range: urlparam.Above(0), Want: "DURATION@AFTER, e.g. 1s@10s",
		Help: "DURATION@AFTER: AFTER the first write the server stalls for DURATION (writes in flight wait)"},
	{Name: "slowdown", Type: urlparam.DurationAt, Range: urlparam.Above(0), Want: "DURATION@AFTER, e.g. 2ms@30s",
		Help: "DURATION@AFTER: from AFTER the first write on, every write takes DURATION longer"},
	{Name: "fail", Type: urlparam.Float, Range: urlparam.Within(0, 1), Want: "a fraction between 0 and 1",
		Help: "fraction of writes that fail on purpose"},
	{Name: "fail_class", Type: urlparam.Enum, Choices: classNames(), Default: string(sinks.Server),
		Want: "one of timeout, connection, rejected, server, out_of_order, empty, other", Help: "error class of the failed writes"},
}}

func classNames() []string {
	out := make([]string, len(sinks.Classes))
	for i, c := range sinks.Classes {
		out[i] = string(c)
	}
	return out
}

// ParseURL parses a null:// URL's parameters.
func ParseURL(u *url.URL) (Config, error) {
	p := Params.Bind(u.Query())
	var c Config
	c.Latency, _ = p.Value("latency").(Dist)
	c.Capacity = p.Float("capacity")
	c.StallFor, c.StallAt = p.DurationAt("stall")
	c.SlowBy, c.SlowAt = p.DurationAt("slowdown")
	c.Fail = p.Float("fail")
	c.FailClass = sinks.Class(p.Enum("fail_class"))
	return c, p.Err()
}

// Sink is the null sink.
type Sink struct {
	cfg Config

	mu       sync.Mutex
	first    time.Time // first write, origin of StallAt
	nextFree time.Time // when the modelled server can take the next unit
}

var _ sinks.Sink = (*Sink)(nil)

// New returns a null sink with the given model.
func New(c Config) *Sink { return &Sink{cfg: c} }

// Open is the registry's OpenFunc.
func Open(_ context.Context, u *url.URL, _ sinks.Options) (sinks.Sink, error) {
	c, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	return New(c), nil
}

// Check is the registry's CheckFunc.
func Check(u *url.URL, _ sources.Kind) error {
	_, err := ParseURL(u)
	return err
}

// ErrInjected is the error of writes failed on purpose (?fail=).
var ErrInjected = errors.New("injected failure")

// Write waits as the model says and discards b.
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if err := ctx.Err(); err != nil {
		// The modelled server never sees the write.
		return 0, sinks.NewError(sinks.Timeout, true, err)
	}
	c := &s.cfg
	if c.Capacity == 0 && c.StallFor == 0 && c.SlowBy == 0 && c.Latency.Kind == "" && c.Fail == 0 {
		return 0, nil
	}
	now := time.Now()
	done := now
	if c.Capacity > 0 || c.StallFor > 0 || c.SlowBy > 0 {
		s.mu.Lock()
		if s.first.IsZero() {
			s.first = now
		}
		start := now
		if c.SlowBy > 0 && !now.Before(s.first.Add(c.SlowAt)) {
			done = done.Add(c.SlowBy)
		}
		if c.StallFor > 0 {
			// Work arriving during the stall starts when it ends.
			st := s.first.Add(c.StallAt)
			if !start.Before(st) && start.Before(st.Add(c.StallFor)) {
				start = st.Add(c.StallFor)
			}
		}
		if c.Capacity > 0 {
			if s.nextFree.After(start) {
				start = s.nextFree
			}
			s.nextFree = start.Add(time.Duration(float64(b.Len()) / c.Capacity * float64(time.Second)))
			start = s.nextFree
		}
		s.mu.Unlock()
		done = done.Add(start.Sub(now))
	}
	done = done.Add(c.Latency.Sample())
	if wait := time.Until(done); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, sinks.NewError(sinks.Timeout, false, ctx.Err())
		}
	}
	if c.Fail > 0 && rand.Float64() < c.Fail {
		return 0, sinks.NewError(c.FailClass, c.FailClass != sinks.Rejected, ErrInjected)
	}
	return 0, nil
}

// Close does nothing.
func (s *Sink) Close(context.Context) error { return nil }
