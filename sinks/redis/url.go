package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
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

var params = []string{"db", "cleanup", "index", "tls", "skip_verify", "protocol", "dial_timeout", "read_timeout",
	"write_timeout", "pool_size", "client_name", "addr", "sentinel_username", "sentinel_password", "ca", "cert", "key"}

// Schemes are the URL schemes of the sink.
var Schemes = []string{"redis", "rediss", "redis-cluster", "redis-sentinel"}

// ParseURL parses a sink URL (see the package documentation). The password
// is never part of an error message.
func ParseURL(u *url.URL) (Config, error) {
	c := Config{Protocol: 2, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, Index: true}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
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
	q := u.Query()
	for k := range q {
		if !slices.Contains(params, k) {
			bad("unknown parameter %q (known: %s)", k, strings.Join(params, ", "))
		}
	}
	for h := range strings.SplitSeq(u.Host, ",") {
		if h == "" {
			continue
		}
		c.Addrs = append(c.Addrs, withPort(h, c.Mode))
	}
	for _, h := range q["addr"] {
		if c.Mode == Single {
			bad("addr: only redis-cluster:// and redis-sentinel:// take more addresses")
			break
		}
		c.Addrs = append(c.Addrs, withPort(h, c.Mode))
	}
	if len(c.Addrs) == 0 {
		bad("no host: want %s://HOST[:PORT]", u.Scheme)
	}
	if c.Mode == Single && len(c.Addrs) > 1 {
		bad("%d hosts: redis:// takes one (use redis-cluster:// or redis-sentinel:// for several)", len(c.Addrs))
	}
	for _, a := range c.Addrs {
		if _, p, err := net.SplitHostPort(a); err != nil {
			bad("address %q: %v", a, err)
		} else if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			bad("address %q: port must be 1..65535", a)
		}
	}
	path := strings.Trim(u.Path, "/")
	switch c.Mode {
	case Sentinel:
		name, db, _ := strings.Cut(path, "/")
		c.MasterName = name
		if name == "" {
			bad("no master name: want redis-sentinel://HOST:26379[,HOST...]/MASTER[/DB]")
		}
		if db != "" {
			parseDB(db, &c, bad)
		}
	case Cluster:
		if path != "" {
			bad("path %q: a cluster has only database 0", u.Path)
		}
	default:
		if path != "" {
			parseDB(path, &c, bad)
		}
	}
	if s := q.Get("db"); s != "" {
		if c.Mode == Cluster {
			bad("db: a cluster has only database 0")
		} else {
			parseDB(s, &c, bad)
		}
	}
	boolParam(q, "cleanup", &c.Cleanup, bad)
	boolParam(q, "index", &c.Index, bad)
	if q.Has("tls") {
		if c.Mode == Single {
			bad("tls: use rediss:// for TLS to a single server")
		} else {
			boolParam(q, "tls", &c.TLS, bad)
		}
	}
	boolParam(q, "skip_verify", &c.SkipVerify, bad)
	var err error
	if c.TLSFiles, err = sinks.ParseTLSFiles(q); err != nil {
		errs = append(errs, err)
	}
	if c.TLSFiles.Set() && !c.TLS {
		bad("ca, cert, key: TLS is off; use rediss:// (or tls=true for redis-cluster:// and redis-sentinel://)")
	}
	if c.SkipVerify && c.TLSFiles.CA != "" {
		bad("skip_verify=true with ca: the CA would not be checked; give one of them")
	}
	if s := q.Get("protocol"); s != "" {
		if s != "2" && s != "3" {
			bad("protocol %q: want 2 (RESP2) or 3 (RESP3)", s)
		} else {
			c.Protocol = int(s[0] - '0')
		}
	}
	durParam(q, "dial_timeout", &c.DialTimeout, bad)
	durParam(q, "read_timeout", &c.ReadTimeout, bad)
	durParam(q, "write_timeout", &c.WriteTimeout, bad)
	intParam(q, "pool_size", &c.PoolSize, 1, 100000, bad)
	c.ClientName = q.Get("client_name")
	if q.Has("sentinel_username") || q.Has("sentinel_password") {
		if c.Mode != Sentinel {
			bad("sentinel_username, sentinel_password: only for redis-sentinel://")
		}
		c.SentinelUsername = q.Get("sentinel_username")
		c.SentinelPassword = q.Get("sentinel_password")
	}
	return c, errors.Join(errs...)
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

func parseDB(s string, c *Config, bad func(string, ...any)) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<20 {
		bad("database %q: want a number >= 0", s)
		return
	}
	c.DB = n
}

func boolParam(q url.Values, k string, dst *bool, bad func(string, ...any)) {
	if !q.Has(k) {
		return
	}
	v, err := strconv.ParseBool(q.Get(k))
	if err != nil {
		bad("%s %q: want true or false", k, q.Get(k))
		return
	}
	*dst = v
}

func durParam(q url.Values, k string, dst *time.Duration, bad func(string, ...any)) {
	s := q.Get(k)
	if s == "" {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > time.Hour {
		bad("%s %q: want a positive duration like 500ms or 5s", k, s)
		return
	}
	*dst = d
}

func intParam(q url.Values, k string, dst *int, lo, hi int, bad func(string, ...any)) {
	s := q.Get(k)
	if s == "" {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		bad("%s %q: want an integer %d..%d", k, s, lo, hi)
		return
	}
	*dst = n
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
