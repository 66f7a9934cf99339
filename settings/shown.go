package settings

import "github.com/soakd/soakd/sinks"

// Shown is how value, the setting's value, may be shown to people (soakd
// config, the HTML report): a secret as "(set)", a URL with its password
// and secret parameters redacted, anything else as it is.
func (s Setting) Shown(value string) string {
	switch {
	case s.Secret && value != "":
		return "(set)"
	case s.URL && value != "":
		return sinks.Redact(value)
	}
	return value
}
