package summary

import (
	"strings"
	"testing"
)

// Figures kept from being read by one reason are listed before it once, a
// line per reason, so a store that refuses INFO sections says which.
func TestTextNotReadSaysWhy(t *testing.T) {
	var b strings.Builder
	writeNotRead(&b, map[string]string{
		"memory":                     "the server refuses INFO memory: ERR unknown section",
		"memory_fragmentation_ratio": "the server refuses INFO memory: ERR unknown section",
		"cpu":                        "the server refuses INFO cpu: ERR unknown section",
		"storage.rdb":                "",
	})
	want := "  not read: cpu (the server refuses INFO cpu: ERR unknown section)\n" +
		"  not read: memory, memory_fragmentation_ratio (the server refuses INFO memory: ERR unknown section)\n" +
		"  not read: storage.rdb\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
