// Package pace turns a rate setting into a schedule: how many units
// (rows or operations) are due by a given time since the start. It owns
// no clock and no goroutine; the engine asks it when the next batch is due
// and sleeps until then on one reused timer.
//
// Every profile is the integral of its rate, so the schedule never drifts
// however long it runs: unit n is due at the time t where
//
//	Count(t) = ∫₀ᵗ rate(s) ds = n
//
// Grammar (SOAKD_<W>_RATE):
//
//	max                          closed loop: as fast as the workers go
//	5000, 2.5k, 1M/s             constant units per second
//	30s:1000,5m:20000,1h:20000   k6-style stages: linear from the previous
//	                             target (0, or a leading START,) to each
//	                             target over its duration; ends after the last
//	500,30s:1000                 the same, starting at 500/s
//	step:1000+500/30s..20000     start at 1000/s, add 500/s every 30 s,
//	                             hold at 20000/s (..MAX is optional)
package pace

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Profile is a rate schedule in units per second over time since start.
type Profile interface {
	// Count is the number of units due by elapsed: the integral of the
	// rate from 0 to elapsed.
	Count(elapsed time.Duration) float64
	// At is the earliest elapsed time at which Count reaches n. ok is
	// false when it never does (the profile ends first or its rate stays 0).
	At(n float64) (elapsed time.Duration, ok bool)
	// RateAt is the intended rate at elapsed, in units per second.
	RateAt(elapsed time.Duration) float64
	// End is when the profile is over (0 = never).
	End() time.Duration
	// Peak is the highest rate the profile ever asks for (+Inf when it
	// grows without bound).
	Peak() float64
}

// Rate is a parsed RATE setting: closed loop (Max) or an open-loop Profile.
type Rate struct {
	Max     bool
	Profile Profile
	text    string
}

// MaxRate bounds constant and target rates, so float arithmetic stays exact
// enough over days (1e9 units/s for 1e6 s is 1e15 < 2^53).
const MaxRate = 1e9

// maxDuration bounds stage and step durations (about 11 years).
const maxDuration = 100000 * time.Hour

// Parse parses the rate grammar described in the package comment.
func Parse(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	r := Rate{text: t} // shown in the summary, /status and the console as given, less the blanks around it
	switch {
	case t == "":
		return Rate{}, errors.New("empty rate: want max, a number, stages like 30s:1000,5m:20000, or step:START+STEP/EVERY[..MAX]")
	case strings.EqualFold(t, "max"):
		r.Max = true
		return r, nil
	case strings.HasPrefix(strings.ToLower(t), "step:"):
		p, err := parseStep(t[len("step:"):])
		if err != nil {
			return Rate{}, fmt.Errorf("rate %q: %w", s, err)
		}
		r.Profile = p
		return r, nil
	case strings.Contains(t, ":"):
		p, err := parseStages(t)
		if err != nil {
			return Rate{}, fmt.Errorf("rate %q: %w", s, err)
		}
		r.Profile = p
		return r, nil
	}
	v, err := parseNumber(t)
	if err != nil {
		return Rate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	r.Profile = Constant(v)
	return r, nil
}

// ConstantRate is the constant rate r (units/s) as a Rate, written as
// Parse would read it back: a rate set in code shows as a number in
// logs, /status and the summary rather than as nothing.
func ConstantRate(r float64) Rate {
	return Rate{Profile: Constant(r), text: strconv.FormatFloat(r, 'f', -1, 64)}
}

// MustParse is Parse for constants in code and tests; it panics on error.
func MustParse(s string) Rate {
	r, err := Parse(s)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return r
}

// String returns the setting as written.
func (r Rate) String() string { return r.text }

// Peak is the highest rate r asks for: +Inf in closed loop (max) or for a
// step profile without a MAX.
func (r Rate) Peak() float64 {
	if r.Max || r.Profile == nil {
		return math.Inf(1)
	}
	return r.Profile.Peak()
}

// UnmarshalText implements encoding.TextUnmarshaler for config parsing.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.text), nil }

// SplitSuffix splits the k, K, M, g or G that may end a number off s,
// giving the number and what it is multiplied by (1 without a suffix). A
// lower-case m is no suffix here: 1m reads as a minute (or milli) as often
// as a million, so callers refuse it and ask for M.
func SplitSuffix(s string) (num string, mult float64) {
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			return s[:n-1], 1e3
		case 'M':
			return s[:n-1], 1e6
		case 'g', 'G':
			return s[:n-1], 1e9
		}
	}
	return s, 1
}

