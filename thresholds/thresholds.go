// Package thresholds is the grammar of thresholds: pass/fail checks of a workload's run phase, written in
// SOAKD_<W>_THRESHOLDS as a comma-separated list:
//
//	list      = [ check { "," check } ]
//	check     = [ "drift." ] [ "op:" OP "." ] [ "response." | "service." ]
//	            metric cmp value [ "@" window ] [ "!" ]
//	          | [ "drift." ] "target." target cmp value [ "@" window ] [ "!" ]
//	metric    = "p" PERCENTILE | "max" | "mean"           latency (response time unless service.)
//	          | "errors" | "failed" | "dropped" | "achieved"
//	target    = "memory" | "storage" | "storage_per_value"  the target's own figures
//	cmp       = "<" | "<=" | ">" | ">=" | "="               "=" for counts only
//	value     = DURATION (50ms) | NUMBER "%" | COUNT (0) | RATE "/s" (5000/s, 2.5k/s)
//	          | NUMBER BYTES (8GiB, 4B)
//	BYTES     = "B" | "KB" | "MB" | "GB" | "TB"            decimal (1KB = 1000 B)
//	          | "KiB" | "MiB" | "GiB" | "TiB"              binary (1KiB = 1024 B)
//
// Spaces are allowed around the comparison, "@" and "!". Latency checks
// take a duration; errors (failed attempts), failed and dropped (units) a
// percentage (of attempts; of scheduled units) or a count; achieved a
// percentage of the units scheduled (the target rate's integral) or a rate
// in units/s. "@1m" judges every 1-minute window (sliding, see
// the judge) instead of the whole run phase. "drift." compares the
// latest window with the first one after DRIFT_WARMUP, as a relative
// change ("drift.p99<20%") or, for latency, a difference ("drift.p99<5ms");
// "@" then sets the window length (default 1m). "!" stops the run as soon
// as the check fails.
//
// target. checks judge the workload's target's own figures, as its watch
// (SOAKD_<W>_WATCH_INTERVAL) reads them, in bytes: memory (one kind of
// the target's memory, see the judge), storage (the storage soakd's data
// takes, summed over kinds) and storage_per_value (storage ÷ the values or
// records acknowledged). Whole-run and windowed memory and storage checks
// judge the peak reading; storage_per_value the last one. drift.target.memory
// and drift.target.storage compare windows as drift.p99 does, as a
// relative change (drift.target.memory<5%) or a difference (<100MiB).
package thresholds

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/soakd/soakd/sources"
)

// Metric is what a check measures.
type Metric uint8

const (
	Quantile Metric = iota // pN
	Max
	Mean
	Errors   // failed attempts
	Failed   // units failed for good
	Dropped  // units dropped
	Achieved // units acknowledged
	// The target's own figures, in bytes.
	TargetMemory
	TargetStorage
	TargetStoragePerValue
)

func (m Metric) Latency() bool { return m <= Mean }

// Target reports whether m is one of the target's own figures.
func (m Metric) Target() bool { return m >= TargetMemory }

// Cmp is a check's comparison.
type Cmp uint8

const (
	LT Cmp = iota
	LE
	GT
	GE
	EQ
)

// ValueKind is the unit a check's value was written in.
type ValueKind uint8

const (
	Duration ValueKind = iota // seconds
	Percent                   // a fraction: 1% is 0.01
	Count
	Rate // units per second
	Bytes
)

// DefaultDriftWindow is the window of a drift check without "@".
const DefaultDriftWindow = time.Minute

// Window lengths a check may ask for.
const (
	minWindow = time.Second
	maxWindow = 7 * 24 * time.Hour
)

// Check is one parsed check of SOAKD_<W>_THRESHOLDS.
type Check struct {
	Text    string // as written, without spaces: its label in metrics and the summary
	Drift   bool
	Op      string // "" = every op
	Service bool   // service time rather than response time
	Metric  Metric
	Q       float64 // percentile of Quantile, in (0, 100]
	Cmp     Cmp
	Kind    ValueKind
	Value   float64       // in the unit of Kind (seconds, fraction, count, units/s, bytes)
	Window  time.Duration // "@": 0 = the whole run phase (drift: DefaultDriftWindow)
	Abort   bool          // "!"
}

// String returns the check as written, without spaces.
func (t Check) String() string { return t.Text }

