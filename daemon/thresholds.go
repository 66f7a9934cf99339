package daemon

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// Thresholds are pass/fail checks of a workload's run phase, written in
// SOAKD_<W>_THRESHOLDS as a comma-separated list:
//
//	list      = [ check { "," check } ]
//	check     = [ "drift." ] [ "op:" OP "." ] [ "response." | "service." ]
//	            metric cmp value [ "@" window ] [ "!" ]
//	metric    = "p" PERCENTILE | "max" | "mean"           latency (response time unless service.)
//	          | "errors" | "failed" | "dropped" | "achieved"
//	cmp       = "<" | "<=" | ">" | ">=" | "="               "=" for counts only
//	value     = DURATION (50ms) | NUMBER "%" | COUNT (0) | RATE "/s" (5000/s, 2.5k/s)
//
// Spaces are allowed around the comparison, "@" and "!". Latency checks
// take a duration; errors (failed attempts), failed and dropped (units) a
// percentage (of attempts; of scheduled units) or a count; achieved a
// percentage of the units scheduled (the target rate's integral) or a rate
// in units/s. "@1m" judges every 1-minute window (sliding, see
// thresholdsEval) instead of the whole run phase. "drift." compares the
// latest window with the first one after DRIFT_WARMUP, as a relative
// change ("drift.p99<20%") or, for latency, a difference ("drift.p99<5ms");
// "@" then sets the window length (default 1m). "!" stops the run as soon
// as the check fails.

// thresholdMetric is what a check measures.
type thresholdMetric uint8

const (
	metricQuantile thresholdMetric = iota // pN
	metricMax
	metricMean
	metricErrors   // failed attempts
	metricFailed   // units failed for good
	metricDropped  // units dropped
	metricAchieved // units acknowledged
)

func (m thresholdMetric) latency() bool { return m <= metricMean }

// thresholdCmp is a check's comparison.
type thresholdCmp uint8

const (
	cmpLT thresholdCmp = iota
	cmpLE
	cmpGT
	cmpGE
	cmpEQ
)

// valueKind is the unit a check's value was written in.
type valueKind uint8

const (
	valueDuration valueKind = iota // seconds
	valuePercent                   // a fraction: 1% is 0.01
	valueCount
	valueRate // units per second
)

// defaultDriftWindow is the window of a drift check without "@".
const defaultDriftWindow = time.Minute

// Window lengths a check may ask for.
const (
	minThresholdWindow = time.Second
	maxThresholdWindow = 7 * 24 * time.Hour
)

// Threshold is one parsed check of SOAKD_<W>_THRESHOLDS.
type Threshold struct {
	text    string // as written, without spaces: its label in metrics and the summary
	drift   bool
	op      string // "" = every op
	service bool   // service time rather than response time
	metric  thresholdMetric
	q       float64 // percentile of metricQuantile, in (0, 100]
	cmp     thresholdCmp
	kind    valueKind
	value   float64       // in the unit of kind (seconds, fraction, count, units/s)
	window  time.Duration // "@": 0 = the whole run phase (drift: defaultDriftWindow)
	abort   bool          // "!"
}

// String returns the check as written, without spaces.
func (t Threshold) String() string { return t.text }

// driftWindow is the window length of a drift check.
func (t Threshold) driftWindow() time.Duration {
	if t.window > 0 {
		return t.window
	}
	return defaultDriftWindow
}

// ThresholdError is a problem at a position of a thresholds expression.
type ThresholdError struct {
	Expr string // the whole expression
	Pos  int    // byte offset of the problem in Expr
	Msg  string
}

func (e *ThresholdError) Error() string {
	col := utf8.RuneCountInString(e.Expr[:min(max(e.Pos, 0), len(e.Expr))]) + 1
	return fmt.Sprintf("column %d of %q: %s", col, e.Expr, e.Msg)
}

// opNames are the ops a check may name with op:, series, KV and the query types.
var opNames = func() []string {
	var out []string
	for i := 0; i < opSlots; i++ {
		out = append(out, opName(i))
	}
	return out
}()

// ParseThresholds parses a thresholds expression. It returns every
// problem found, each a *ThresholdError giving its position, joined.
func ParseThresholds(expr string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	if strings.TrimSpace(expr) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	start := 0
	for start <= len(expr) {
		end := strings.IndexByte(expr[start:], ',')
		if end < 0 {
			end = len(expr)
		} else {
			end += start
		}
		p := &thresholdParser{expr: expr, pos: start, end: end}
		t, err := p.check()
		switch {
		case err != nil:
			errs = append(errs, err)
		case seen[t.text]:
			errs = append(errs, p.fail(p.skipSpace(start), "%s is listed twice", t.text))
		default:
			seen[t.text] = true
			out = append(out, t)
		}
		start = end + 1
	}
	return out, errors.Join(errs...)
}

