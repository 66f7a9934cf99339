package remotewrite

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/urlparam"
)

// Schemes are the URL schemes of the sink: the write endpoint's URL with
// "prom+" before its scheme.
var Schemes = []string{"prom+http", "prom+https"}

// DefaultPath is the write path when the URL gives none: Prometheus' and
// VictoriaMetrics' (Mimir and Cortex take /api/v1/push).
const DefaultPath = "/api/v1/write"

// Config is the parsed form of a prom+http:// or prom+https:// URL.
// Secrets (Password, Token) must never be logged; String leaves them out.
type Config struct {
	// TLS: https (prom+https://).
	TLS bool
	// Host is host:port.
	Host string
	// Path is the write endpoint's path, escaped as in the URL.
	Path string
	// MetricsPath is where TargetFigures reads the server's own metrics.
	MetricsPath string
	// QueryPath is the PromQL instant-query endpoint read-back and query
	// workloads use.
	QueryPath string
	// User and Password are basic-auth credentials (the URL's user info,
	// the password also from SOAKD_<W>_PASSWORD); Token is a bearer token
	// (SOAKD_<W>_TOKEN).
	User, Password, Token string
	// Headers are extra request headers (header=NAME:VALUE), e.g. a
	// tenant's X-Scope-OrgID.
	Headers http.Header
	// Labels are constant labels added to every series (label=NAME:VALUE).
	Labels []Label
	// Idempotent: resending a batch whose fate is unknown (5xx, a
	// timeout, a broken connection) is harmless.
	Idempotent bool
	// Timeout bounds one write request (0: the engine's TIMEOUT only).
	Timeout time.Duration
	// Protocol is the Remote-Write version asked for: Proto1, Proto2, or
	// ProtoAuto (2.0 where the target takes it, else 1.0).
	Protocol Protocol
	// Insecure skips TLS certificate verification.
	Insecure bool
	// TLSFiles are the CA and client certificate files (?ca=&cert=&key=).
	TLSFiles sinks.TLSFiles
	// tlsConfig is what LoadTLS read (nil: TLS off, or not loaded yet).
	tlsConfig *tls.Config
}

// Protocol is a Remote-Write version.
type Protocol uint8

// Protocols.
const (
	// ProtoAuto: Proto2 where the target takes it, else Proto1; decided
	// by an empty 2.0 request before the first write (see negotiate).
	ProtoAuto Protocol = iota
	// Proto1 is Remote-Write 1.0: prometheus.WriteRequest.
	Proto1
	// Proto2 is Remote-Write 2.0: io.prometheus.write.v2.Request.
	Proto2
)

var protocols = map[string]Protocol{"auto": ProtoAuto, "1.0": Proto1, "2.0": Proto2}

// String is the version as the protocol parameter names it.
func (p Protocol) String() string {
	switch p {
	case Proto1:
		return "1.0"
	case Proto2:
		return "2.0"
	}
	return "auto"
}

// Label is a constant label of every series.
type Label struct{ Name, Value string }

// Params are the URL's parameters.
var Params = urlparam.Set{
	Params: append([]urlparam.Param{
		{Name: "header", Type: urlparam.String, Multi: true, Syntax: "NAME:VALUE", Secret: true,
			Help: "an extra request header, e.g. X-Scope-OrgID:tenant1"},
		{Name: "label", Type: urlparam.String, Multi: true, Syntax: "NAME:VALUE",
			Help: "a constant label added to every series, e.g. run:soak1"},
		{Name: "idempotent", Type: urlparam.Bool, Default: "true",
			Help: "resend a batch whose fate is unknown (5xx, timeout); false for a target that keeps a resent sample twice"},
		{Name: "protocol", Type: urlparam.Enum, Choices: []string{"auto", "1.0|1", "2.0|2"}, Default: "auto", Want: "auto, 1.0 or 2.0",
			Help: "the Remote-Write version: auto sends 2.0 where the target takes it (it answers an empty 2.0 request with X-Prometheus-Remote-Write-Samples-Written) and 1.0 elsewhere"},
		{Name: "timeout", Type: urlparam.Duration, Range: urlparam.Above(0), Want: "a positive duration like 30s",
			Help: "bound of one write request; default: the engine's TIMEOUT only"},
		{Name: "metrics_path", Type: urlparam.String, Default: "/metrics", Valid: absPath, Want: "an absolute path like /metrics, without query",
			Help: "where the target watch reads the server's own metrics"},
		{Name: "query_path", Type: urlparam.String, Default: "/api/v1/query", Valid: absPath, Want: "an absolute path like /api/v1/query, without query",
			Help: "the PromQL instant-query endpoint read-back (VERIFY, soakd verify) and query workloads ask (range queries: query_range beside it); Mimir: /prometheus/api/v1/query"},
		{Name: "insecure", Type: urlparam.Bool, Default: "false", Help: "skip TLS certificate verification"},
	}, urlparam.TLSFiles()...),
	Repeated:        func(k string, n int) error { return fmt.Errorf("parameter %q is given %d times", k, n) },
	RepeatedUnknown: true,
}

