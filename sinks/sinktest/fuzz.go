package sinktest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// FuzzURL is the body of every sink's URL fuzz target. Go fuzzes the
// FuzzXxx functions of one package, so each sink keeps a one-line target
// that passes its CheckFunc and seeds (the package's testdata/fuzz corpus
// is used as well):
//
//	func FuzzParseURL(f *testing.F) { sinktest.FuzzURL(f, Check, nil, "null://", "null://?latency=2ms") }
//
// For every input sinks.Parse accepts, check, called as for a series and
// a KV workload, must not panic, and its error must not show a secret of
// the URL: the password, or the value of a parameter sinks.SecretParam
// names (password=, token=, p=, ...). accepted, when not nil, is called
// with each URL check accepts, to check what the sink made of it.
func FuzzURL(f *testing.F, check sinks.CheckFunc, accepted func(t *testing.T, u *url.URL), seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ok := false
		for _, kind := range []sources.Kind{sources.Series, sources.KV} {
			u, err := sinks.Parse(raw) // afresh: check may change u
			if err != nil {
				return
			}
			err = check(u, kind)
			if err == nil {
				ok = true
				continue
			}
			u, _ = sinks.Parse(raw)
			if s := shown(check, u, kind, err); s != "" {
				t.Fatalf("%q (%s): the error shows the secret %q: %v", raw, kind, s, err)
			}
		}
		if ok && accepted != nil {
			u, _ := sinks.Parse(raw)
			accepted(t, u)
		}
	})
}

// shown returns the secret of u that err (check's error for u) shows, or
// "". The error shows a secret s when it holds s more often than the
// error for the same URL with every secret replaced, so that text the
// error holds anyway ("token" in an unknown parameter "token2") is not
// taken for a secret; and s must not appear in the URL outside its
// secrets (a password "1" would be found in "influx1://").
func shown(check sinks.CheckFunc, u *url.URL, kind sources.Kind, err error) string {
	secrets := secretsOf(u)
	repl := replacement(secrets)
	if repl == "" {
		return ""
	}
	rest := sinks.RedactURL(u)
	var other string
	if err := check(withSecrets(u, repl), kind); err != nil {
		other = err.Error()
	}
	msg := err.Error()
	for _, s := range secrets {
		if !strings.Contains(rest, s) && strings.Count(msg, s) > strings.Count(other, s) {
			return s
		}
	}
	return ""
}

// secretsOf lists u's secrets, each as written in the URL and decoded.
func secretsOf(u *url.URL) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	if pw, ok := u.User.Password(); ok {
		add(pw)
		add(strings.TrimPrefix(url.UserPassword("", pw).String(), ":"))
	}
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err != nil || !sinks.SecretParam(key) {
			continue
		}
		add(v)
		if dv, err := url.QueryUnescape(v); err == nil {
			add(dv)
		}
	}
	return out
}

// withSecrets returns a copy of u whose secrets are all repl, the rest of
// it unchanged byte for byte.
func withSecrets(u *url.URL, repl string) *url.URL {
	c := *u
	if _, ok := u.User.Password(); ok {
		c.User = url.UserPassword(u.User.Username(), repl)
	}
	pairs := strings.Split(u.RawQuery, "&")
	for i, pair := range pairs {
		k, _, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err == nil && sinks.SecretParam(key) {
			pairs[i] = k + "=" + repl
		}
	}
	c.RawQuery = strings.Join(pairs, "&")
	return &c
}

// replacement returns a stand-in for secrets that holds none of them, or
// "" when there are no secrets or no such stand-in.
func replacement(secrets []string) string {
	if len(secrets) == 0 {
		return ""
	}
next:
	for _, r := range []string{"zzzzzzzz", "qqqqqqqq", "jjjjjjjj"} {
		for _, s := range secrets {
			if strings.Contains(r, s) {
				continue next
			}
		}
		return r
	}
	return ""
}
