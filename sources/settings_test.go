package sources

import "testing"

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
