package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

// Mode is the kind of deployment a URL names.
type Mode uint8

// Modes.
const (
	// Single is one server (redis://, rediss://).
	Single Mode = iota
	// Cluster is a Redis Cluster (redis-cluster://), routed by slot.
	Cluster
	// Sentinel is a master found through sentinels (redis-sentinel://).
	Sentinel
)

// Config is the parsed form of a sink URL.
type Config struct {
	Mode  Mode
	Addrs []string // host:port of the server, the cluster seeds or the sentinels
	// MasterName is the sentinel master set name.
	MasterName string
	DB         int
	Username   string
	Password   string
	// SentinelUsername and SentinelPassword authenticate to the sentinels.
	SentinelUsername, SentinelPassword string
	TLS                                bool
	SkipVerify                         bool
	// TLSFiles are the CA and client certificate files (?ca=&cert=&key=).
	TLSFiles     sinks.TLSFiles
	Protocol     int
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	PoolSize     int // 0 = workers + headroom
	ClientName   string
	// Cleanup deletes the workload's keys (KEY_PREFIX*) when the sink closes.
	Cleanup bool
	// Index maintains YCSB's scan index, a sorted set of the inserted keys
	// scored by record number, so scans can walk records in order.
	Index bool
}

// Schemes are the URL schemes of the sink.
var Schemes = []string{"redis", "rediss", "redis-cluster", "redis-sentinel"}

// timeoutRange bounds the client's timeouts.
var timeoutRange = urlparam.Above(0).AtMost(float64(time.Hour))

const wantTimeout = "a positive duration like 500ms or 5s"

// Params are the sink URL's parameters, in the order the unknown
// parameter error lists them.
var Params = urlparam.Set{Params: append([]urlparam.Param{
	{Name: "db", Type: urlparam.Int, Label: "database", Range: urlparam.Within(0, 1<<20), Want: "a number >= 0",
		Help: "database number (also the URL path: redis://HOST/DB); a cluster has only 0"},
	{Name: "cleanup", Type: urlparam.Bool, KeepEmpty: true, Default: "false", Help: "delete the workload's keys (KEY_PREFIX*) when the sink closes"},
	{Name: "index", Type: urlparam.Bool, KeepEmpty: true, Default: "true", Help: "maintain YCSB's scan index, a sorted set of the inserted keys"},
	{Name: "tls", Type: urlparam.Bool, KeepEmpty: true, Default: "false", Help: "TLS to a cluster or the sentinels (a single server: rediss://)"},
	{Name: "skip_verify", Type: urlparam.Bool, KeepEmpty: true, Default: "false", Help: "skip TLS certificate verification"},
	{Name: "protocol", Type: urlparam.Enum, Choices: []string{"2", "3"}, Default: "2", Want: "2 (RESP2) or 3 (RESP3)", Help: "RESP protocol version"},
	{Name: "dial_timeout", Type: urlparam.Duration, Range: timeoutRange, Default: "5s", Want: wantTimeout, Help: "connect timeout (at most 1h)"},
	{Name: "read_timeout", Type: urlparam.Duration, Range: timeoutRange, Default: "10s", Want: wantTimeout, Help: "read timeout (at most 1h)"},
	{Name: "write_timeout", Type: urlparam.Duration, Range: timeoutRange, Default: "10s", Want: wantTimeout, Help: "write timeout (at most 1h)"},
	{Name: "pool_size", Type: urlparam.Int, Range: urlparam.Within(1, 100000), Help: "connections per node; default: workers + headroom"},
	{Name: "client_name", Type: urlparam.String, Help: "CLIENT SETNAME of every connection"},
	{Name: "addr", Type: urlparam.String, Multi: true, Help: "one more cluster seed or sentinel, HOST[:PORT] (redis-cluster://, redis-sentinel://)"},
	{Name: "sentinel_username", Type: urlparam.String, KeepEmpty: true, Help: "user of the sentinels (redis-sentinel://)"},
	{Name: "sentinel_password", Type: urlparam.String, KeepEmpty: true, Secret: true, Help: "password of the sentinels (redis-sentinel://)"},
}, urlparam.TLSFiles()...)}

// ParseURL parses a sink URL (see the package documentation). The password
// is never part of an error message.
func ParseURL(u *url.URL) (Config, error) {
	c, err := parseScheme(u)
	if err != nil {
		return c, err
	}
	p := Params.Bind(u.Query())
	c.Addrs = addrs(u, c.Mode, p)
	parsePath(u, &c, p)
	if db := p.Raw("db"); db != "" && db != "0" && c.Mode == Cluster {
		p.Addf("db: a cluster has only database 0")
	} else if p.Given("db") {
		c.DB = p.Int("db")
	}
	c.Cleanup = p.Bool("cleanup")
	c.Index = p.Bool("index")
	tlsParams(p, &c)
	c.Protocol = int(p.Enum("protocol")[0] - '0')
	c.DialTimeout = p.Duration("dial_timeout")
	c.ReadTimeout = p.Duration("read_timeout")
	c.WriteTimeout = p.Duration("write_timeout")
	c.PoolSize = p.Int("pool_size")
	c.ClientName = p.String("client_name")
	if p.Has("sentinel_username") || p.Has("sentinel_password") {
		if c.Mode != Sentinel {
			p.Addf("sentinel_username, sentinel_password: only for redis-sentinel://")
		}
		c.SentinelUsername = p.String("sentinel_username")
		c.SentinelPassword = p.String("sentinel_password")
	}
	return c, p.Err()
}

