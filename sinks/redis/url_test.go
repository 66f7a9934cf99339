package redis

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		check    func(t *testing.T, c Config)
		err      string
	}{
		{name: "single", in: "redis://127.0.0.1:6380/2", check: func(t *testing.T, c Config) {
			if c.Mode != Single || c.Addrs[0] != "127.0.0.1:6380" || c.DB != 2 || c.TLS || !c.Index || c.Cleanup || c.Protocol != 2 {
				t.Errorf("%+v", c)
			}
		}},
		{name: "default port and acl", in: "redis://bob:pw@db.local", check: func(t *testing.T, c Config) {
			if c.Addrs[0] != "db.local:6379" || c.Username != "bob" || c.Password != "pw" {
				t.Errorf("%+v", c)
			}
		}},
		{name: "tls and params", in: "rediss://h:6390?cleanup=true&index=false&skip_verify=true&protocol=3&read_timeout=2s&pool_size=64&client_name=soak", check: func(t *testing.T, c Config) {
			if !c.TLS || !c.Cleanup || c.Index || !c.SkipVerify || c.Protocol != 3 || c.ReadTimeout != 2*time.Second ||
				c.PoolSize != 64 || c.ClientName != "soak" {
				t.Errorf("%+v", c)
			}
		}},
		{name: "cluster", in: "redis-cluster://a:7000,b:7001?addr=c:7002&tls=true", check: func(t *testing.T, c Config) {
			if c.Mode != Cluster || strings.Join(c.Addrs, " ") != "a:7000 b:7001 c:7002" || !c.TLS {
				t.Errorf("%+v", c)
			}
		}},
		{name: "sentinel", in: "redis-sentinel://u:p@s1,s2:26380/mymaster/3?sentinel_password=x", check: func(t *testing.T, c Config) {
			if c.Mode != Sentinel || strings.Join(c.Addrs, " ") != "s1:26379 s2:26380" || c.MasterName != "mymaster" ||
				c.DB != 3 || c.SentinelPassword != "x" || c.Password != "p" {
				t.Errorf("%+v", c)
			}
		}},
		// The built-in target is served by sinks/redis/embedded; to this
		// sink "embedded" is a host name like any other.
		{name: "embedded is a host", in: "redis://embedded", check: func(t *testing.T, c Config) {
			if c.Mode != Single || strings.Join(c.Addrs, " ") != "embedded:6379" {
				t.Errorf("%+v", c)
			}
		}},
		{name: "unknown param", in: "redis://h?pipeline=4", err: `unknown parameter "pipeline"`},
		{name: "max_retries", in: "redis://h?max_retries=2", err: `unknown parameter "max_retries"`},
		{name: "bad bool", in: "redis://h?cleanup=yes please", err: "cleanup"},
		{name: "bad db", in: "redis://h/x", err: `database "x"`},
		{name: "bad port", in: "redis://h:0", err: "port must be"},
		{name: "two hosts", in: "redis://a:1,b:2", err: "takes one"},
		{name: "no master", in: "redis-sentinel://s1", err: "no master name"},
		{name: "cluster db", in: "redis-cluster://a:1/3", err: "only database 0"},
		{name: "cluster db param", in: "redis-cluster://a:1?db=2", err: "only database 0"},
		{name: "cluster db 0", in: "redis-cluster://a:1,b:2/0?db=0", check: func(t *testing.T, c Config) {
			if c.Mode != Cluster || c.DB != 0 || strings.Join(c.Addrs, " ") != "a:1 b:2" {
				t.Errorf("%+v", c)
			}
		}},
		{name: "tls single", in: "redis://h?tls=true", err: "use rediss://"},
		{name: "protocol", in: "redis://h?protocol=4", err: "protocol"},
		{name: "duration", in: "redis://h?dial_timeout=-1s", err: "dial_timeout"},
		{name: "no host", in: "redis-cluster://", err: "no host"},
		{name: "sentinel param elsewhere", in: "redis://h?sentinel_password=x", err: "only for redis-sentinel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseURL(u)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseURL(%s) error %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURL(%s): %v", tt.in, err)
			}
			tt.check(t, c)
		})
	}
}

func TestPasswordNeverInErrors(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("redis://user:hunter2@h:1,b:2?bogus=1")
	_, err := ParseURL(u)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, func(t *testing.T, u *url.URL) {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatalf("Check accepts %s, ParseURL does not: %v", u, err)
		}
		if len(c.Addrs) == 0 {
			t.Fatalf("%s accepted without an address", u)
		}
		if c.Mode == Sentinel && c.MasterName == "" {
			t.Fatalf("%s accepted without a master", u)
		}
	}, "redis://h:1/0", "rediss://u:p@h?cleanup=true", "redis-cluster://a:1,b:2?addr=c", "redis-sentinel://s/m/1",
		"redis://embedded", "redis://h?read_timeout=1s&pool_size=3", "redis-cluster://:0,", "redis://[::1]:6379/1")
}

// A workload that scans cannot do without the scan index: index=false
// with it is refused at open and by the configuration check, naming both; without scans, or with the
// index, the sink opens. Bug caught: every scan found nothing and counted
// as done (2,997 scans acknowledged, errors: none).
func TestScansNeedTheIndex(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		scans bool
		ok    bool
	}{
		{"redis://127.0.0.1:1/0?index=false", true, false},
		{"redis://127.0.0.1:1/0?index=false", false, true},
		{"redis://127.0.0.1:1/0", true, true},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), u, sinks.Options{Workers: 1, Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "p:", Scans: tc.scans}})
		if s != nil {
			_ = s.Close(context.Background())
		}
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "index=false, but the workload scans") {
			t.Errorf("Open(%s) with scans %v: %v, want ok %v", tc.raw, tc.scans, err, tc.ok)
		}
		// config --check says the same, without I/O.
		if err := CheckShape(u, sources.KV, sources.KVShape{DataType: sources.DataTypeHash, Scans: tc.scans}); (err == nil) != tc.ok {
			t.Errorf("CheckShape(%s) with scans %v: %v, want ok %v", tc.raw, tc.scans, err, tc.ok)
		}
	}
}