func absPath(s string) bool { return strings.HasPrefix(s, "/") && !strings.ContainsAny(s, "?#") }

// reservedHeaders are set by the sink: header= may not replace them.
var reservedHeaders = []string{"Content-Type", "Content-Encoding", "Content-Length", "Host",
	"X-Prometheus-Remote-Write-Version", "User-Agent"}

// ParseURL parses a prom+http:// or prom+https:// URL, reporting every
// problem at once, each naming its URL parameter. It does no I/O.
func ParseURL(u *url.URL) (Config, error) {
	var c Config
	switch u.Scheme {
	case "prom+http":
	case "prom+https":
		c.TLS = true
	default:
		return c, fmt.Errorf("scheme %q: want prom+http:// or prom+https://", u.Scheme)
	}
	if u.Opaque != "" {
		return c, fmt.Errorf("want %s://HOST:PORT/PATH", u.Scheme)
	}
	q, err := urlparam.ParseQuery(u.RawQuery)
	if err != nil {
		return c, err
	}
	p := Params.Bind(q)
	hostParams(u, p, &c)
	c.MetricsPath = p.String("metrics_path")
	c.QueryPath = p.String("query_path")
	c.Idempotent = p.Bool("idempotent")
	c.Timeout = p.Duration("timeout")
	c.Protocol = protocols[p.Enum("protocol")]
	headerParams(p, &c)
	labelParams(p, &c)
	c.Insecure, c.TLSFiles = sinks.ReadTLSParams(p, c.TLS, "prom+https://")
	return c, p.Err()
}

// hostParams reads the host, the write path and the user info.
func hostParams(u *url.URL, p *urlparam.Query, c *Config) {
	c.Host = u.Host
	if u.Hostname() == "" {
		p.Addf("no host: want %s://HOST:PORT%s", u.Scheme, DefaultPath)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.Addf("port %q: want 1-65535", port)
		}
	}
	c.Path = u.EscapedPath()
	if c.Path == "" || c.Path == "/" {
		c.Path = DefaultPath
	}
	if base, ok := importPath(c.Path); ok {
		// VictoriaMetrics' import answers every remote-write request 204
		// and discards it (not one line parses): a run would be
		// acknowledged in full with nothing stored.
		p.Addf("path %s is VictoriaMetrics' import (JSON lines, CSV, its native format or Prometheus text), not remote write, and would discard every batch it answers 204: use %s/api/v1/write",
			c.Path, base)
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
}