// thresholdParser reads one check, expr[pos:end].
type thresholdParser struct {
	expr     string
	pos, end int
}

func (p *thresholdParser) fail(pos int, format string, args ...any) error {
	return &ThresholdError{Expr: p.expr, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *thresholdParser) skipSpace(i int) int {
	for i < p.end && (p.expr[i] == ' ' || p.expr[i] == '\t') {
		i++
	}
	return i
}

func (p *thresholdParser) rest() string { return p.expr[p.pos:p.end] }

// token reads up to (not including) the first byte in stop, or a space.
func (p *thresholdParser) token(stop string) (string, int) {
	at := p.pos
	for p.pos < p.end && !strings.ContainsRune(stop+" \t", rune(p.expr[p.pos])) {
		p.pos++
	}
	return p.expr[at:p.pos], at
}

const metricsHelp = "pN like p99 or p99.9, max, mean, errors, failed, dropped or achieved"

func (p *thresholdParser) check() (Threshold, error) {
	var t Threshold
	var b strings.Builder // the check without spaces
	p.pos = p.skipSpace(p.pos)
	if p.pos == p.end {
		return t, p.fail(p.pos, "empty threshold (want e.g. p99<50ms)")
	}
	begin := p.pos
	if strings.HasPrefix(p.rest(), "drift.") {
		t.drift = true
		p.pos += len("drift.")
		b.WriteString("drift.")
	}
	opAt := -1
	if strings.HasPrefix(p.rest(), "op:") {
		opAt = p.pos
		p.pos += len("op:")
		name, at := p.token(".<>=!@")
		if p.pos >= p.end || p.expr[p.pos] != '.' {
			return t, p.fail(p.pos, "want op:NAME. before the metric (e.g. op:read.p99<5ms)")
		}
		if !slices.Contains(opNames, name) {
			return t, p.fail(at, "unknown op %q (known: %s)", name, strings.Join(opNames, ", "))
		}
		p.pos++
		t.op = name
		b.WriteString("op:" + name + ".")
	}
	kindAt := -1
	for _, pre := range []string{"response.", "service."} {
		if strings.HasPrefix(p.rest(), pre) {
			kindAt = p.pos
			t.service = pre == "service."
			p.pos += len(pre)
			b.WriteString(pre)
			break
		}
	}
	name, metricAt := p.token("<>=!@")
	switch {
	case name == "":
		return t, p.fail(metricAt, "want a metric: %s", metricsHelp)
	case name == "max":
		t.metric = metricMax
	case name == "mean":
		t.metric = metricMean
	case name == "errors":
		t.metric = metricErrors
	case name == "failed":
		t.metric = metricFailed
	case name == "dropped":
		t.metric = metricDropped
	case name == "achieved":
		t.metric = metricAchieved
	case name[0] == 'p':
		q, err := strconv.ParseFloat(name[1:], 64)
		if err != nil || strings.ContainsAny(name[1:], "eExXpP_+-") || !(q > 0 && q <= 100) {
			return t, p.fail(metricAt, "%q is not a percentile: want p followed by a number in (0, 100], like p99 or p99.9", name)
		}
		t.metric, t.q = metricQuantile, q
	case strings.ContainsAny(name, ".:"):
		return t, p.fail(metricAt, "unknown metric %q (prefixes come in the order drift., op:NAME., response. or service.; then %s)", name, metricsHelp)
	default:
		return t, p.fail(metricAt, "unknown metric %q (want %s)", name, metricsHelp)
	}
	b.WriteString(name)
	switch {
	case opAt >= 0 && !t.metric.latency() && t.metric != metricErrors:
		return t, p.fail(opAt, "op: applies to latency and errors; %s is counted per workload", name)
	case kindAt >= 0 && !t.metric.latency():
		return t, p.fail(kindAt, "response. and service. apply to latency metrics (%s is not one)", name)
	case t.drift && !t.metric.latency() && t.metric != metricAchieved:
		return t, p.fail(begin, "drift. applies to latency metrics and achieved, not %s", name)
	}

	p.pos = p.skipSpace(p.pos)
	cmpAt := p.pos
	for p.pos < p.end && strings.IndexByte("<>=", p.expr[p.pos]) >= 0 {
		p.pos++
	}
	op := p.expr[cmpAt:p.pos]
	switch op {
	case "<":
		t.cmp = cmpLT
	case "<=":
		t.cmp = cmpLE
	case ">":
		t.cmp = cmpGT
	case ">=":
		t.cmp = cmpGE
	case "=":
		t.cmp = cmpEQ
	default:
		if op == "" {
			return t, p.fail(cmpAt, "want a comparison (<, <=, >, >=, =) after %s", name)
		}
		return t, p.fail(cmpAt, "%q is not a comparison (want <, <=, >, >= or =)", op)
	}
	b.WriteString(op)

	p.pos = p.skipSpace(p.pos)
	val, valAt := p.token("@!")
	if val == "" {
		return t, p.fail(valAt, "want a value after %s%s (e.g. 50ms, 0.1%%, 0 or 5000/s)", name, op)
	}
	if err := p.value(&t, val, valAt); err != nil {
		return t, err
	}
	b.WriteString(val)

	p.pos = p.skipSpace(p.pos)
	if p.pos < p.end && p.expr[p.pos] == '@' {
		p.pos = p.skipSpace(p.pos + 1)
		w, at := p.token("!")
		d, err := time.ParseDuration(w)
		switch {
		case err != nil:
			return t, p.fail(at, "%q is not a window length (want a duration like 10s or 1m after @)", w)
		case d < minThresholdWindow || d > maxThresholdWindow:
			return t, p.fail(at, "window %s is out of range [%v, %v]", w, minThresholdWindow, maxThresholdWindow)
		}
		t.window = d
		b.WriteString("@" + w)
		p.pos = p.skipSpace(p.pos)
	}
	if p.pos < p.end && p.expr[p.pos] == '!' {
		t.abort = true
		b.WriteString("!")
		p.pos = p.skipSpace(p.pos + 1)
	}
	if p.pos < p.end {
		return t, p.fail(p.pos, "unexpected %q (a check ends with an optional @WINDOW and !; checks are separated by commas)", p.rest())
	}
	t.text = b.String()
	return t, nil
}

// value parses a check's value and checks it suits the metric.
func (p *thresholdParser) value(t *Threshold, s string, at int) error {
	var err error
	switch {
	case strings.HasSuffix(s, "%"):
		t.kind = valuePercent
		t.value, err = finite(s[:len(s)-1])
		t.value /= 100
	case strings.HasSuffix(s, "/s"):
		t.kind = valueRate
		num, mult := s[:len(s)-2], 1.0
		if n := len(num); n > 0 && (num[n-1] == 'k' || num[n-1] == 'M') {
			mult = map[byte]float64{'k': 1e3, 'M': 1e6}[num[n-1]]
			num = num[:n-1]
		}
		t.value, err = finite(num)
		t.value *= mult
	default:
		if v, ferr := finite(s); ferr == nil {
			t.kind, t.value = valueCount, v
		} else if d, derr := time.ParseDuration(s); derr == nil {
			t.kind, t.value = valueDuration, d.Seconds()
		} else {
			return p.fail(at, "%q is not a value: want a duration (50ms), a percentage (0.1%%), a count (0) or a rate (5000/s)", s)
		}
	}
	if err != nil {
		return p.fail(at, "%q is not a value: want a duration (50ms), a percentage (0.1%%), a count (0) or a rate (5000/s)", s)
	}
	name := t.metricName()
	want := func(what string) error { return p.fail(at, "%s takes %s, not %q", name, what, s) }
	switch {
	case t.drift && t.metric.latency():
		if t.kind != valueDuration && t.kind != valuePercent {
			return want("a relative change (20%) or a difference (5ms)")
		}
	case t.drift:
		if t.kind != valuePercent {
			return want("a relative change (-2%)")
		}
	case t.metric.latency():
		if t.kind != valueDuration {
			return want("a duration (e.g. 50ms)")
		}
	case t.metric == metricAchieved:
		if t.kind != valuePercent && t.kind != valueRate {
			return want("a percentage of the target rate (99%) or a rate (5000/s)")
		}
	default: // errors, failed, dropped
		if t.kind != valuePercent && t.kind != valueCount {
			return want("a percentage (0.1%) or a count (0)")
		}
	}
	switch {
	case t.cmp == cmpEQ && t.kind != valueCount:
		return p.fail(at, "= compares counts (dropped=0); use <, <=, > or >= for %s", s)
	case t.kind == valueCount && (t.value < 0 || t.value != math.Trunc(t.value) || t.value > 1<<53):
		return p.fail(at, "a count must be a whole number >= 0, not %q", s)
	case t.drift && t.kind == valuePercent && t.value <= -1:
		return p.fail(at, "a relative change must be above -100%%, not %q", s)
	case !t.drift && t.kind == valuePercent && (t.value < 0 || t.value > 1):
		return p.fail(at, "a percentage must be between 0%% and 100%%, not %q", s)
	case !t.drift && t.value < 0:
		return p.fail(at, "%q must not be negative", s)
	case t.kind == valueRate && !(t.value > 0 && t.value <= 1e12):
		return p.fail(at, "a rate must be above 0, not %q", s)
	}
	return nil
}

// metricName is the check's metric as written (p99, errors, ...).
func (t Threshold) metricName() string {
	switch t.metric {
	case metricQuantile:
		return "p" + strconv.FormatFloat(t.q, 'f', -1, 64)
	case metricMax:
		return "max"
	case metricMean:
		return "mean"
	case metricErrors:
		return "errors"
	case metricFailed:
		return "failed"
	case metricDropped:
		return "dropped"
	}
	return "achieved"
}

// finite parses a plain decimal number.
func finite(s string) (float64, error) {
	if s == "" || strings.ContainsAny(s, "xXpP_") {
		return 0, errors.New("not a number")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("not a number")
	}
	return v, nil
}

// validateThresholds parses w's THRESHOLDS into w.Checks and checks them
// against the workload: its kind's ops, a target rate for achieved
// percentages, and a run phase long enough for drift windows when its
// end is known (DURATION, a finite rate profile, or hard, SOAKD_DURATION).
func (w *Workload) validateThresholds(kind sources.Kind, known bool, hard time.Duration) []error {
	key := Prefix(w.Name) + "THRESHOLDS"
	checks, err := ParseThresholds(w.Thresholds)
	var errs []error
	for _, e := range settings.Problems(err) {
		errs = append(errs, &settings.Error{Key: key, Err: e})
	}
	if w.DriftWarmup < 0 {
		errs = append(errs, cfgErr(Prefix(w.Name)+"DRIFT_WARMUP", "must not be negative"))
	}
	runLen := w.Duration
	if !w.Rate.Max && w.Rate.Profile != nil {
		if end := w.Rate.Profile.End(); end > 0 && (runLen == 0 || end < runLen) {
			runLen = end
		}
	}
	if hard > 0 && (runLen == 0 || hard < runLen) {
		runLen = hard
	}
	for _, t := range checks {
		switch {
		case known && t.op != "" && !slices.Contains(opNamesOf(kind), t.op):
			errs = append(errs, cfgErr(key, "%s: a %s workload has no op %q (its ops: %s)", t, kind, t.op, strings.Join(opNamesOf(kind), ", ")))
		case t.metric == metricAchieved && t.kind == valuePercent && !t.drift && w.Rate.Max:
			errs = append(errs, cfgErr(key, "%s: RATE=max has no target rate to compare with; give a rate (e.g. achieved>5000/s)", t))
		case t.drift && runLen > 0 && runLen < w.DriftWarmup+2*t.driftWindow():
			errs = append(errs, cfgErr(key, "%s: the run phase (at most %v) is shorter than %sDRIFT_WARMUP (%v) + 2 windows of %v, so nothing would be compared; shorten the window (@10s) or the warm-up",
				t, runLen, Prefix(w.Name), w.DriftWarmup, t.driftWindow()))
		}
	}
	if len(errs) == 0 {
		w.Checks = checks
	}
	return errs
}

// checkThresholdOps refuses a check of an op the workload's source never
// issues (a query type of another use case, or one left out), which only
// the built source knows: it could never be judged.
func checkThresholdOps(w *Workload, kind sources.Kind, src sources.Source) error {
	var names []string
	for _, op := range opsFor(kind, src) {
		names = append(names, opName(op))
	}
	for _, t := range w.Checks {
		if t.op != "" && !slices.Contains(names, t.op) {
			return cfgErr(Prefix(w.Name)+"THRESHOLDS", "%s: source %s issues no op %q (its ops: %s)", t, w.Source, t.op, strings.Join(names, ", "))
		}
	}
	return nil
}

// opNamesOf lists the op names a workload of kind k may report (for
// queries: every query type, the source's own list being unknown here).
func opNamesOf(k sources.Kind) []string {
	var out []string
	for _, op := range opsFor(k, nil) {
		out = append(out, opName(op))
	}
	return out
}
