package remotewrite

import (
	"bytes"
	"io"
	"net/http"
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

// FuzzReadMessage: whatever a server answers, the message an error quotes
// from it is text (printable UTF-8 and whitespace) and short: from at
// most maxMessage bytes of the answer, each quoted binary of at least 4
// of them ("\a") told in under 5 times as many; reading never panics.
func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{"out of order sample", "incorrect line \"\\xf1\\x01\\n\": cannot parse", "\x0a\x1a\x00\xff",
		`cut "\x00\x01\x0`, `a lone " quote`, strings.Repeat("é", maxMessage), strings.Repeat(`"\x00`, 300)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg := readMessage(&http.Response{Body: io.NopCloser(bytes.NewReader(body))})
		if !isText(msg) {
			t.Errorf("message %q of %q is not text", msg, body)
		}
		if len(msg) > 5*maxMessage+len("...") {
			t.Errorf("message of %d bytes from an answer of %d", len(msg), len(body))
		}
	})
}
