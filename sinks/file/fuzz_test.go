package file

import (
	"net/url"
	"testing"

	"github.com/soakd/soakd/sinks/sinktest"
)

func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, func(t *testing.T, u *url.URL) {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatalf("Check accepts %s, ParseURL does not: %v", u, err)
		}
		if c.Path == "" || c.Format > PGCopy {
			t.Fatalf("%s parsed to %+v", u, c)
		}
	}, "-", "file:///tmp/x", "file://rel/x.csv?format=csv", "file:x?append=1&precision=ms",
		"file:///x?format=pgcopy&format=csv", "file://%zz", "file://?", "file:///a b?format=%00")
}