// DriftWindow is the window length of a drift check.
func (t Check) DriftWindow() time.Duration {
	if t.Window > 0 {
		return t.Window
	}
	return DefaultDriftWindow
}

// Error is a problem at a position of a thresholds expression.
type Error struct {
	Expr string // the whole expression
	Pos  int    // byte offset of the problem in Expr
	Msg  string
}

func (e *Error) Error() string {
	col := utf8.RuneCountInString(e.Expr[:min(max(e.Pos, 0), len(e.Expr))]) + 1
	return fmt.Sprintf("column %d of %q: %s", col, e.Expr, e.Msg)
}

// OpNames are the ops a check may name with op:, in the engine's order:
// the KV ops, the series op write, verify (VERIFY's read-backs), then the
// query types.
var OpNames = func() []string {
	var out []string
	for i := range sources.NumOps {
		out = append(out, sources.Op(i).String())
	}
	out = append(out, "write", "verify")
	for t := range sources.NumQueryTypes {
		out = append(out, t.String())
	}
	return out
}()

// Parse parses a thresholds expression. It returns every
// problem found, each a *Error giving its position, joined.
func Parse(expr string) ([]Check, error) {
	var out []Check
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
		p := &parser{expr: expr, pos: start, end: end}
		t, err := p.check()
		switch {
		case err != nil:
			errs = append(errs, err)
		case seen[t.Text]:
			errs = append(errs, p.fail(p.skipSpace(start), "%s is listed twice", t.Text))
		default:
			seen[t.Text] = true
			out = append(out, t)
		}
		start = end + 1
	}
	return out, errors.Join(errs...)
}

// parser reads one check, expr[pos:end].
type parser struct {
	expr     string
	pos, end int
}

