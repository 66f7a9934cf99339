package influx

import (
	"cmp"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sinks/urlparam"
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
	// SortTags: the server keeps a series' tags sorted by key and sorts
	// those of every line that are not (InfluxDB), so lines are sent with
	// their tags sorted. Others keep the schema's order, which for some
	// (QuestDB, GreptimeDB) is the column order of a table they create.
	SortTags bool
}

// Products lists the v1-mode presets (?product=); the first is the default.
var Products = []Product{
	{Name: "influxdb", WritePath: "/write", PingPath: "/ping", NeedsDB: true, CreateDB: true, Idempotent: true, SortTags: true},
	{Name: "cnosdb", WritePath: "/api/v1/write", PingPath: "/api/v1/ping", NeedsDB: true, Idempotent: true},
	{Name: "tdengine", WritePath: "/influxdb/v1/write", PingPath: "/-/ping", NeedsDB: true, Idempotent: true},
	{Name: "victoriametrics", WritePath: "/write", PingPath: "/ping"},
	{Name: "questdb", WritePath: "/write", PingPath: "/ping"},
	{Name: "greptimedb", WritePath: "/v1/influxdb/write", PingPath: "/v1/influxdb/ping", Idempotent: true},
}

func productNames() string { return strings.Join(productList(), ", ") }

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
	// Timeout bounds one write request, or one query of a query workload
	// (0: the caller's deadline only, the engine's SOAKD_<W>_TIMEOUT).
	Timeout time.Duration
	// Insecure skips TLS certificate verification.
	Insecure bool
	// TLSFiles are the CA and client certificate files (?ca=&cert=&key=).
	TLSFiles sinks.TLSFiles
	// tlsConfig is what LoadTLS read (nil: TLS off, or not loaded yet).
	tlsConfig *tls.Config
}

// Params are the URL's parameters; Group "v1" and "v2" are those of one
// API only.
var Params = urlparam.Set{
	Params: append([]urlparam.Param{
		{Name: "api", Type: urlparam.Enum, Choices: []string{"v1|1", "v2|2"},
			Help: "write API: v2 (/api/v2/write) or v1 (line protocol to path=); default: the scheme's (influx1:// is v1)"},
		{Name: "precision", Type: urlparam.Enum, Choices: []string{"ns|n", "us|u|µs", "ms", "s"}, Want: "ns, us (or u), ms or s",
			Help: "timestamp precision of the line protocol sent; default ns (not sent)"},
		{Name: "gzip", Type: urlparam.Custom, Parse: parseGzip, Syntax: "bool|1-9", Default: "false",
			Help: "gzip request bodies: true (fastest level) or a level 1-9"},
		{Name: "create", Type: urlparam.Bool, Default: "true", Help: "create the database or bucket when missing"},
		{Name: "idempotent", Type: urlparam.Bool,
			Help: "resending a batch after a failure that may have been applied is harmless; default: v2 true, v1 the product's"},
		{Name: "timeout", Type: urlparam.Duration, Range: urlparam.Above(0), Want: "a positive duration like 30s",
			Help: "bound of one write request or query; default: the engine's TIMEOUT only"},
		{Name: "tls", Type: urlparam.Bool, Default: "false", Help: "https (influxs:// says it too)"},
		{Name: "insecure", Type: urlparam.Bool, Default: "false", Help: "skip TLS certificate verification"},
		{Name: "token", Type: urlparam.String, Secret: true, Help: "API token (or SOAKD_<W>_TOKEN)"},
		{Name: "org", Type: urlparam.String, Group: "v2", Help: "organization"},
		{Name: "bucket", Type: urlparam.String, Group: "v2", Help: "bucket, required (InfluxDB 1.8: DB/RP or DB)"},
		{Name: "db", Type: urlparam.String, Group: "v1", Help: "database; required by influxdb, cnosdb and tdengine"},
		{Name: "rp", Type: urlparam.String, Group: "v1", Help: "retention policy"},
		{Name: "u", Type: urlparam.String, Group: "v1", Help: "user (or before the host: influx1://USER:PASSWORD@HOST)"},
		{Name: "p", Type: urlparam.String, Group: "v1", Secret: true, Help: "password (or SOAKD_<W>_PASSWORD)"},
		{Name: "product", Type: urlparam.Enum, Group: "v1", Choices: productList(), Default: Products[0].Name, Want: "one of " + productNames(),
			Help: "target preset: its write and ping paths, whether it needs db=, whether rewrites are idempotent"},
		{Name: "path", Type: urlparam.String, Group: "v1", Valid: absPath, Want: "an absolute path like /write, without query",
			Help: "write path; default: the product's"},
		{Name: "ping_path", Type: urlparam.String, Group: "v1", Valid: absPath, Want: "an absolute path like /write, without query",
			Help: "ping path; default: the product's"},
		{Name: "auth", Type: urlparam.Enum, Group: "v1", Choices: []string{AuthBasic, AuthToken, AuthBearer},
			Help: "Authorization scheme; default basic with a user, token with a token"},
	}, urlparam.TLSFiles()...),
	Repeated:        func(k string, n int) error { return fmt.Errorf("parameter %q is given %d times", k, n) },
	RepeatedUnknown: true,
}

// The error for an unknown parameter lists Params, so it is set once
// Params is.
func init() { Params.Unknown = unknownParam }