// parseNumber parses a non-negative rate with an optional k/M/G suffix and
// an optional "/s".
func parseNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, "/s")
	if n := len(s); n > 0 && s[n-1] == 'm' {
		// There is no per-minute rate either: rates are per second.
		if v, err := strconv.ParseFloat(s[:n-1], 64); err == nil && v >= 0 && v <= MaxRate {
			return 0, fmt.Errorf("lower-case m is ambiguous: did you mean %sM (%s million/s)? a rate is per second: %s per minute is %s",
				s[:n-1], s[:n-1], s[:n-1], strconv.FormatFloat(v/60, 'g', 4, 64))
		}
		return 0, fmt.Errorf("%q is not a rate (want a number like 5000, 2.5k or 1M)", s)
	}
	s, mult := SplitSuffix(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.ContainsAny(s, "xXpP_") {
		return 0, fmt.Errorf("%q is not a rate (want a number like 5000, 2.5k or 1M)", s)
	}
	v *= mult
	if math.IsNaN(v) || v < 0 || v > MaxRate {
		return 0, fmt.Errorf("rate %g out of range [0, %g]", v, float64(MaxRate))
	}
	return v, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 5m, 1h)", s)
	}
	if d <= 0 || d > maxDuration {
		return 0, fmt.Errorf("duration %s out of range (0, %s]", d, maxDuration)
	}
	return d, nil
}

func parseStages(s string) (Profile, error) {
	parts := strings.Split(s, ",")
	start := 0.0
	if !strings.Contains(parts[0], ":") {
		v, err := parseNumber(parts[0])
		if err != nil {
			return nil, fmt.Errorf("start rate: %w", err)
		}
		start, parts = v, parts[1:]
	}
	if len(parts) == 0 {
		return nil, errors.New("no stages after the start rate (want DUR:TARGET,...)")
	}
	if len(parts) > 10000 {
		return nil, errors.New("too many stages (at most 10000)")
	}
	segs := make([]segment, 0, len(parts))
	prev := start
	var t time.Duration
	for i, p := range parts {
		ds, ts, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("stage %d %q: want DURATION:TARGET", i+1, p)
		}
		d, err := parseDuration(ds)
		if err != nil {
			return nil, fmt.Errorf("stage %d: %w", i+1, err)
		}
		v, err := parseNumber(ts)
		if err != nil {
			return nil, fmt.Errorf("stage %d: %w", i+1, err)
		}
		if t+d > maxDuration {
			return nil, fmt.Errorf("stages last longer than %s", maxDuration)
		}
		segs = append(segs, segment{start: t.Seconds(), dur: d.Seconds(), r0: prev, r1: v})
		t += d
		prev = v
	}
	return newPiecewise(segs, t), nil
}

func parseStep(s string) (Profile, error) {
	const want = "want step:START+STEP/EVERY[..MAX], e.g. step:1000+500/30s..20000"
	body, maxs, hasMax := strings.Cut(s, "..")
	ss, rest, ok := strings.Cut(body, "+")
	if !ok {
		return nil, errors.New(want)
	}
	stepS, everyS, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, errors.New(want)
	}
	start, err := parseNumber(ss)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	step, err := parseNumber(stepS)
	if err != nil {
		return nil, fmt.Errorf("step: %w", err)
	}
	every, err := parseDuration(everyS)
	if err != nil {
		return nil, fmt.Errorf("every: %w", err)
	}
	p := Step{Start: start, Step: step, Every: every, Max: math.Inf(1)}
	if hasMax {
		m, err := parseNumber(maxs)
		if err != nil {
			return nil, fmt.Errorf("max: %w", err)
		}
		if m < start {
			return nil, fmt.Errorf("max %g is below the start rate %g", m, start)
		}
		p.Max = m
	}
	return p, nil
}

