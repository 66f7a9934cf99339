// Package urlparam declares a sink's URL query parameters once and reads
// them: each parameter has a name, a type, a default, a line of help and
// its validation, and the same declaration parses a URL's query, reports
// every malformed value naming its parameter, refuses parameters the sink
// does not know, and lists the parameters for soakd config --sinks.
//
// A sink declares a Set and reads its URL through it:
//
//	var Params = urlparam.Set{Params: []urlparam.Param{
//		{Name: "timeout", Type: urlparam.Duration, Range: urlparam.Above(0), Help: "bound of one write"},
//		{Name: "create", Type: urlparam.Bool, Default: "true", Help: "create missing tables"},
//	}}
//
//	p := Params.Bind(u.Query())
//	c := Config{Timeout: p.Duration("timeout"), Create: p.Bool("create")}
//	return c, p.Err()
//
// An accessor returns the parameter's value, its default when the URL
// leaves it out, and the default as well when the value is malformed, in
// which case the error is recorded once, in the order the accessors are
// called, and Err returns every one of them joined. Reading a parameter
// the Set does not declare, or with the accessor of another type, is a
// programming error and panics.
package urlparam

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is the kind of value a parameter holds.
type Type uint8

// Types.
const (
	// String is any text; Range bounds its length in bytes.
	String Type = iota + 1
	// Bool is true or false, as strconv.ParseBool reads them (1, t, TRUE, ...).
	Bool
	// Int is a decimal integer within Range.
	Int
	// Float is a number within Range.
	Float
	// Duration is a Go duration (500ms, 1h30m) within Range.
	Duration
	// DurationAt is DURATION@AFTER, a duration that starts at an offset:
	// DURATION within Range, AFTER at least 0.
	DurationAt
	// Enum is one of Choices.
	Enum
	// Path is the path of a local file.
	Path
	// Custom is parsed by the parameter's Parse.
	Custom
)

var typeNames = [...]string{String: "string", Bool: "bool", Int: "int", Float: "number",
	Duration: "duration", DurationAt: "duration@after", Enum: "enum", Path: "path", Custom: "custom"}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "unknown"
}

// Range bounds an Int, Float, Duration (in nanoseconds) or DurationAt
// value, or the length of a String. The zero Range accepts everything.
type Range struct {
	lo, hi float64
	loOpen bool
	set    bool
}

// AtLeast accepts v >= lo.
func AtLeast(lo float64) Range { return Range{lo: lo, hi: math.Inf(1), set: true} }

// Above accepts v > lo.
func Above(lo float64) Range { return Range{lo: lo, hi: math.Inf(1), loOpen: true, set: true} }

// Within accepts lo <= v <= hi.
func Within(lo, hi float64) Range { return Range{lo: lo, hi: hi, set: true} }

// AtMost returns r with the upper bound hi (inclusive).
func (r Range) AtMost(hi float64) Range {
	if !r.set {
		r = AtLeast(math.Inf(-1))
	}
	r.hi = hi
	return r
}

// Contains reports whether v is within r; NaN never is, unless r is the
// zero Range.
func (r Range) Contains(v float64) bool {
	if !r.set {
		return true
	}
	if r.loOpen {
		return v > r.lo && v <= r.hi
	}
	return v >= r.lo && v <= r.hi
}