// unknownParam names a parameter of the other API, or lists those of
// api (v1 or v2).
func unknownParam(k, api string) error {
	switch d := Params.Lookup(k); {
	case d != nil && api == "v1":
		return fmt.Errorf("parameter %q is for the v2 API (influx://); the v1 API takes db= and rp=", k)
	case d != nil:
		return fmt.Errorf("parameter %q is for the v1 API (influx1:// or ?api=v1)", k)
	}
	return fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(slices.Sorted(slices.Values(Params.Names(api))), ", "))
}

func productList() []string {
	names := make([]string, len(Products))
	for i, p := range Products {
		names[i] = p.Name
	}
	return names
}

func absPath(s string) bool { return strings.HasPrefix(s, "/") && !strings.ContainsAny(s, "?#") }

func parseGzip(s string) (any, error) {
	switch s {
	case "false", "0":
		return 0, nil
	case "true", "1":
		// Fastest level: it shrinks line protocol about 5x already, and the
		// load generator's CPU is what the comparison with peers measures.
		return gzip.BestSpeed, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 9 {
		return nil, fmt.Errorf("gzip %q: want true, false or a level 1-9", s)
	}
	return n, nil
}

// ParseURL parses an influx://, influxs:// or influx1:// URL, reporting
// every problem at once, each naming its URL parameter. It does no I/O.
func ParseURL(u *url.URL) (Config, error) {
	c, err := parseScheme(u)
	if err != nil {
		return c, err
	}
	q, err := urlparam.ParseQuery(u.RawQuery)
	if err != nil {
		return c, err
	}
	p := Params.Read(q)
	p.CheckRepeated()
	c.API = parseAPI(u.Scheme, c.API, p)
	p.CheckUnknown(c.API.String())
	hostParams(u, p, &c)
	c.Token = p.String("token")
	tlsParams(p, &c)
	c.Create = p.Bool("create")
	precisionParam(p, &c)
	c.Gzip, _ = p.Value("gzip").(int)
	c.Timeout = p.Duration("timeout")
	if c.API == V2 {
		v2Params(p, &c)
	} else {
		v1Params(p, &c)
	}
	return c, p.Err()
}

// parseScheme reads the API and TLS the scheme says.
func parseScheme(u *url.URL) (Config, error) {
	var c Config
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
	return c, nil
}

// parseAPI applies api= to the scheme's API.
func parseAPI(scheme string, api API, p *urlparam.Query) API {
	switch p.Enum("api") {
	case "v1":
		return V1
	case "v2":
		if scheme == "influx1" {
			p.Addf("api=%s: influx1:// is the v1 API; use influx:// for v2", p.Raw("api"))
		}
		return V2
	}
	return api
}

// hostParams reads the host, the base path and the user info.
func hostParams(u *url.URL, p *urlparam.Query, c *Config) {
	c.Host = u.Host
	if u.Hostname() == "" {
		p.Addf("no host: want %s://HOST:PORT", u.Scheme)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.Addf("port %q: want 1-65535", port)
		}
	}
	c.BasePath = strings.TrimRight(u.EscapedPath(), "/")
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
}

// tlsParams reads tls=, insecure= and the certificate files.
func tlsParams(p *urlparam.Query, c *Config) {
	if p.Bool("tls") {
		c.TLS = true
	}
	c.Insecure, c.TLSFiles = sinks.ReadTLSParams(p, c.TLS, "influxs:// or tls=true")
}

// precisionParam reads precision=; the v2 API takes its own names.
func precisionParam(p *urlparam.Query, c *Config) {
	if !p.Given("precision") {
		return
	}
	c.Precision, _ = lineproto.ParsePrecision(p.Enum("precision"))
	c.PrecisionParam = p.Raw("precision")
	if c.API == V2 {
		c.PrecisionParam = c.Precision.String() // the v2 API's names
	}
}

// v2Params reads the v2 API's parameters.
func v2Params(p *urlparam.Query, c *Config) {
	c.Org, c.Bucket = p.String("org"), p.String("bucket")
	if c.Bucket == "" {
		p.Addf("bucket is required (?bucket=NAME; for InfluxDB 1.8: ?bucket=DB/RP or ?bucket=DB)")
	}
	c.Idempotent = p.BoolOr("idempotent", true)
}

// v1Params reads the v1 API's parameters.
func v1Params(p *urlparam.Query, c *Config) {
	c.Product = Products[slices.Index(productList(), p.Enum("product"))]
	c.DB, c.RP = p.String("db"), p.String("rp")
	if c.DB == "" && c.Product.NeedsDB {
		p.Addf("db is required for %s (?db=NAME)", c.Product.Name)
	}
	c.WritePath = cmp.Or(p.String("path"), c.Product.WritePath)
	c.PingPath = cmp.Or(p.String("ping_path"), c.Product.PingPath)
	if s := p.String("u"); s != "" {
		if c.User != "" {
			p.Addf("u: the user is also given before the host; give it once")
		}
		c.User = s
	}
	if s := p.String("p"); s != "" {
		if c.Password != "" {
			p.Addf("p: the password is also given before the host; give it once")
		}
		c.Password = s
	}
	c.Auth = p.Enum("auth")
	c.Idempotent = p.BoolOr("idempotent", c.Product.Idempotent)
}

// LoadTLS reads the files of ?ca=, ?cert= and ?key= into the TLS
// configuration New uses. Every problem names its parameter.
func (c *Config) LoadTLS() (err error) {
	c.tlsConfig, err = sinks.LoadClientTLS(c.TLS, c.Insecure, c.TLSFiles)
	return err
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

// sortTags reports whether lines go out with their tags sorted by key:
// to InfluxDB (the v2 API, and v1's influxdb product).
func (c *Config) sortTags() bool { return c.API == V2 || c.Product.SortTags }

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