// Constant is a fixed rate in units per second.
type Constant float64

var _ Profile = Constant(0)

// Count is rate × elapsed.
func (c Constant) Count(e time.Duration) float64 { return float64(c) * e.Seconds() }

// At is n / rate.
func (c Constant) At(n float64) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	if c <= 0 {
		return 0, false
	}
	return seconds(n / float64(c)), true
}

// RateAt is the constant.
func (c Constant) RateAt(time.Duration) float64 { return float64(c) }

// End is never.
func (c Constant) End() time.Duration { return 0 }

// Peak is the rate.
func (c Constant) Peak() float64 { return float64(c) }

// segment is a linear piece of a rate: r0 at start, r1 at start+dur
// (seconds), with count c0 due before it.
type segment struct {
	start, dur float64
	r0, r1     float64
	c0         float64
}

func (s segment) count(dt float64) float64 {
	return s.r0*dt + (s.r1-s.r0)/(2*s.dur)*dt*dt
}

// piecewise is a piecewise-linear rate: k6 stages. It ends after the last
// segment.
type piecewise struct {
	segs []segment
	end  time.Duration
}

func newPiecewise(segs []segment, end time.Duration) *piecewise {
	c := 0.0
	for i := range segs {
		segs[i].c0 = c
		c += segs[i].count(segs[i].dur)
	}
	return &piecewise{segs: segs, end: end}
}

func (p *piecewise) total() float64 {
	l := p.segs[len(p.segs)-1]
	return l.c0 + l.count(l.dur)
}

// Count is c0 + r0·dt + (r1−r0)/(2·dur)·dt² within the segment at elapsed.
func (p *piecewise) Count(e time.Duration) float64 {
	t := e.Seconds()
	if t <= 0 {
		return 0
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].start > t }) - 1
	s := p.segs[i]
	dt := t - s.start
	if dt >= s.dur {
		return s.c0 + s.count(s.dur)
	}
	return s.c0 + s.count(dt)
}

// At solves count(dt) = n − c0 in the segment where the count reaches n:
// a·dt² + r0·dt − rem = 0 with a = (r1−r0)/(2·dur), taking the stable root
// dt = 2·rem / (r0 + √(r0² + 4·a·rem)).
func (p *piecewise) At(n float64) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	if n > p.total() {
		return 0, false
	}
	// first segment whose end count reaches n
	i := sort.Search(len(p.segs), func(i int) bool {
		s := p.segs[i]
		return s.c0+s.count(s.dur) >= n
	})
	s := p.segs[i]
	rem := n - s.c0
	a := (s.r1 - s.r0) / (2 * s.dur)
	disc := s.r0*s.r0 + 4*a*rem
	if disc < 0 {
		disc = 0
	}
	den := s.r0 + math.Sqrt(disc)
	dt := s.dur
	if den > 0 {
		dt = math.Min(2*rem/den, s.dur)
	}
	return seconds(s.start + dt), true
}

// RateAt interpolates the segment's rate; 0 after the end.
func (p *piecewise) RateAt(e time.Duration) float64 {
	t := e.Seconds()
	if t < 0 || e >= p.end {
		return 0
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].start > t }) - 1
	s := p.segs[i]
	return s.r0 + (s.r1-s.r0)*(t-s.start)/s.dur
}

// End is the sum of the stage durations.
func (p *piecewise) End() time.Duration { return p.end }

// Peak is the highest segment end: rates are linear within a segment.
func (p *piecewise) Peak() float64 {
	peak := 0.0
	for _, sg := range p.segs {
		peak = math.Max(peak, math.Max(sg.r0, sg.r1))
	}
	return peak
}

// Step is a staircase rate: Start units/s, plus Step every Every, held at
// Max (+Inf: no cap). It never ends.
type Step struct {
	Start, Step float64
	Every       time.Duration
	Max         float64
}

var _ Profile = Step{}

// steps is the number of steps k before the rate reaches Max (rate of step
// k is Start + k·Step below it); +Inf when it never does.
func (s Step) steps() float64 {
	if math.IsInf(s.Max, 1) || s.Step == 0 {
		return math.Inf(1)
	}
	return math.Max(0, math.Ceil((s.Max-s.Start)/s.Step))
}

