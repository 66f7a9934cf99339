package config

import "testing"

// Worker and batch lists parse, sort and refuse what is not a list of
// positive numbers.
func TestIntList(t *testing.T) {
	var l IntList
	if err := l.UnmarshalText([]byte("8, 1,2,2")); err != nil || len(l) != 3 || l[0] != 1 || l[2] != 8 {
		t.Errorf("got %v, %v", l, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "a", "-1", "1e9"} {
		if err := l.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
