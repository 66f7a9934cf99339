package sinks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, secret string }{
		{"postgres://u:hunter2@h:5432/db", "postgres://u:xxxxx@h:5432/db", "hunter2"},
		{"influx://h:8086?org=o&token=s3cr3t", "influx://h:8086?org=o&token=xxxxx", "s3cr3t"},
		{"redis://:pw@h:6379/0", "redis://:xxxxx@h:6379/0", "pw"},
		{"null://?latency=2ms", "null://?latency=2ms", ""},
		{"postgres://h/db?password=abc&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable", "abc"},
		{"postgres://u:p%zz@h", "<unparsable URL>", "p%zz"},
	} {
		got := Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.secret != "" && strings.Contains(got, tc.secret) {
			t.Errorf("Redact(%q) leaks %q", tc.in, tc.secret)
		}
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	opened := ""
	r.Add(Entry{Schemes: []string{"a", "b"}, Kinds: []sources.Kind{sources.Series},
		Open: func(_ context.Context, u *url.URL, _ Options) (Sink, error) { opened = u.Scheme; return nil, nil }})
	if got := strings.Join(r.Schemes(), ","); got != "a,b" {
		t.Fatalf("Schemes = %s", got)
	}
	if err := r.Check("A://x", sources.Series); err != nil {
		t.Fatalf("scheme match should ignore case: %v", err)
	}
	if _, err := r.Open(context.Background(), "b://x", Options{Kind: sources.Series}); err != nil || opened != "b" {
		t.Fatalf("Open: %v, opened %q", err, opened)
	}
	for in, want := range map[string]string{
		"c://x":   `unknown scheme "c" (known: a, b)`,
		"a://x":   "does not accept kv workloads",
		"nohost":  "has no scheme",
		"%zz://x": "invalid URL",
	} {
		if err := r.Check(in, sources.KV); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", in, err, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a duplicate scheme must panic")
		}
	}()
	r.Add(Entry{Schemes: []string{"a"}, Open: func(context.Context, *url.URL, Options) (Sink, error) { return nil, nil }})
}

func FuzzRedact(f *testing.F) {
	f.Add("postgres://u:hunter2@h:5432/db?password=x")
	f.Add("redis://:pw@h/0")
	f.Add("%")
	f.Fuzz(func(t *testing.T, s string) {
		got := Redact(s)
		u, err := url.Parse(s)
		if err != nil {
			if got != "<unparsable URL>" {
				t.Fatalf("unparsable %q gave %q", s, got)
			}
			return
		}
		// Judged by structure, not by substring: a password may also be
		// part of the host name, which is not a secret.
		g, err := url.Parse(got)
		if err != nil {
			t.Fatalf("Redact(%q) = %q, which does not parse: %v", s, got, err)
		}
		if _, has := u.User.Password(); has {
			if p, _ := g.User.Password(); p != "xxxxx" || g.User.Username() != u.User.Username() {
				t.Fatalf("Redact(%q) = %q: user info %v, want the password hidden", s, got, g.User)
			}
		}
		for k, vs := range g.Query() {
			for _, v := range vs {
				if SecretParam(k) && v != "xxxxx" {
					t.Fatalf("Redact(%q) = %q: %s=%q, want it hidden", s, got, k, v)
				}
			}
		}
		if g.Host != u.Host || g.Path != u.Path {
			t.Fatalf("Redact(%q) = %q changed the host or path", s, got)
		}
	})
}

func TestClassOf(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]Class{
		io.EOF: Connection,
		fmt.Errorf("read: %w", io.ErrUnexpectedEOF): Connection,
		context.DeadlineExceeded:                    Timeout,
		NewError(Rejected, false, io.EOF):           Rejected,
		errors.New("something else"):                Other,
	} {
		if got := ClassOf(err); got != want {
			t.Errorf("ClassOf(%v) = %s, want %s", err, got, want)
		}
	}
}

// A malformed escape in the URL (here in the password) is refused without
// quoting it: url.Parse's "invalid URL escape "%zz"" showed part of the
// password.
func TestParseHidesAMalformedEscape(t *testing.T) {
	for _, raw := range []string{"redis://:sec%zzret@127.0.0.1:6379/0", "influx1://u:se%4xret@h:8086?db=x", "postgres://u:pw@h/db?password=a%zzb"} {
		_, err := Parse(raw)
		if err == nil {
			_, err = urlparam.ParseQuery(strings.SplitN(raw, "?", 2)[1])
		}
		if err == nil || strings.Contains(err.Error(), "zz") || strings.Contains(err.Error(), "4x") || !strings.Contains(err.Error(), "percent sign") {
			t.Errorf("%s: %v; want the malformed escape said, not quoted", Redact(raw), err)
		}
	}
}
