package sources

import (
	"errors"
	"strings"
	"testing"
)

// TestShardSplitPartitions checks that the parts of every shard are
// disjoint and together own exactly the shard's items.
func TestShardSplitPartitions(t *testing.T) {
	t.Parallel()
	for _, sh := range []Shard{{}, {0, 1}, {0, 2}, {1, 2}, {2, 3}, {1, 4}} {
		for parts := 1; parts <= 5; parts++ {
			for i := uint64(0); i < 200; i++ {
				owners := 0
				for p := 0; p < parts; p++ {
					if sh.Split(p, parts).Owns(i) {
						owners++
					}
				}
				want := 0
				if sh.Owns(i) {
					want = 1
				}
				if owners != want {
					t.Fatalf("shard %v split %d: item %d owned by %d parts, want %d", sh, parts, i, owners, want)
				}
			}
		}
	}
}

func TestParseDataType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]DataType{"": DataTypeHash, "hash": DataTypeHash, " String ": DataTypeString,
		"SET": DataTypeSet, "zset": DataTypeZSet} {
		if got, err := ParseDataType(in); err != nil || got != want {
			t.Errorf("ParseDataType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"list", "hashes", "z set"} {
		if _, err := ParseDataType(in); err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseDataType(%q) error %v, want one naming the value", in, err)
		}
	}
}

// Checked makes the zero shard the whole data set and refuses an index
// outside 0..N-1 as a SHARD error, which the sources return as is.
func TestShardChecked(t *testing.T) {
	if s, err := (Shard{}).Checked(); err != nil || s != (Shard{Index: 0, Count: 1}) {
		t.Errorf("zero shard: %v, %v; want 0/1", s, err)
	}
	if s, err := (Shard{Index: 2, Count: 3}).Checked(); err != nil || s != (Shard{Index: 2, Count: 3}) {
		t.Errorf("2/3: %v, %v", s, err)
	}
	for _, bad := range []Shard{{Index: 3, Count: 3}, {Index: -1, Count: 2}} {
		var se *SettingError
		if _, err := bad.Checked(); !errors.As(err, &se) || se.Setting != "SHARD" {
			t.Errorf("%d/%d: %v, want a SHARD error", bad.Index, bad.Count, err)
		}
	}
}
