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
	p := Prefix(w.Name)
	hint := fmt.Sprintf(" (the password: in %sTARGET's URL, %sPASSWORD or %sPASSWORD_FILE)", p, p, p)
	explain := func(s string) string {
		if strings.Contains(s, sinks.AuthFailed) && !strings.Contains(s, hint) {
			return s + hint
		}
		return s
	}
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
	return func(s string) string { return explain(r.Replace(s)) }
}
