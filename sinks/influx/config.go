package influx

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
)

// API selects the write protocol.
type API uint8

const (
	// V2 writes through InfluxDB's /api/v2/write with influxdb-client-go
	// (InfluxDB 2.x, 3.x, and 1.8+ through its compatibility endpoint).
	V2 API = iota + 1
	// V1 POSTs line protocol to a configurable path (InfluxDB 1.x /write and
	// the products that copy it).
	V1
)

func (a API) String() string {
	if a == V1 {
		return "v1"
	}
	return "v2"
}

// Product is a v1-mode target preset: its write and ping paths, whether
// it needs a database name, whether soakd can create that database, and
// whether writing the same points twice stores them once.
type Product struct {
	Name      string
	WritePath string
	PingPath  string
	// NeedsDB: the write path requires ?db=.
	NeedsDB bool
	// CreateDB: CREATE DATABASE through InfluxQL /query is available.
	CreateDB bool
	// Idempotent: a point with the same series and timestamp overwrites
	// (InfluxDB semantics), so resending a batch is harmless.
	Idempotent bool
}

// Products lists the v1-mode presets (?product=); the first is the default.
var Products = []Product{
	{Name: "influxdb", WritePath: "/write", PingPath: "/ping", NeedsDB: true, CreateDB: true, Idempotent: true},
	{Name: "cnosdb", WritePath: "/api/v1/write", PingPath: "/api/v1/ping", NeedsDB: true, Idempotent: true},
	{Name: "tdengine", WritePath: "/influxdb/v1/write", PingPath: "/-/ping", NeedsDB: true, Idempotent: true},
	{Name: "victoriametrics", WritePath: "/write", PingPath: "/ping"},
	{Name: "questdb", WritePath: "/write", PingPath: "/ping"},
	{Name: "greptimedb", WritePath: "/v1/influxdb/write", PingPath: "/v1/influxdb/ping", Idempotent: true},
}

