package sinks

import "testing"

// Every class has its own slot; a class no sink should return (a typo)
// lands in Other's, never out of range.
func TestClassIndex(t *testing.T) {
	seen := map[int]bool{}
	for i, c := range Classes {
		if got := c.Index(); got != i {
			t.Errorf("%s.Index() = %d, want %d", c, got, i)
		}
		seen[c.Index()] = true
	}
	if len(seen) != len(Classes) {
		t.Errorf("classes share slots: %v", seen)
	}
	if Classes[len(Classes)-1] != Other {
		t.Errorf("Other must be the last class (Index maps unknown classes to the last slot): %v", Classes)
	}
	for _, c := range []Class{"", "mystery", "Timeout"} {
		if got := c.Index(); got != Other.Index() {
			t.Errorf("Class(%q).Index() = %d, want Other's %d", c, got, Other.Index())
		}
	}
}