// String describes r for the parameter list, for values of type t.
func (r Range) String(t Type) string {
	if !r.set {
		return ""
	}
	f := func(v float64) string {
		if t == Duration || t == DurationAt {
			return time.Duration(v).String()
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	switch {
	case math.IsInf(r.hi, 1) && r.loOpen:
		return "> " + f(r.lo)
	case math.IsInf(r.hi, 1):
		return ">= " + f(r.lo)
	case r.loOpen:
		return "> " + f(r.lo) + ", <= " + f(r.hi)
	}
	return f(r.lo) + ".." + f(r.hi)
}

// Param declares one URL parameter.
type Param struct {
	// Name is the query parameter's name.
	Name string
	// Type is its kind of value.
	Type Type
	// Default is the value used when the URL leaves the parameter out,
	// written as in a URL; "" is the type's zero value (nil for Custom).
	// It must be valid: Set.Validate checks it.
	Default string
	// Help is one line for the parameter list.
	Help string
	// Want completes the error for a malformed value, "NAME "VALUE":
	// want WANT"; "" derives it from the type.
	Want string
	// Label names the parameter in that error when it is not Name (e.g.
	// "database" for db=, which the URL path may give as well).
	Label string
	// Range bounds numbers, durations and string lengths.
	Range Range
	// Valid, when set, checks a value the type accepts further.
	Valid func(s string) bool
	// Syntax shows how a value is written in the parameter list, when
	// the type alone does not say it.
	Syntax string
	// Choices are an Enum's values, each "name" or "name|alias|...";
	// the accessor returns the name.
	Choices []string
	// Fold makes an Enum ignore case.
	Fold bool
	// Parse parses a Custom value; its error is reported as it is, so it
	// names the parameter itself.
	Parse func(s string) (any, error)
	// KeepEmpty: "name=" is a value, checked like any other (usually
	// malformed), rather than the same as leaving the parameter out.
	KeepEmpty bool
	// Multi: the parameter may be given more than once (see All).
	Multi bool
	// Secret: the value is a secret, never repeated in an error.
	Secret bool
	// Group restricts the parameter to one variant of the sink (e.g. an
	// API version); "" is every variant. See Query.CheckUnknown.
	Group string
}

// label is the name errors use.
func (p *Param) label() string {
	if p.Label != "" {
		return p.Label
	}
	return p.Name
}

// want is what a malformed value's error says the value should be.
func (p *Param) want() string {
	if p.Want != "" {
		return p.Want
	}
	r := p.Range.String(p.Type)
	if r != "" {
		r = " " + r
	}
	switch p.Type {
	case Bool:
		return "true or false"
	case Int:
		if p.Range.set && !p.Range.loOpen && !math.IsInf(p.Range.hi, 1) {
			return fmt.Sprintf("an integer %s..%s", strconv.FormatFloat(p.Range.lo, 'f', -1, 64), strconv.FormatFloat(p.Range.hi, 'f', -1, 64))
		}
		return "an integer" + r
	case Float:
		return "a number" + r
	case Duration:
		return "a duration like 5s" + r
	case DurationAt:
		return "DURATION@AFTER, e.g. 1s@10s"
	case Enum:
		return orList(p.names())
	case Path:
		return "the path of a file"
	}
	if p.Range.set {
		return "a value of length" + r
	}
	return "a valid value"
}

// names are an Enum's choices without their aliases.
func (p *Param) names() []string {
	out := make([]string, len(p.Choices))
	for i, c := range p.Choices {
		out[i], _, _ = strings.Cut(c, "|")
	}
	return out
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// bad is the error for a malformed value s.
func (p *Param) bad(s string) error {
	if p.Secret {
		return fmt.Errorf("%s: want %s", p.label(), p.want())
	}
	return fmt.Errorf("%s %q: want %s", p.label(), s, p.want())
}

// Value parses s as the parameter's value, reporting a malformed one
// with the parameter's error.
func (p *Param) Value(s string) (any, error) {
	if p.Parse != nil {
		return p.Parse(s)
	}
	v, ok := p.value(s)
	if !ok || p.Valid != nil && !p.Valid(s) {
		return nil, p.bad(s)
	}
	return v, nil
}

// value parses s by the parameter's type.
func (p *Param) value(s string) (any, bool) {
	switch p.Type {
	case String, Path:
		return s, p.Range.Contains(float64(len(s))) && (p.Type != Path || s != "")
	case Bool:
		b, err := strconv.ParseBool(s)
		return b, err == nil
	case Int:
		n, err := strconv.Atoi(s)
		return n, err == nil && p.Range.Contains(float64(n))
	case Float:
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && p.Range.Contains(f)
	case Duration:
		d, err := time.ParseDuration(s)
		return d, err == nil && p.Range.Contains(float64(d))
	case DurationAt:
		return parseAt(s, p.Range)
	case Enum:
		return p.choice(s)
	}
	panic("BUG: urlparam: parameter " + p.Name + " has no parser")
}

// At is a DurationAt value.
type At struct {
	D, After time.Duration
}

func parseAt(s string, r Range) (At, bool) {
	d, after, ok := strings.Cut(s, "@")
	if !ok {
		return At{}, false
	}
	v, err1 := time.ParseDuration(d)
	at, err2 := time.ParseDuration(after)
	return At{v, at}, err1 == nil && err2 == nil && r.Contains(float64(v)) && at >= 0
}

func (p *Param) choice(s string) (string, bool) {
	if p.Fold {
		s = strings.ToLower(s)
	}
	for _, c := range p.Choices {
		for _, alias := range strings.Split(c, "|") {
			if alias == s {
				name, _, _ := strings.Cut(c, "|")
				return name, true
			}
		}
	}
	return "", false
}

// zero is the value of an absent parameter without a default.
func (p *Param) zero() any {
	switch p.Type {
	case String, Path, Enum:
		return ""
	case Bool:
		return false
	case Int:
		return 0
	case Float:
		return 0.0
	case Duration:
		return time.Duration(0)
	case DurationAt:
		return At{}
	}
	return nil
}

// Set is a sink's parameters.
type Set struct {
	Params []Param
	// Unknown is the error for a parameter the set does not declare, or
	// declares for another group than the one checked (see
	// Query.CheckUnknown); it may return nil to let the parameter through
	// (to a driver that reads it). nil: "unknown parameter NAME (known:
	// the declared names)".
	Unknown func(name, group string) error
	// Repeated is the error for a parameter given n > 1 times that is not
	// Multi; nil: a repeated parameter's first value counts.
	Repeated func(name string, n int) error
	// RepeatedUnknown: Repeated judges undeclared parameters too.
	RepeatedUnknown bool
}

// Lookup returns the parameter named name, or nil.
func (s *Set) Lookup(name string) *Param {
	for i := range s.Params {
		if s.Params[i].Name == name {
			return &s.Params[i]
		}
	}
	return nil
}

// Names lists the parameters of group (and of every group: ""), in
// declaration order; group "*" lists them all.
func (s *Set) Names(group string) []string {
	var out []string
	for _, p := range s.Params {
		if group == "*" || p.Group == "" || p.Group == group {
			out = append(out, p.Name)
		}
	}
	return out
}

// Validate checks the declaration: names given once, every parameter
// with a type and parser, and every default valid. Each sink's tests
// call it.
func (s *Set) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i := range s.Params {
		p := &s.Params[i]
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("parameter %d has no name", i))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("parameter %s declared twice", p.Name))
		case p.Type == 0 || p.Type > Custom:
			errs = append(errs, fmt.Errorf("parameter %s has no type", p.Name))
		case p.Type == Custom && p.Parse == nil:
			errs = append(errs, fmt.Errorf("parameter %s: a Custom parameter needs Parse", p.Name))
		case p.Type == Enum && len(p.Choices) == 0 && p.Parse == nil:
			errs = append(errs, fmt.Errorf("parameter %s: an Enum needs Choices", p.Name))
		case p.Help == "":
			errs = append(errs, fmt.Errorf("parameter %s has no help", p.Name))
		case p.Default != "":
			if _, err := p.Value(p.Default); err != nil {
				errs = append(errs, fmt.Errorf("parameter %s: default: %w", p.Name, err))
			}
		}
		seen[p.Name] = true
	}
	return errors.Join(errs...)
}