// importPath reports whether path is one of VictoriaMetrics' import
// endpoints (/api/v1/import and the paths under it, after any prefix such
// as /insert/0/prometheus), and the prefix.
func importPath(path string) (prefix string, ok bool) {
	const imp = "/api/v1/import"
	for i := strings.Index(path, imp); i >= 0; {
		if rest := path[i+len(imp):]; rest == "" || strings.HasPrefix(rest, "/") {
			return path[:i], true
		}
		j := strings.Index(path[i+1:], imp)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return "", false
}

// headerParams reads every header=.
func headerParams(p *urlparam.Query, c *Config) {
	c.Headers = http.Header{}
	for _, h := range p.All("header") {
		name, value, err := parseHeader(h)
		if err != nil {
			p.Add(err)
			continue
		}
		c.Headers.Add(name, value)
	}
}

// labelParams reads every label=.
func labelParams(p *urlparam.Query, c *Config) {
	for _, l := range p.All("label") {
		lb, err := parseLabel(l)
		if err != nil {
			p.Add(err)
			continue
		}
		if slices.ContainsFunc(c.Labels, func(o Label) bool { return o.Name == lb.Name }) {
			p.Addf("label %q is given twice", lb.Name)
			continue
		}
		c.Labels = append(c.Labels, lb)
	}
}

// parseHeader reads header=NAME:VALUE. The value is not repeated in
// errors: a header may carry a key.
func parseHeader(s string) (string, string, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || !validToken(name) {
		return "", "", fmt.Errorf("header %s: want NAME:VALUE with a header name such as X-Scope-OrgID", headerShown(s))
	}
	name = textproto.CanonicalMIMEHeaderKey(name)
	switch {
	case name == "Authorization":
		return "", "", errors.New("header Authorization: give the credentials as the URL's user and password (or PASSWORD, PASSWORD_FILE) or as TOKEN (TOKEN_FILE), which are kept out of logs")
	case slices.Contains(reservedHeaders, name):
		return "", "", fmt.Errorf("header %s: the sink sets it itself", name)
	}
	value = strings.TrimSpace(value)
	if strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("header %s: the value holds a line break", name)
	}
	return name, value, nil
}

// headerShown is what an error may show of a header parameter that does
// not parse: the header name it starts with, when a separator a user puts
// between a name and its value follows (X-Api-Key=KEY, X-Api-Key KEY),
// and never what follows it, which may be the key. Anything else is shown
// not at all: it may be a value given without its name, one token from
// end to end, or cut by a character no name holds (base64's = padding,
// sk_live_abc/xyz).
func headerShown(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return !validToken(string(r)) })
	if i <= 0 || (s[i] != ' ' && s[i] != '=') || i+1 == len(s) || s[i+1] == '=' {
		return "(not NAME:VALUE)"
	}
	return s[:i] + "..."
}

// validToken reports whether s is an HTTP header name.
func validToken(s string) bool {
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			continue
		}
		return false
	}
	return true
}

// parseLabel reads label=NAME:VALUE; NAME must be a Prometheus label name
// of the user's own (not __reserved).
func parseLabel(s string) (Label, error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok || !validLabelName(name) || strings.HasPrefix(name, "__") {
		return Label{}, fmt.Errorf("label %q: want NAME:VALUE, NAME of letters, digits and _ not starting with a digit or __", s)
	}
	if value == "" {
		return Label{}, fmt.Errorf("label %q: the value is empty (Prometheus drops labels with empty values)", s)
	}
	return Label{Name: name, Value: value}, nil
}

// LoadTLS reads the files of ?ca=, ?cert= and ?key= into the TLS
// configuration the sink uses. Every problem names its parameter.
func (c *Config) LoadTLS() (err error) {
	c.tlsConfig, err = sinks.LoadClientTLS(c.TLS, c.Insecure, c.TLSFiles)
	return err
}

// withSecrets fills the password and token from the workload's secret
// settings (PASSWORD, TOKEN and their _FILE) and checks that one way of
// authenticating is chosen.
func (c *Config) withSecrets(password, token string) error {
	if c.Password == "" {
		c.Password = password
	}
	c.Token = token
	switch {
	case c.Token != "" && (c.User != "" || c.Password != ""):
		return errors.New("both basic auth (the URL's user, PASSWORD) and a bearer token (TOKEN) are given: give one of them")
	case c.Password != "" && c.User == "":
		return errors.New("a password (the URL's or PASSWORD) without a user: give the user in the URL (prom+https://USER@HOST/PATH)")
	}
	return nil
}

// authHeader is the Authorization header value ("" = none): a secret.
func (c *Config) authHeader() string {
	switch {
	case c.Token != "":
		return "Bearer " + c.Token
	case c.User != "":
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
	}
	return ""
}

// baseURL is the server's root URL, without credentials.
func (c *Config) baseURL() string {
	scheme := "http"
	if c.TLS {
		scheme = "https"
	}
	return scheme + "://" + c.Host
}

// String describes the target for logs, without secrets.
func (c *Config) String() string { return c.baseURL() + c.Path }
