package settings

import (
	"math"
	"strings"
	"testing"
)

func TestParseCount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"1000000": 1e6, "1e6": 1e6, "1_000_000": 1e6, "1M": 1e6, "2.5k": 2500, "2.5e3": 2500, "3G": 3e9,
		" 42 ": 42, "-3": -3, "1E12": 1e12, "9223372036854775807": 9223372036854775807, "0": 0, "007": 7,
	} {
		if got, err := ParseCount(in); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"1.5": "not a whole number", "1e-3": "not a whole number", "1.0001k": "not a whole number",
		"1e19": "overflows", "9223372036854775808": "overflows", "1e999999999": "overflows", "10000000000G": "overflows",
		// Below the smallest count the error gives that bound, not the largest.
		"-9223372036854775809": "overflows a count (at least -9223372036854775808)", "-1e50": "overflows a count (at least -9223372036854775808)",
		"1m": "lower-case m is ambiguous: write M for a million (1M)",
		"":   "not a count", "x": "not a count", "0x10": "not a count", "1__0": "not a count", "_1": "not a count",
		"1_": "not a count", "Inf": "not a count", "NaN": "not a count", "1/2": "not a count", "1e": "not a count",
	} {
		if got, err := ParseCount(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCount(%q) = %d, %v; want an error with %q", in, got, err, want)
		}
	}
}

// A uint64 setting (SEED) takes counts as the other whole-number
// settings do, over its whole range. Bug caught: SEED=1e6, 1_000 or 1M
// were refused with strconv.ParseUint's raw error.
func TestUintCountSetting(t *testing.T) {
	t.Parallel()
	type opts struct {
		Seed uint64 `env:"SEED" envDefault:"1" help:"seed"`
	}
	for in, want := range map[string]uint64{"1e6": 1e6, "1_000": 1000, "1M": 1e6, "42": 42, "18446744073709551615": math.MaxUint64, "1.8e19": 18e18} {
		var o opts
		if err := Parse(&o, map[string]string{"SOAKD_GEN_SEED": in}, "SOAKD_GEN_"); err != nil || o.Seed != want {
			t.Errorf("SEED=%s: %d, %v; want %d", in, o.Seed, err, want)
		}
	}
	for in, want := range map[string]string{"-1": "negative", "-1e50": "is negative", "-1e20": "is negative", "1e20": "overflows a count (at most 18446744073709551615)", "x": "not a count", "1.5": "not a whole number"} {
		var o opts
		err := Parse(&o, map[string]string{"SOAKD_GEN_SEED": in}, "SOAKD_GEN_")
		if err == nil || !strings.Contains(err.Error(), "SOAKD_GEN_SEED: ") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "strconv") {
			t.Errorf("SEED=%s: %v; want an error naming SOAKD_GEN_SEED with %q", in, err, want)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"1e6", "1_000_000", "1M", "2.5k", "1.5", "1e-3", "1e19", "1e999999999", "1m", "-0",
		"9223372036854775807", "9223372036854775808", ".5k", "5.", "1_0.0_1e1_0", "0x1p3", "+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCount(s)
		if err != nil {
			if n != 0 {
				t.Fatalf("ParseCount(%q) = %d with error %v", s, n, err)
			}
			return
		}
		// What is accepted is a whole number written in decimal: never a
		// lower-case m, hex or a fraction.
		if strings.HasSuffix(strings.TrimSpace(s), "m") || strings.ContainsAny(s, "xXpP/") {
			t.Fatalf("ParseCount(%q) accepted as %d", s, n)
		}
		if m, err := ParseCount(strings.ReplaceAll(s, "_", "")); err != nil || m != n {
			t.Fatalf("ParseCount(%q) = %d but without _ %d, %v", s, n, m, err)
		}
		// A uint64 setting reads every count that is not negative alike.
		if u, err := ParseUintCount(s); n >= 0 && (err != nil || u != uint64(n)) || n < 0 && err == nil {
			t.Fatalf("ParseCount(%q) = %d but ParseUintCount %d, %v", s, n, u, err)
		}
	})
}