func productNames() string {
	names := make([]string, len(Products))
	for i, p := range Products {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Auth schemes for v1 mode (?auth=).
const (
	AuthBasic  = "basic"  // Authorization: Basic base64(user:password)
	AuthToken  = "token"  // Authorization: Token TOKEN (InfluxDB 2.x/3.x v1 compatibility)
	AuthBearer = "bearer" // Authorization: Bearer TOKEN (QuestDB, InfluxDB 3)
)

// Config is the parsed form of an influx://, influxs:// or influx1:// URL.
// Secrets (Password, Token) must never be logged; String redacts them.
type Config struct {
	API API
	// TLS: https (influxs://, or ?tls=true).
	TLS bool
	// Host is host:port.
	Host string
	// BasePath is a URL path prefix before the API paths (reverse proxies), "" or "/prefix".
	BasePath string

	// v2
	Org, Bucket string

	// v1
	Product   Product
	DB, RP    string
	WritePath string
	PingPath  string

	// Credentials. User/Password: v1 basic auth (URL user info or ?u=&p=);
	// in v2 mode they make the InfluxDB 1.8 token "user:password".
	User, Password string
	Token          string
	// Auth is the v1 Authorization scheme (basic, token, bearer); "" picks
	// basic with a user, token with a token, none otherwise.
	Auth string

	Precision lineproto.Precision
	// PrecisionParam is the precision query value sent to the server
	// ("" = not sent: every target defaults to nanoseconds).
	PrecisionParam string
	// Gzip is the compression level of request bodies (0 = off).
	Gzip int
	// Create: create the database or bucket if missing (Prepare).
	Create bool
	// Idempotent: resending a batch after a failure that may have been
	// applied is harmless (InfluxDB: same series and timestamp overwrite).
	Idempotent bool
	// Timeout bounds one write request (0: the caller's deadline only, the
	// engine's SOAKD_<W>_TIMEOUT).
	Timeout time.Duration
	// Insecure skips TLS certificate verification.
	Insecure bool
	// TLSFiles are the CA and client certificate files (?ca=&cert=&key=).
	TLSFiles sinks.TLSFiles
	// tlsConfig is what LoadTLS read (nil: TLS off, or not loaded yet).
	tlsConfig *tls.Config
}

var (
	commonParams = []string{"api", "precision", "gzip", "create", "idempotent", "timeout", "tls", "insecure", "token", "ca", "cert", "key"}
	v2Params     = []string{"org", "bucket"}
	v1Params     = []string{"db", "rp", "u", "p", "product", "path", "ping_path", "auth"}
)

// ParseURL parses an influx://, influxs:// or influx1:// URL, reporting
// every problem at once, each naming its URL parameter. It does no I/O.
func ParseURL(u *url.URL) (Config, error) {
	var c Config
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch u.Scheme {
	case "influx":
		c.API = V2
	case "influxs":
		c.API, c.TLS = V2, true
	case "influx1":
		c.API = V1
	default:
		return c, fmt.Errorf("scheme %q: want influx://, influxs:// or influx1://", u.Scheme)
	}
	if u.Opaque != "" {
		return c, fmt.Errorf("want %s://HOST:PORT?PARAMS", u.Scheme)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return c, fmt.Errorf("query string: %w", err)
	}
	keys := slices.Sorted(maps.Keys(q)) // errors in a stable order
	for _, k := range keys {
		if len(q[k]) > 1 {
			add("parameter %q is given %d times", k, len(q[k]))
		}
	}
	switch a := q.Get("api"); a {
	case "":
	case "v1", "1":
		c.API = V1
	case "v2", "2":
		if u.Scheme == "influx1" {
			add("api=%s: influx1:// is the v1 API; use influx:// for v2", a)
		}
		c.API = V2
	default:
		add("api %q: want v1 or v2", a)
	}
	known := append(append([]string{}, commonParams...), v2Params...)
	if c.API == V1 {
		known = append(append([]string{}, commonParams...), v1Params...)
	}
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		switch {
		case c.API == V1 && slices.Contains(v2Params, k):
			add("parameter %q is for the v2 API (influx://); the v1 API takes db= and rp=", k)
		case c.API == V2 && slices.Contains(v1Params, k):
			add("parameter %q is for the v1 API (influx1:// or ?api=v1)", k)
		default:
			add("unknown parameter %q (known: %s)", k, strings.Join(slices.Sorted(slices.Values(known)), ", "))
		}
	}

	c.Host = u.Host
	if u.Hostname() == "" {
		add("no host: want %s://HOST:PORT", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			add("port %q: want 1-65535", p)
		}
	}
	c.BasePath = strings.TrimRight(u.EscapedPath(), "/")
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	c.Token = q.Get("token")

	boolParam := func(name string, def bool) bool {
		s := q.Get(name)
		if s == "" {
			return def
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			add("%s %q: want true or false", name, s)
			return def
		}
		return b
	}
	if boolParam("tls", false) {
		c.TLS = true
	}
	c.Insecure = boolParam("insecure", false)
	if c.Insecure && !c.TLS {
		add("insecure=true needs TLS (influxs:// or tls=true)")
	}
	if f, err := sinks.ParseTLSFiles(q); err != nil {
		errs = append(errs, err)
	} else {
		c.TLSFiles = f
	}
	if c.TLSFiles.Set() && !c.TLS {
		add("ca, cert, key: TLS is off; use influxs:// or tls=true")
	}
	if c.Insecure && c.TLSFiles.CA != "" {
		add("insecure=true with ca: the CA would not be checked; give one of them")
	}
	c.Create = boolParam("create", true)

	if s := q.Get("precision"); s != "" {
		p, err := lineproto.ParsePrecision(s)
		if err != nil {
			add("precision %q: want ns, us (or u), ms or s", s)
		}
		c.Precision, c.PrecisionParam = p, s
		if c.API == V2 {
			c.PrecisionParam = p.String() // the v2 API's names
		}
	}
	switch s := q.Get("gzip"); s {
	case "", "false", "0":
	case "true", "1":
		// Fastest level: it shrinks line protocol about 5x already, and the
		// load generator's CPU is what the comparison with peers measures.
		c.Gzip = gzip.BestSpeed
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 9 {
			add("gzip %q: want true, false or a level 1-9", s)
		}
		c.Gzip = n
	}
	if s := q.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			add("timeout %q: want a positive duration like 30s", s)
		} else {
			c.Timeout = d
		}
	}

	if c.API == V2 {
		c.Org, c.Bucket = q.Get("org"), q.Get("bucket")
		if c.Bucket == "" {
			add("bucket is required (?bucket=NAME; for InfluxDB 1.8: ?bucket=DB/RP or ?bucket=DB)")
		}
		c.Idempotent = boolParam("idempotent", true)
		return c, errors.Join(errs...)
	}

	c.Product = Products[0]
	if s := q.Get("product"); s != "" {
		i := slices.IndexFunc(Products, func(p Product) bool { return p.Name == s })
		if i < 0 {
			add("product %q: want one of %s", s, productNames())
		} else {
			c.Product = Products[i]
		}
	}
	c.DB, c.RP = q.Get("db"), q.Get("rp")
	if c.DB == "" && c.Product.NeedsDB {
		add("db is required for %s (?db=NAME)", c.Product.Name)
	}
	c.WritePath = c.Product.WritePath
	c.PingPath = c.Product.PingPath
	for _, p := range []struct {
		name string
		dst  *string
	}{{"path", &c.WritePath}, {"ping_path", &c.PingPath}} {
		name, dst := p.name, p.dst
		if s := q.Get(name); s != "" {
			if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?#") {
				add("%s %q: want an absolute path like /write, without query", name, s)
			}
			*dst = s
		}
	}
	if s := q.Get("u"); s != "" {
		if c.User != "" {
			add("u: the user is also given before the host; give it once")
		}
		c.User = s
	}
	if s := q.Get("p"); s != "" {
		if c.Password != "" {
			add("p: the password is also given before the host; give it once")
		}
		c.Password = s
	}
	switch s := q.Get("auth"); s {
	case "", AuthBasic, AuthToken, AuthBearer:
		c.Auth = s
	default:
		add("auth %q: want basic, token or bearer", s)
	}
	c.Idempotent = boolParam("idempotent", c.Product.Idempotent)
	return c, errors.Join(errs...)
}