// Bind reads q against s and checks that no parameter is repeated
// (Set.Repeated) and that every one is known (Set.Unknown).
func (s *Set) Bind(q url.Values) *Query {
	p := s.Read(q)
	p.CheckRepeated()
	p.CheckUnknown("")
	return p
}

// Read reads q against s without checking anything yet: for a sink whose
// known parameters depend on one of them (see CheckUnknown).
func (s *Set) Read(q url.Values) *Query {
	return &Query{set: s, q: q, vals: map[string]any{}}
}

// Query is a URL query read against a Set.
type Query struct {
	set  *Set
	q    url.Values
	vals map[string]any // parsed values (or the default), by name
	errs []error
}

// CheckRepeated records an error for every parameter given more than
// once that may not be, in name order.
func (p *Query) CheckRepeated() {
	if p.set.Repeated == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(p.q)) {
		d := p.set.Lookup(k)
		if n := len(p.q[k]); n > 1 && (d != nil && !d.Multi || d == nil && p.set.RepeatedUnknown) {
			p.Add(p.set.Repeated(k, n))
		}
	}
}

// CheckUnknown records an error for every parameter that s does not
// declare for group (group "" checks against every declared parameter),
// in name order.
func (p *Query) CheckUnknown(group string) {
	for _, k := range slices.Sorted(maps.Keys(p.q)) {
		d := p.set.Lookup(k)
		if d != nil && (group == "" || d.Group == "" || d.Group == group) {
			continue
		}
		if p.set.Unknown != nil {
			p.Add(p.set.Unknown(k, group))
			continue
		}
		p.Add(fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(p.set.Names(group), ", ")))
	}
}

// Add records err (nil is ignored).
func (p *Query) Add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// Addf records an error.
func (p *Query) Addf(format string, args ...any) { p.Add(fmt.Errorf(format, args...)) }

// Err returns every error recorded, joined, or nil.
func (p *Query) Err() error { return errors.Join(p.errs...) }

// Values returns the query as read.
func (p *Query) Values() url.Values { return p.q }

// Has reports whether the URL gives the parameter, even empty.
func (p *Query) Has(name string) bool { return p.q.Has(name) }

// Raw returns the parameter's first value as written ("" when absent).
func (p *Query) Raw(name string) string { return p.q.Get(name) }

// All returns every value of a Multi parameter, as written.
func (p *Query) All(name string) []string { return p.q[p.param(name, 0).Name] }

