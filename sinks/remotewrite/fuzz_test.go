package remotewrite

import (
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks/sinktest"
)

// FuzzParseURL: Check never panics nor shows the URL's password, and a
// URL it accepts has a host, an absolute write path and valid constant
// labels.
func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, func(t *testing.T, u *url.URL) {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatalf("Check accepted what ParseURL refuses: %v", err)
		}
		if c.Host == "" || !strings.HasPrefix(c.Path, "/") {
			t.Errorf("host %q path %q", c.Host, c.Path)
		}
		for _, l := range c.Labels {
			if !validLabelName(l.Name) || l.Value == "" {
				t.Errorf("label %+v", l)
			}
		}
	},
		"prom+http://127.0.0.1:9090/api/v1/write",
		"prom+https://u:s3cret@h:443/api/v1/push?header=X-Scope-OrgID:t1&label=run:a&timeout=5s",
		"prom+http://h/?header=Authorization:Bearer%20s3cret",
		"prom+http://h/?label=__name__:x&insecure=true&idempotent=maybe",
	)
}