// parseScheme reads the deployment mode and the credentials.
func parseScheme(u *url.URL) (Config, error) {
	var c Config
	switch u.Scheme {
	case "redis", "rediss":
		c.Mode = Single
		c.TLS = u.Scheme == "rediss"
	case "redis-cluster":
		c.Mode = Cluster
	case "redis-sentinel":
		c.Mode = Sentinel
	default:
		return c, fmt.Errorf("scheme %q: want one of %s", u.Scheme, strings.Join(Schemes, ", "))
	}
	if u.Opaque != "" {
		return c, fmt.Errorf("URL must look like %s://host:port, not %s:%s", u.Scheme, u.Scheme, "...")
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	return c, nil
}

// addrs are the host list's addresses and addr='s, each with a port.
func addrs(u *url.URL, m Mode, p *urlparam.Query) []string {
	var out []string
	for h := range strings.SplitSeq(u.Host, ",") {
		if h != "" {
			out = append(out, withPort(h, m))
		}
	}
	for _, h := range p.All("addr") {
		if m == Single {
			p.Addf("addr: only redis-cluster:// and redis-sentinel:// take more addresses")
			break
		}
		out = append(out, withPort(h, m))
	}
	if len(out) == 0 {
		p.Addf("no host: want %s://HOST[:PORT]", u.Scheme)
	}
	if m == Single && len(out) > 1 {
		p.Addf("%d hosts: redis:// takes one (use redis-cluster:// or redis-sentinel:// for several)", len(out))
	}
	for _, a := range out {
		if _, port, err := net.SplitHostPort(a); err != nil {
			p.Addf("address %q: %v", a, err)
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.Addf("address %q: port must be 1..65535", a)
		}
	}
	return out
}

// parsePath reads the URL path: the database, or a sentinel's master
// name and database.
func parsePath(u *url.URL, c *Config, p *urlparam.Query) {
	path := strings.Trim(u.Path, "/")
	switch c.Mode {
	case Sentinel:
		name, db, _ := strings.Cut(path, "/")
		c.MasterName = name
		if name == "" {
			p.Addf("no master name: want redis-sentinel://HOST:26379[,HOST...]/MASTER[/DB]")
		}
		parseDB(db, c, p)
	case Cluster:
		// /0, the database a cluster has, as redis:// URLs often end.
		if path != "" && path != "0" {
			p.Addf("path %q: a cluster has only database 0", u.Path)
		}
	default:
		parseDB(path, c, p)
	}
}

// tlsParams reads tls=, skip_verify= and the certificate files.
func tlsParams(p *urlparam.Query, c *Config) {
	if p.Has("tls") {
		if c.Mode == Single {
			p.Addf("tls: use rediss:// for TLS to a single server")
		} else if p.Given("tls") {
			c.TLS = p.Bool("tls")
		}
	}
	c.SkipVerify = p.Bool("skip_verify")
	var err error
	if c.TLSFiles, err = sinks.ParseTLSFiles(p.Values()); err != nil {
		p.Add(err)
	}
	if c.TLSFiles.Set() && !c.TLS {
		p.Addf("ca, cert, key: TLS is off; use rediss:// (or tls=true for redis-cluster:// and redis-sentinel://)")
	}
	if c.SkipVerify && c.TLSFiles.CA != "" {
		p.Addf("skip_verify=true with ca: the CA would not be checked; give one of them")
	}
}

func withPort(h string, m Mode) string {
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if m == Sentinel {
		return net.JoinHostPort(h, "26379")
	}
	return net.JoinHostPort(h, "6379")
}

// parseDB reads a database number given in the URL path ("" = none).
func parseDB(s string, c *Config, p *urlparam.Query) {
	if s == "" {
		return
	}
	n, err := Params.Lookup("db").Value(s)
	if err != nil {
		p.Add(err)
		return
	}
	c.DB = n.(int)
}

// Check is the registry's CheckFunc: it validates a URL without I/O. The
// registry has already refused workloads of other kinds.
func Check(u *url.URL, _ sources.Kind) error {
	c, err := ParseURL(u)
	if err != nil {
		return err
	}
	_, err = c.tlsConfig()
	return err
}

// CheckShape refuses, without I/O, a record shape the URL cannot serve:
// a workload that scans, with index=false.
func CheckShape(u *url.URL, _ sources.Kind, shape sources.KVShape) error {
	c, err := ParseURL(u)
	if err != nil {
		return err
	}
	return checkIndex(c, shape)
}

// checkIndex refuses index=false for a workload that scans: scans walk
// the index, and without it each would find nothing and count as an
// operation done.
func checkIndex(c Config, shape sources.KVShape) error {
	if shape.Scans && !c.Index {
		return errors.New("index=false, but the workload scans (its WORKLOAD has scan), and scans walk the index: leave index= out, or choose a WORKLOAD without scans")
	}
	return nil
}

// tlsConfig is the client's TLS configuration (nil without TLS), with
// the files of ?ca=, ?cert= and ?key= read.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.SkipVerify} //nolint:gosec // opt-in via ?skip_verify=true
	if err := c.TLSFiles.Apply(tc); err != nil {
		return nil, err
	}
	return tc, nil
}
