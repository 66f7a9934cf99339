package settings

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/soakd/soakd/pace"
)

// decimal is a number as users write counts: digits with an optional
// fraction and exponent (1e6, 2.5e3), never hex, octal or Inf.
var decimal = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE]([+-]?\d+))?$`)

const countHint = "want a whole number like 1000000, 1e6, 1_000_000 or 1M"

// ParseCount parses a count (RECORDS, SCALE, WORKERS, ...): a whole number
// written plainly (1000000), with _ between digits (1_000_000), in
// e-notation (1e6, 2.5e3) or with a k, M or G suffix (1M, 2.5k). A value
// that is not whole (1.5, 1e-3) or does not fit in an int64 is an error
// that says so, so a size check sees 1e12 as the number it is rather than
// a syntax error. Lower-case m is refused: it reads as milli as often as
// mega.
func ParseCount(s string) (int64, error) {
	n, err := parseCount(s, false)
	if err != nil {
		return 0, err
	}
	return n.Int64(), nil
}

// ParseUintCount parses a count as ParseCount does into a uint64 (SEED):
// its whole range, 0 to 18446744073709551615, and no negative number.
func ParseUintCount(s string) (uint64, error) {
	n, err := parseCount(s, true)
	if err != nil {
		return 0, err
	}
	return n.Uint64(), nil
}

// parseCount is ParseCount and ParseUintCount: the count s, which fits in
// an int64, or with unsigned in a uint64 and not negative.
func parseCount(s string, unsigned bool) (*big.Int, error) {
	max := new(big.Int).SetInt64(math.MaxInt64)
	if unsigned {
		max.SetUint64(math.MaxUint64)
	}
	t := strings.TrimSpace(s)
	negative := strings.HasPrefix(t, "-")
	overflow := func() error {
		switch {
		case negative && unsigned:
			return fmt.Errorf("%q is negative (want 0 or more)", s)
		case negative:
			return fmt.Errorf("%q overflows a count (at least %d)", s, int64(math.MinInt64))
		}
		return fmt.Errorf("%q overflows a count (at most %s)", s, max)
	}
	mult, unit := int64(1), ""
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult, unit = 1e3, t[n-1:]
		case 'M':
			mult, unit = 1e6, "M"
		case 'G':
			mult, unit = 1e9, "G"
		case 'm':
			return nil, fmt.Errorf("%q: lower-case m is ambiguous: write M for a million (%sM)", s, t[:n-1])
		}
		t = t[:len(t)-len(unit)]
	}
	if strings.Contains(t, "_") {
		// As in Go literals: a _ only between two digits.
		for i := range len(t) {
			if t[i] == '_' && (i == 0 || i == len(t)-1 || !isDigit(t[i-1]) || !isDigit(t[i+1])) {
				return nil, fmt.Errorf("%q is not a count (%s)", s, countHint)
			}
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	m := decimal.FindStringSubmatch(t)
	if m == nil {
		return nil, fmt.Errorf("%q is not a count (%s)", s, countHint)
	}
	// An exponent this large overflows whatever the digits; checking first
	// keeps big.Rat from building a number of millions of digits.
	if m[3] != "" {
		if e, err := strconv.Atoi(m[3]); err != nil || e > 40 {
			return nil, overflow()
		} else if e < -40 {
			return nil, fmt.Errorf("%q is not a whole number (%s)", s, countHint)
		}
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return nil, fmt.Errorf("%q is not a count (%s)", s, countHint)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return nil, fmt.Errorf("%q is not a whole number (%s)", s, countHint)
	}
	n := r.Num()
	if unsigned && n.Sign() < 0 {
		return nil, fmt.Errorf("%q is negative (want 0 or more)", s)
	}
	if n.Cmp(max) > 0 || n.Cmp(big.NewInt(math.MinInt64)) < 0 {
		return nil, overflow()
	}
	return n, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ParseNumber parses a number setting (MAX_RATE, CAPACITY_START,
// HOTSPOT_OPS): what strconv.ParseFloat reads, or a number with a k, M or
// G suffix as a rate in RATE is written (2.5k, 1M, 1g). Lower-case m is
// refused as in counts. A value that is no number is strconv's
// error, which says so.
func ParseNumber(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 1 && t[n-1] == 'm' {
		if v, err := strconv.ParseFloat(t[:n-1], 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			return 0, fmt.Errorf("%q: lower-case m is ambiguous: write M for a million (%sM)", s, t[:n-1])
		}
	}
	mult := 1.0
	if len(t) > 1 {
		t, mult = pace.SplitSuffix(t)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	if w := v * mult; math.IsInf(w, 0) && !math.IsInf(v, 0) {
		// 1e308k: in range as written, out of it once multiplied.
		return 0, &strconv.NumError{Func: "ParseFloat", Num: s, Err: strconv.ErrRange}
	}
	return v * mult, nil
}

// envOptions are the options every setting is parsed with: the
// environment, the prefix, counts read by ParseCount and numbers by
// ParseNumber.
func envOptions(environ map[string]string, prefix string) env.Options {
	return env.Options{Environment: environ, Prefix: prefix, FuncMap: map[reflect.Type]env.ParserFunc{
		reflect.TypeOf(float64(0)): func(v string) (any, error) { return ParseNumber(v) },
		reflect.TypeOf(int64(0)):   func(v string) (any, error) { return ParseCount(v) },
		reflect.TypeOf(uint64(0)):  func(v string) (any, error) { return ParseUintCount(v) },
		reflect.TypeOf(int(0)): func(v string) (any, error) {
			n, err := ParseCount(v)
			if err == nil && int64(int(n)) != n {
				err = errors.New(v + " overflows an int")
			}
			return int(n), err
		},
	}}
}
