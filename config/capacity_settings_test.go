package config

import (
	"math"
	"testing"
)

// The step and share grammars never panic, and what they accept is a
// growing step or a share in [0, 1].
func FuzzCapacityGrammar(f *testing.F) {
	for _, s := range []string{"x1.5", "+1000", "*2", "x1", "+0", "x", "+-5", "xNaN", "+Inf", "0.1%", "0.001", "200%", "-1%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var g Growth
		if g.UnmarshalText([]byte(s)) == nil {
			if r := g.Next(1000); !(r > 1000) || math.IsInf(r, 0) {
				t.Fatalf("step %q: next(1000) = %v", s, r)
			}
		}
		var r Ratio
		if r.UnmarshalText([]byte(s)) == nil && !(r >= 0 && r <= 1) {
			t.Fatalf("share %q = %v", s, r)
		}
	})
}