func (s Step) rate(k float64) float64 {
	if k >= s.steps() {
		return s.Max
	}
	return s.Start + s.Step*k
}

// cum is the count due at the start of step k (k <= steps):
// E·(k·Start + Step·k(k−1)/2).
func (s Step) cum(k float64) float64 {
	return s.Every.Seconds() * (k*s.Start + s.Step*k*(k-1)/2)
}

// Count sums the full steps passed and the current one.
func (s Step) Count(e time.Duration) float64 {
	t := e.Seconds()
	if t <= 0 {
		return 0
	}
	E := s.Every.Seconds()
	k := math.Floor(t / E)
	if km := s.steps(); k >= km {
		return s.cum(km) + s.Max*(t-km*E)
	}
	return s.cum(k) + s.rate(k)*(t-k*E)
}

// At inverts Count: the step k with cum(k) <= n < cum(k+1) comes from
// the quadratic Step·E/2·k² + (Start − Step/2)·E·k − n = 0, corrected by
// one either way for rounding.
func (s Step) At(n float64) (time.Duration, bool) {
	if n <= 0 {
		return 0, true
	}
	E := s.Every.Seconds()
	km := s.steps()
	if !math.IsInf(km, 1) && n > s.cum(km) {
		if s.Max <= 0 {
			return 0, false
		}
		return seconds(km*E + (n-s.cum(km))/s.Max), true
	}
	if s.Step == 0 {
		if s.Start <= 0 {
			return 0, false
		}
		return seconds(n / s.Start), true
	}
	a, b := s.Step*E/2, (s.Start-s.Step/2)*E
	k := math.Floor((-b + math.Sqrt(b*b+4*a*n)) / (2 * a))
	if k < 0 {
		k = 0
	}
	for k > 0 && s.cum(k) > n {
		k--
	}
	for s.cum(k+1) <= n && (math.IsInf(km, 1) || k+1 < km) {
		k++
	}
	// cum(k) <= n < cum(k+1) implies rate(k) > 0.
	return seconds(k*E + (n-s.cum(k))/s.rate(k)), true
}

// RateAt is the rate of the current step.
func (s Step) RateAt(e time.Duration) float64 {
	if e < 0 {
		return 0
	}
	return s.rate(math.Floor(e.Seconds() / s.Every.Seconds()))
}

// End is never.
func (s Step) End() time.Duration { return 0 }

// Peak is MAX, or +Inf for a rate that grows without one.
func (s Step) Peak() float64 {
	if s.Step <= 0 {
		return s.Start
	}
	return s.Max
}

func seconds(f float64) time.Duration {
	if f >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(f * 1e9))
}

// Scale returns p with every rate multiplied by f (> 0): a process that
// owns one of N shards runs Scale(p, 1/N) so the shards add up to p.
func Scale(p Profile, f float64) Profile {
	if f == 1 {
		return p
	}
	return scaled{p, f}
}

type scaled struct {
	p Profile
	f float64
}

func (s scaled) Count(e time.Duration) float64      { return s.f * s.p.Count(e) }
func (s scaled) At(n float64) (time.Duration, bool) { return s.p.At(n / s.f) }
func (s scaled) RateAt(e time.Duration) float64     { return s.f * s.p.RateAt(e) }
func (s scaled) End() time.Duration                 { return s.p.End() }
func (s scaled) Peak() float64                      { return s.f * s.p.Peak() }

// FormatRate writes a rate for people: at most 6 significant digits,
// thousands grouped with commas (10,000,000, 5,062.5, 0.25), never in
// exponent form.
func FormatRate(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	s := strconv.FormatFloat(v, 'g', 6, 64)
	f, _ := strconv.ParseFloat(s, 64) // v to 6 significant digits
	s = strconv.FormatFloat(f, 'f', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// FormatSeconds prints seconds compactly: 850µs, 12.3ms, 1.20s; "-" for
// none.
func FormatSeconds(s float64) string {
	switch {
	case s == 0:
		return "-"
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2fms", s*1e3)
	}
	return fmt.Sprintf("%.2fs", s)
}
