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
// error for the same URL with the secrets replaced, so that text the error
// holds anyway ("token" in an unknown parameter "token2", "y" in "query")
// is not taken for a secret; and s must not appear in the URL outside its
// secrets (a password "1" would be found in "influx1://").
//
// A secret with letters or digits is compared with the error for stand-ins
// of the same shape (letters for letters, hex digits for hex digits, the
// rest kept), so that a secret that makes the URL malformed ("%" in p=%)
// leaves it malformed the same way and the two errors say the same. A
// secret of punctuation alone has no such stand-in and is compared with
// the error for plain letters instead.
func shown(check sinks.CheckFunc, u *url.URL, kind sources.Kind, err error) string {
	secrets := secretsOf(u)
	shaped := standIns(secrets)
	if shaped == nil {
		return ""
	}
	plain := func(string) string { return "zzzzzzzz" }
	rest := sinks.RedactURL(u)
	errorFor := func(standIn func(string) string) string {
		if err := check(withSecrets(u, standIn), kind); err != nil {
			return err.Error()
		}
		return ""
	}
	msg := err.Error()
	sameShape, plainLetters := errorFor(shaped), errorFor(plain)
	for _, s := range secrets {
		other := sameShape
		if !hasAlnum(s) {
			other = plainLetters
		}
		for _, part := range parts(s) {
			if !strings.Contains(rest, part) && strings.Count(msg, part) > strings.Count(other, part) {
				return s
			}
		}
	}
	return ""
}

// minShown is the length of the parts of a secret looked for in an
// error: an error that shows the start of a key ("header c2VjcmV0a2V5...")
// shows a secret as surely as one that shows all of it.
const minShown = 6

// parts returns s itself when it is short, else each run of minShown
// bytes in it.
func parts(s string) []string {
	if len(s) <= minShown {
		return []string{s}
	}
	out := make([]string, 0, len(s)-minShown+1)
	for i := 0; i+minShown <= len(s); i++ {
		out = append(out, s[i:i+minShown])
	}
	return out
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
		key, err := url.QueryUnescape(k)
		if err != nil || !sinks.SecretParam(key) {
			continue
		}
		if _, value, ok := headerSplit(key, v); ok {
			add(value)
			continue
		}
		add(v)
		if dv, err := url.QueryUnescape(v); err == nil {
			add(dv)
		}
	}
	return out
}

// withSecrets returns a copy of u whose secrets are each replaced by
// standIn of it, the rest of it unchanged byte for byte. A query value
// that decodes is replaced by its decoded value's stand-in, escaped
// afresh; a header parameter keeps its name.
func withSecrets(u *url.URL, standIn func(string) string) *url.URL {
	c := *u
	if pw, ok := u.User.Password(); ok {
		c.User = url.UserPassword(u.User.Username(), standIn(pw))
	}
	pairs := strings.Split(u.RawQuery, "&")
	for i, pair := range pairs {
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil || !sinks.SecretParam(key) {
			continue
		}
		if name, value, ok := headerSplit(key, v); ok {
			pairs[i] = k + "=" + url.QueryEscape(name+standIn(value))
			continue
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			// The decoded value's stand-in, escaped afresh: a stand-in of
			// the escapes themselves would change what they stand for
			// (%0A, a line break, would become %7E, a ~).
			pairs[i] = k + "=" + url.QueryEscape(standIn(dv))
			continue
		}
		pairs[i] = k + "=" + standIn(v) // malformed: as malformed after
	}
	c.RawQuery = strings.Join(pairs, "&")
	return &c
}

// headerSplit splits a header=NAME:VALUE parameter's raw value v into the
// header name with the separator after it, which errors may show, and the
// rest, a secret. ok is false for another parameter or a value that does
// not start with a header name, a separator a user puts between a name
// and its value (':', '=' or a space) and something that is not '=': all
// of such a value is secret (a key given without its name).
func headerSplit(key, v string) (name, value string, ok bool) {
	if !strings.EqualFold(key, "header") {
		return "", "", false
	}
	dv, err := url.QueryUnescape(v)
	if err != nil {
		return "", "", false
	}
	i := strings.IndexFunc(dv, func(r rune) bool {
		return !(r < 128 && (hasAlnum(string(r)) || strings.ContainsRune("!#$%&'*+-.^_`|~", r)))
	})
	if i <= 0 || !strings.ContainsRune(": =", rune(dv[i])) || i+1 == len(dv) || dv[i+1] == '=' {
		return "", "", false
	}
	return dv[:i+1], dv[i+1:], true
}

// standIns returns a function that gives a secret's stand-in of the same
// shape, chosen so that no stand-in holds a secret with letters or digits,
// or nil when there are no secrets or no such choice.
func standIns(secrets []string) func(string) string {
	if len(secrets) == 0 {
		return nil
	}
next:
	for i := range 4 {
		standIn := func(s string) string { return sameShape(s, i) }
		for _, a := range secrets {
			for _, b := range secrets {
				if hasAlnum(b) && strings.Contains(standIn(a), b) {
					continue next
				}
			}
		}
		return standIn
	}
	return nil
}

// sameShape replaces each ASCII letter and digit of s by the i-th of a few
// of its kind, keeping case and whether it is a hex digit, so that s and
// its stand-in are valid or malformed alike wherever they are parsed.
func sameShape(s string, i int) string {
	b := []byte(s)
	for j, c := range b {
		switch {
		case c >= '0' && c <= '9':
			b[j] = "7391"[i]
		case c >= 'a' && c <= 'f':
			b[j] = "eabc"[i]
		case c >= 'A' && c <= 'F':
			b[j] = "EABC"[i]
		case c >= 'g' && c <= 'z':
			b[j] = "zqjx"[i]
		case c >= 'G' && c <= 'Z':
			b[j] = "ZQJX"[i]
		}
	}
	return string(b)
}

func hasAlnum(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return r < 128 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0
}
