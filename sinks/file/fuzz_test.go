package file

import (
	"testing"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"-", "file:///tmp/x", "file://rel/x.csv?format=csv", "file:x?append=1&precision=ms",
		"file:///x?format=pgcopy&format=csv", "file://%zz", "file://?", "file:///a b?format=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := sinks.Parse(raw)
		if err != nil {
			return
		}
		c, err := ParseURL(u)
		if err != nil {
			if Check(u, sources.Series) == nil {
				t.Fatalf("%q: ParseURL fails but Check passes", raw)
			}
			return
		}
		if c.Path == "" || c.Format > PGCopy {
			t.Fatalf("%q parsed to %+v", raw, c)
		}
	})
}