func (p *parser) fail(pos int, format string, args ...any) error {
	return &Error{Expr: p.expr, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace(i int) int {
	for i < p.end && (p.expr[i] == ' ' || p.expr[i] == '\t') {
		i++
	}
	return i
}

func (p *parser) rest() string { return p.expr[p.pos:p.end] }

// token reads up to (not including) the first byte in stop, or a space.
func (p *parser) token(stop string) (string, int) {
	at := p.pos
	for p.pos < p.end && !strings.ContainsRune(stop+" \t", rune(p.expr[p.pos])) {
		p.pos++
	}
	return p.expr[at:p.pos], at
}

const metricsHelp = "pN like p99 or p99.9, max, mean, errors, failed, dropped, achieved, or target.memory, target.storage or target.storage_per_value"

// targetMetrics are the target's figures a check may name after "target.".
var targetMetrics = map[string]Metric{"memory": TargetMemory, "storage": TargetStorage, "storage_per_value": TargetStoragePerValue}

func (p *parser) check() (Check, error) {
	var t Check
	var b strings.Builder // the check without spaces
	p.pos = p.skipSpace(p.pos)
	if p.pos == p.end {
		return t, p.fail(p.pos, "empty threshold (want e.g. p99<50ms)")
	}
	begin := p.pos
	if strings.HasPrefix(p.rest(), "drift.") {
		t.Drift = true
		p.pos += len("drift.")
		b.WriteString("drift.")
	}
	if strings.HasPrefix(p.rest(), "target.") {
		p.pos += len("target.")
		name, nameAt := p.token("<>=!@")
		m, ok := targetMetrics[name]
		switch {
		case !ok:
			return t, p.fail(nameAt, "unknown figure of the target %q (want memory, storage or storage_per_value)", name)
		case t.Drift && m == TargetStoragePerValue:
			return t, p.fail(begin, "drift. applies to target.memory and target.storage, not target.%s", name)
		}
		t.Metric = m
		b.WriteString("target." + name)
		return p.tail(t, &b, "target."+name)
	}
	opAt := -1
	if strings.HasPrefix(p.rest(), "op:") {
		opAt = p.pos
		p.pos += len("op:")
		name, at := p.token(".<>=!@")
		if p.pos >= p.end || p.expr[p.pos] != '.' {
			return t, p.fail(p.pos, "want op:NAME. before the metric (e.g. op:read.p99<5ms)")
		}
		if !slices.Contains(OpNames, name) {
			return t, p.fail(at, "unknown op %q (known: %s)", name, strings.Join(OpNames, ", "))
		}
		p.pos++
		t.Op = name
		b.WriteString("op:" + name + ".")
	}
	kindAt := -1
	for _, pre := range []string{"response.", "service."} {
		if strings.HasPrefix(p.rest(), pre) {
			kindAt = p.pos
			t.Service = pre == "service."
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
		t.Metric = Max
	case name == "mean":
		t.Metric = Mean
	case name == "errors":
		t.Metric = Errors
	case name == "failed":
		t.Metric = Failed
	case name == "dropped":
		t.Metric = Dropped
	case name == "achieved":
		t.Metric = Achieved
	case name[0] == 'p':
		q, err := strconv.ParseFloat(name[1:], 64)
		if err != nil || strings.ContainsAny(name[1:], "eExXpP_+-") || !(q > 0 && q <= 100) {
			return t, p.fail(metricAt, "%q is not a percentile: want p followed by a number in (0, 100], like p99 or p99.9", name)
		}
		t.Metric, t.Q = Quantile, q
	case strings.ContainsAny(name, ".:"):
		return t, p.fail(metricAt, "unknown metric %q (prefixes come in the order drift., op:NAME., response. or service.; then %s)", name, metricsHelp)
	default:
		return t, p.fail(metricAt, "unknown metric %q (want %s)", name, metricsHelp)
	}
	b.WriteString(name)
	switch {
	case opAt >= 0 && !t.Metric.Latency() && t.Metric != Errors:
		return t, p.fail(opAt, "op: applies to latency and errors; %s is counted per workload", name)
	case kindAt >= 0 && !t.Metric.Latency():
		return t, p.fail(kindAt, "response. and service. apply to latency metrics (%s is not one)", name)
	case t.Drift && !t.Metric.Latency() && t.Metric != Achieved:
		return t, p.fail(begin, "drift. applies to latency metrics and achieved (and target.memory, target.storage), not %s", name)
	}
	return p.tail(t, &b, name)
}

// tail reads the rest of a check once its metric (name) is known: the
// comparison, the value, "@" and "!".
func (p *parser) tail(t Check, b *strings.Builder, name string) (Check, error) {
	p.pos = p.skipSpace(p.pos)
	cmpAt := p.pos
	for p.pos < p.end && strings.IndexByte("<>=", p.expr[p.pos]) >= 0 {
		p.pos++
	}
	op := p.expr[cmpAt:p.pos]
	switch op {
	case "<":
		t.Cmp = LT
	case "<=":
		t.Cmp = LE
	case ">":
		t.Cmp = GT
	case ">=":
		t.Cmp = GE
	case "=":
		t.Cmp = EQ
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
		case d < minWindow || d > maxWindow:
			return t, p.fail(at, "window %s is out of range [%v, %v]", w, minWindow, maxWindow)
		}
		t.Window = d
		b.WriteString("@" + w)
		p.pos = p.skipSpace(p.pos)
	}
	if p.pos < p.end && p.expr[p.pos] == '!' {
		t.Abort = true
		b.WriteString("!")
		p.pos = p.skipSpace(p.pos + 1)
	}
	if p.pos < p.end {
		return t, p.fail(p.pos, "unexpected %q (a check ends with an optional @WINDOW and !; checks are separated by commas)", p.rest())
	}
	t.Text = b.String()
	return t, nil
}

// value parses a check's value and checks it suits the metric.
func (p *parser) value(t *Check, s string, at int) error {
	var err error
	switch {
	case strings.HasSuffix(s, "%"):
		t.Kind = Percent
		t.Value, err = finite(s[:len(s)-1])
		t.Value /= 100
	case strings.HasSuffix(s, "/s"):
		t.Kind = Rate
		num, mult := s[:len(s)-2], 1.0
		if n := len(num); n > 0 && (num[n-1] == 'k' || num[n-1] == 'M') {
			mult = map[byte]float64{'k': 1e3, 'M': 1e6}[num[n-1]]
			num = num[:n-1]
		}
		t.Value, err = finite(num)
		t.Value *= mult
	default:
		if v, ferr := finite(s); ferr == nil {
			t.Kind, t.Value = Count, v
		} else if v, ok := bytesValue(s); ok {
			t.Kind, t.Value = Bytes, v
		} else if d, derr := time.ParseDuration(s); derr == nil {
			t.Kind, t.Value = Duration, d.Seconds()
		} else {
			return p.fail(at, "%q is not a value: want a duration (50ms), a percentage (0.1%%), a count (0), a rate (5000/s) or a size (8GiB)", s)
		}
	}
	if err != nil {
		return p.fail(at, "%q is not a value: want a duration (50ms), a percentage (0.1%%), a count (0), a rate (5000/s) or a size (8GiB)", s)
	}
	name := t.MetricName()
	want := func(what string) error { return p.fail(at, "%s takes %s, not %q", name, what, s) }
	switch {
	case t.Drift && t.Metric.Target():
		if t.Kind != Bytes && t.Kind != Percent {
			return want("a relative change (5%) or a difference in bytes (100MiB)")
		}
	case t.Metric.Target():
		if t.Kind != Bytes {
			return want("a size in bytes (8GiB, 100GB, 4B)")
		}
	case t.Drift && t.Metric.Latency():
		if t.Kind != Duration && t.Kind != Percent {
			return want("a relative change (20%) or a difference (5ms)")
		}
	case t.Drift:
		if t.Kind != Percent {
			return want("a relative change (-2%)")
		}
	case t.Metric.Latency():
		if t.Kind != Duration {
			return want("a duration (e.g. 50ms)")
		}
	case t.Metric == Achieved:
		if t.Kind != Percent && t.Kind != Rate {
			return want("a percentage of the target rate (99%) or a rate (5000/s)")
		}
	default: // errors, failed, dropped
		if t.Kind != Percent && t.Kind != Count {
			return want("a percentage (0.1%) or a count (0)")
		}
	}
	switch {
	case t.Cmp == EQ && t.Kind != Count:
		return p.fail(at, "= compares counts (dropped=0); use <, <=, > or >= for %s", s)
	case t.Kind == Count && (t.Value < 0 || t.Value != math.Trunc(t.Value) || t.Value > 1<<53):
		return p.fail(at, "a count must be a whole number >= 0, not %q", s)
	case t.Drift && t.Kind == Percent && t.Value <= -1:
		return p.fail(at, "a relative change must be above -100%%, not %q", s)
	case !t.Drift && t.Kind == Percent && (t.Value < 0 || t.Value > 1):
		return p.fail(at, "a percentage must be between 0%% and 100%%, not %q", s)
	case !t.Drift && t.Value < 0:
		return p.fail(at, "%q must not be negative", s)
	case t.Kind == Rate && !(t.Value > 0 && t.Value <= 1e12):
		return p.fail(at, "a rate must be above 0 and at most 1e12/s, not %q", s)
	}
	return nil
}

// MetricName is the check's metric as written (p99, errors, ...).
func (t Check) MetricName() string {
	switch t.Metric {
	case Quantile:
		return "p" + strconv.FormatFloat(t.Q, 'f', -1, 64)
	case Max:
		return "max"
	case Mean:
		return "mean"
	case Errors:
		return "errors"
	case Failed:
		return "failed"
	case Dropped:
		return "dropped"
	case TargetMemory:
		return "target.memory"
	case TargetStorage:
		return "target.storage"
	case TargetStoragePerValue:
		return "target.storage_per_value"
	}
	return "achieved"
}

// byteUnits are the units of a size, longest first so that "MiB" is not
// read as "B".
var byteUnits = []struct {
	unit string
	mult float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// bytesValue parses a size: a plain decimal number and a unit of
// byteUnits, decimal or binary as written.
func bytesValue(s string) (float64, bool) {
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.unit); ok {
			v, err := finite(num)
			if err != nil || strings.ContainsAny(num, "eE") {
				return 0, false
			}
			v *= u.mult
			return v, !math.IsInf(v, 0)
		}
	}
	return 0, false
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

// Pass reports whether v satisfies the check.
func (t Check) Pass(v float64) bool {
	switch t.Cmp {
	case LT:
		return v < t.Value
	case LE:
		return v <= t.Value
	case GT:
		return v > t.Value
	case GE:
		return v >= t.Value
	}
	return v == t.Value
}

// Worse reports whether a is further on the failing side than b: higher
// for < and <=, lower for > and >=, further from the value for =.
func (t Check) Worse(a, b float64) bool {
	switch t.Cmp {
	case LT, LE:
		return a > b
	case GT, GE:
		return a < b
	}
	return math.Abs(a-t.Value) > math.Abs(b-t.Value)
}
