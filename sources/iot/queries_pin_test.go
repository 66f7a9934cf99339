package iot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// queriesDigest hashes the text of the first n queries of each stream of
// two of query source name's streams with seed and scale.
func queriesDigest(t *testing.T, name string, c QueryConfig, seed uint64, n int) string {
	t.Helper()
	q, err := NewQueries(name, c, seed)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for part := range 2 {
		st, err := q.Stream(part, 2)
		if err != nil {
			t.Fatal(err)
		}
		b := q.NewBatch()
		_ = st.Fill(b, n, 0)
		for _, qq := range b.Queries {
			fmt.Fprintf(h, "%s %v %q %v %.17g %v %v\n", qq.Type, qq.Devices[:qq.NDevices], qq.Fleet, qq.LoadCapacities, qq.Pos, qq.Latest, qq.Expect)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Without CHURN the queries are those soakd made before CHURN existed:
// the digests were recorded from that version.
func TestQueriesUnchangedWithoutChurn(t *testing.T) {
	t.Parallel()
	devops := DefaultQueryConfig()
	iotc := DefaultQueryConfig()
	iotc.Scale = 1000
	iotc.Window = WindowLatest
	for _, tc := range []struct {
		name string
		c    QueryConfig
		seed uint64
		want string
	}{
		{"devops-queries", devops, 1, "abdb3509941aafc2f9f85f26e8e654ea17caccaafaa3e3f9b8eaabdfe6df329f"},
		{"devops-queries", devops, 42, "921359797bdc2cac456257eed680cb3a5002395801b2c81669e35b31a60e092b"},
		{"iot-queries", iotc, 7, "a0f6bc9957378d5d1af8c9cc3fbf486b296314b6725fac8d0d524817125b9f3a"},
	} {
		if got := queriesDigest(t, tc.name, tc.c, tc.seed, 2000); got != tc.want {
			t.Errorf("%s seed %d: queries digest %s, want %s", tc.name, tc.seed, got, tc.want)
		}
	}
}