// LoadTLS reads the files of ?ca=, ?cert= and ?key= into the TLS
// configuration New uses. Every problem names its parameter.
func (c *Config) LoadTLS() error {
	if !c.TLS {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.Insecure} //nolint:gosec // only when the user asks
	if err := c.TLSFiles.Apply(tc); err != nil {
		return err
	}
	c.tlsConfig = tc
	return nil
}

// withSecrets fills the password and token from the workload's secret
// settings when the URL has none.
func (c *Config) withSecrets(password, token string) {
	if c.Password == "" {
		c.Password = password
	}
	if c.Token == "" {
		c.Token = token
	}
}

// baseURL is the server's root URL, without credentials.
func (c *Config) baseURL() string {
	scheme := "http"
	if c.TLS {
		scheme = "https"
	}
	return scheme + "://" + c.Host + c.BasePath
}

// authHeader is the Authorization header value ("" = none).
func (c *Config) authHeader() string {
	auth := c.Auth
	if c.API == V2 {
		auth = AuthToken
	}
	if auth == "" {
		switch {
		case c.User != "":
			auth = AuthBasic
		case c.Token != "":
			auth = AuthToken
		}
	}
	switch auth {
	case AuthBasic:
		if c.User == "" && c.Password == "" {
			return ""
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
	case AuthToken, AuthBearer:
		tok := c.Token
		if tok == "" && c.User != "" {
			tok = c.User + ":" + c.Password // InfluxDB 1.8's v2 compatibility token
		}
		if tok == "" {
			return ""
		}
		if auth == AuthBearer {
			return "Bearer " + tok
		}
		return "Token " + tok
	}
	return ""
}

// String describes the target for logs, without secrets.
func (c *Config) String() string {
	s := c.API.String() + " " + c.baseURL()
	if c.API == V2 {
		return s + " org=" + c.Org + " bucket=" + c.Bucket
	}
	s += c.WritePath + " (" + c.Product.Name + ")"
	if c.DB != "" {
		s += " db=" + c.DB
	}
	if c.RP != "" {
		s += " rp=" + c.RP
	}
	return s
}
