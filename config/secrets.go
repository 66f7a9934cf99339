package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/soakd/soakd/sinks"
)

// Scrubber returns a function that hides the workload's secrets (the
// target URL's password and secret parameters, PASSWORD, TOKEN) in text:
// error messages a driver built may quote them, and those messages reach
// logs, /status and the summary.
func (w *Workload) Scrubber() func(string) string {
	var secrets []string
	add := func(s string) {
		if s == "" {
			return
		}
		secrets = append(secrets, s)
		for _, e := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if e != s {
				secrets = append(secrets, e)
			}
		}
	}
	password, token := w.Secret()
	add(password)
	add(token)
	if u := w.Sink.URL; u != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for k, vs := range u.Query() {
			if sinks.SecretParam(k) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	// A target that refused the credentials: name where they come from,
	// which the sink cannot know.
	explain := w.authHint()
	if len(secrets) == 0 {
		return explain
	}
	// Longest first, so a secret that contains another is hidden whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, "xxxxx")
	}
	r := strings.NewReplacer(pairs...)
	keep := w.shownAsIs()
	return func(s string) string { return explain(scrubOutside(s, r, keep)) }
}

// shownAsIs is what a message may quote of w that is not a secret, though
// a secret may be part of it: the redacted target URL, and its scheme.
// A password such as "postgres" is hidden wherever else it appears, but
// not there: "xxxxx://" would garble the message and point at the
// password.
func (w *Workload) shownAsIs() []string {
	var keep []string
	if w.Sink.URL != nil {
		keep = append(keep, w.Sink.Redacted, w.Sink.URL.Scheme+"://")
	}
	return keep
}

// scrubOutside replaces with r every part of s outside the occurrences of
// keep (the earliest first, the longest of those at the same place).
func scrubOutside(s string, r *strings.Replacer, keep []string) string {
	var b strings.Builder
	for {
		at, n := -1, 0
		for _, k := range keep {
			if k == "" {
				continue
			}
			if i := strings.Index(s, k); i >= 0 && (at < 0 || i < at || i == at && len(k) > n) {
				at, n = i, len(k)
			}
		}
		if at < 0 {
			if b.Len() == 0 {
				return r.Replace(s)
			}
			b.WriteString(r.Replace(s))
			return b.String()
		}
		b.WriteString(r.Replace(s[:at]))
		b.WriteString(s[at : at+n])
		s = s[at+n:]
	}
}

// authHint returns a function that adds to a message saying the target
// refused the credentials where the ones it was given come from: the
// password's settings, the token's when only a token was given (a
// bearer token refused was blamed on a password never set), and a
// sentinel's own URL parameters when the sentinels refused them.
func (w *Workload) authHint() func(string) string {
	p := Prefix(w.Name)
	password, token := w.Secret()
	tokenFrom := fmt.Sprintf("%sTOKEN or %sTOKEN_FILE", p, p)
	if u := w.Sink.URL; u != nil {
		if password == "" {
			password, _ = u.User.Password()
		}
		// A URL parameter (InfluxDB's token= and p=) is what the sink
		// sends, before the settings: a refused token= was blamed on a
		// password never given.
		q := u.Query()
		if password == "" {
			password = q.Get("p")
		}
		if t := q.Get("token"); t != "" {
			token, tokenFrom = t, fmt.Sprintf("%sTARGET's URL (token=)", p)
		}
	}
	hint := fmt.Sprintf(" (the password: in %sTARGET's URL, %sPASSWORD or %sPASSWORD_FILE)", p, p, p)
	switch {
	case token != "" && password == "":
		hint = fmt.Sprintf(" (the token: %s)", tokenFrom)
	case token != "":
		hint = fmt.Sprintf(" (the credentials: the password in %sTARGET's URL, %sPASSWORD or %sPASSWORD_FILE; the token in %s)", p, p, p, tokenFrom)
	}
	sentinelHint := fmt.Sprintf(" (the sentinels' credentials: sentinel_username and sentinel_password in %sTARGET's URL; the server's: %sTARGET's URL, %sPASSWORD or %sPASSWORD_FILE)", p, p, p, p)
	sentinel := w.Sink.URL != nil && w.Sink.URL.Scheme == "redis-sentinel"
	return func(s string) string {
		if !strings.Contains(s, sinks.AuthFailed) || strings.Contains(s, hint) || strings.Contains(s, sentinelHint) {
			return s
		}
		if sentinel && strings.Contains(s, "sentinels") {
			return s + sentinelHint
		}
		return s + hint
	}
}