// Given reports whether the URL sets the parameter (an empty value counts
// unless it is KeepEmpty) to a valid value. A malformed value's error is
// recorded as by the accessors.
func (p *Query) Given(name string) bool {
	d := p.param(name, 0)
	p.get(d)
	_, ok := p.vals[d.Name].(malformed)
	return p.present(d) && !ok
}

// malformed marks a value whose error is recorded (the accessors return
// the default instead).
type malformed struct{}

func (p *Query) present(d *Param) bool {
	return p.q.Has(d.Name) && (d.KeepEmpty || p.q.Get(d.Name) != "")
}

// get returns d's value: parsed from the URL, or the default.
func (p *Query) get(d *Param) any {
	v, done := p.vals[d.Name]
	if !done {
		v = p.parse(d)
		p.vals[d.Name] = v
	}
	if _, bad := v.(malformed); bad {
		return p.def(d)
	}
	return v
}

func (p *Query) parse(d *Param) any {
	if !p.present(d) {
		return p.def(d)
	}
	v, err := d.Value(p.q.Get(d.Name))
	if err != nil {
		p.Add(err)
		return malformed{}
	}
	return v
}

func (p *Query) def(d *Param) any {
	if d.Default == "" {
		return d.zero()
	}
	v, err := d.Value(d.Default)
	if err != nil {
		panic("BUG: urlparam: parameter " + d.Name + ": invalid default: " + err.Error())
	}
	return v
}

// param returns the declaration of name, checking its type (0: any).
func (p *Query) param(name string, t Type) *Param {
	d := p.set.Lookup(name)
	if d == nil {
		panic("BUG: urlparam: parameter " + name + " is not declared")
	}
	if t != 0 && (d.Type != t || d.Parse != nil) {
		panic(fmt.Sprintf("BUG: urlparam: parameter %s is a %s, read as a %s", name, d.Type, t))
	}
	return d
}

// String returns a String parameter.
func (p *Query) String(name string) string { return p.get(p.param(name, String)).(string) }

// Path returns a Path parameter.
func (p *Query) Path(name string) string { return p.get(p.param(name, Path)).(string) }

// Bool returns a Bool parameter.
func (p *Query) Bool(name string) bool { return p.get(p.param(name, Bool)).(bool) }

// Int returns an Int parameter.
func (p *Query) Int(name string) int { return p.get(p.param(name, Int)).(int) }

// Float returns a Float parameter.
func (p *Query) Float(name string) float64 { return p.get(p.param(name, Float)).(float64) }

// Duration returns a Duration parameter.
func (p *Query) Duration(name string) time.Duration {
	return p.get(p.param(name, Duration)).(time.Duration)
}

// DurationAt returns a DurationAt parameter: the duration and its offset.
func (p *Query) DurationAt(name string) (d, after time.Duration) {
	v := p.get(p.param(name, DurationAt)).(At)
	return v.D, v.After
}

// BoolOr returns a Bool parameter, or def when the URL does not give it
// (or gives a malformed value): for a default that depends on other
// parameters.
func (p *Query) BoolOr(name string, def bool) bool {
	if p.Given(name) {
		return p.Bool(name)
	}
	return def
}

// Enum returns an Enum parameter's choice (its first name).
func (p *Query) Enum(name string) string { return p.get(p.param(name, Enum)).(string) }

// Value returns a parameter parsed by its Parse (nil when absent without
// a default, or malformed without one).
func (p *Query) Value(name string) any { return p.get(p.param(name, 0)) }

// ParseQuery parses a URL's raw query as url.ParseQuery does, but its
// error never quotes the malformed escape: it may sit in a secret (a
// password= or token= value), which errors must not show.
func ParseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return q, fmt.Errorf("invalid query string: %w", HideEscape(err))
	}
	return q, nil
}

// ErrMalformedEscape is url.EscapeError without the escape it quotes.
var ErrMalformedEscape = errors.New("a percent sign not followed by two hexadecimal digits (a literal one is written percent-encoded)")

// HideEscape returns ErrMalformedEscape for a url.EscapeError, which
// quotes the malformed escape (part of a password, perhaps), else err.
func HideEscape(err error) error {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		if len(esc) == 3 && isHex(esc[1]) && isHex(esc[2]) {
			// A well-formed escape url.Parse refuses: one in the host.
			return ErrEscapeInHost
		}
		return ErrMalformedEscape
	}
	return err
}

// ErrEscapeInHost is url.EscapeError for a well-formed escape in the
// host, which url.Parse refuses, without the escape it quotes.
var ErrEscapeInHost = errors.New("the host is percent-encoded: write a host name or address as it is (a Unix socket path is not a target)")

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
