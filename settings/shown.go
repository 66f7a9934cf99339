package settings

import (
	"regexp"

	"github.com/soakd/soakd/sinks"
)

// urlIn finds the URLs in a setting that lists them among other words
// (soakd sweep's GRID: TARGET=postgres://...,postgres://...).
var urlIn = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s,]*`)

// Shown is how value, the setting's value, may be shown to people (soakd
// config, the HTML report): a secret as "(set)", a URL with its password
// and secret parameters redacted, anything else as it is.
func (s Setting) Shown(value string) string {
	switch {
	case s.Secret && value != "":
		return "(set)"
	case s.URLs && value != "":
		return urlIn.ReplaceAllStringFunc(value, sinks.Redact)
	case s.URL && value != "":
		return sinks.Redact(value)
	}
	return value
}
