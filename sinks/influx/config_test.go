package influx

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

func mustParse(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatalf("sinks.Parse(%q): %v", raw, err)
	}
	return u
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url string
		check     func(t *testing.T, c Config)
	}{
		{"v2 defaults", "influx://db.example:8086?org=acme&bucket=soak&token=T0K", func(t *testing.T, c Config) {
			want := Config{API: V2, Host: "db.example:8086", Org: "acme", Bucket: "soak", Token: "T0K",
				Create: true, Idempotent: true}
			if c != want {
				t.Errorf("got %+v\nwant %+v", c, want)
			}
			if got := c.baseURL(); got != "http://db.example:8086" {
				t.Errorf("baseURL %q", got)
			}
			if got := c.authHeader(); got != "Token T0K" {
				t.Errorf("auth %q", got)
			}
		}},
		{"v2 tls, 1.8 user:password token, precision, gzip level", "influxs://u:pw@h:8086/proxy/?bucket=db/rp&precision=us&gzip=6&insecure=true", func(t *testing.T, c Config) {
			if !c.TLS || !c.Insecure || c.baseURL() != "https://h:8086/proxy" || c.Precision != lineproto.Microsecond ||
				c.PrecisionParam != "us" || c.Gzip != 6 || c.authHeader() != "Token u:pw" {
				t.Errorf("got %+v base %q auth %q", c, c.baseURL(), c.authHeader())
			}
		}},
		{"v1 influxdb", "influx1://127.0.0.1:8086?db=bench&rp=autogen&precision=u&gzip=true&u=admin&p=s3cret", func(t *testing.T, c Config) {
			if c.API != V1 || c.DB != "bench" || c.RP != "autogen" || c.PrecisionParam != "u" || c.Precision != lineproto.Microsecond ||
				c.Gzip != 1 || c.WritePath != "/write" || c.PingPath != "/ping" || !c.Create || !c.Idempotent || c.Product.Name != "influxdb" {
				t.Errorf("got %+v", c)
			}
			if got := c.authHeader(); got != "Basic YWRtaW46czNjcmV0" {
				t.Errorf("auth %q", got)
			}
		}},
		{"api=v1 on influx://", "influx://h:1?api=v1&db=x", func(t *testing.T, c Config) {
			if c.API != V1 || c.DB != "x" {
				t.Errorf("got %+v", c)
			}
		}},
		{"victoriametrics needs no db and is not idempotent", "influx1://vm:8428?product=victoriametrics", func(t *testing.T, c Config) {
			if c.WritePath != "/write" || c.Idempotent || c.DB != "" {
				t.Errorf("got %+v", c)
			}
		}},
		{"cnosdb paths, explicit idempotent", "influx1://c:8902?product=cnosdb&db=public&idempotent=false&auth=basic&u=root", func(t *testing.T, c Config) {
			if c.WritePath != "/api/v1/write" || c.PingPath != "/api/v1/ping" || c.Idempotent || c.authHeader() != "Basic cm9vdDo=" {
				t.Errorf("got %+v auth %q", c, c.authHeader())
			}
		}},
		{"custom path, bearer token", "influx1://q:9000?product=questdb&path=/api/v2/write&auth=bearer&token=abc&create=false&timeout=5s", func(t *testing.T, c Config) {
			if c.WritePath != "/api/v2/write" || c.authHeader() != "Bearer abc" || c.Create || c.Timeout != 5*time.Second {
				t.Errorf("got %+v auth %q", c, c.authHeader())
			}
		}},
		{"token default scheme", "influx1://h:1?db=x&token=abc", func(t *testing.T, c Config) {
			if c.authHeader() != "Token abc" {
				t.Errorf("auth %q", c.authHeader())
			}
		}},
		{"no credentials", "influx1://h:1?db=x", func(t *testing.T, c Config) {
			if c.authHeader() != "" {
				t.Errorf("auth %q", c.authHeader())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseURL(mustParse(t, tc.url))
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tc.url, err)
			}
			tc.check(t, c)
		})
	}
}

// Every bad parameter is reported, each naming itself.
func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"influx://h:8086", []string{"bucket is required"}},
		{"influx://h:8086?bucket=b&db=x", []string{`parameter "db" is for the v1 API`}},
		{"influx1://h:8086?db=x&bucket=b&org=o", []string{`parameter "bucket" is for the v2 API`, `parameter "org" is for the v2 API`}},
		{"influx1://h:8086?db=x&colour=red", []string{`unknown parameter "colour" (known: `}},
		{"influx1://h:8086", []string{"db is required for influxdb"}},
		{"influx1://h:8086?db=x&api=v2", []string{"influx1:// is the v1 API"}},
		{"influx://h:8086?bucket=b&api=v3", []string{`api "v3"`}},
		{"influx1://h:8086?db=x&precision=m&gzip=11&timeout=-1s&create=maybe", []string{`precision "m"`, `gzip "11"`, `timeout "-1s"`, `create "maybe"`}},
		{"influx1://h:8086?db=x&product=mysql", []string{`product "mysql": want one of influxdb, cnosdb`}},
		{"influx1://h:8086?db=x&path=write&ping_path=/p?x", []string{`path "write"`, `ping_path "/p?x"`}},
		{"influx1://h:8086?db=x&auth=digest", []string{`auth "digest"`}},
		{"influx1://h:8086?db=x&insecure=true", []string{"insecure=true needs TLS"}},
		{"influx1://a:b@h:8086?db=x&u=c&p=d", []string{"u: the user is also given", "p: the password is also given"}},
		{"influx1://:8086?db=x", []string{"no host"}},
		{"influx1://h:99999?db=x", []string{`port "99999"`}},
		{"influx1://h:1?db=x&db=y", []string{`parameter "db" is given 2 times`}},
		{"influx1:h?db=x", []string{"want influx1://HOST:PORT"}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			_, err := ParseURL(mustParse(t, tc.url))
			if err == nil {
				t.Fatalf("ParseURL(%q) accepted", tc.url)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if cerr := Check(mustParse(t, tc.url), sources.Series); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Check = %v, want the ParseURL error", cerr)
			}
		})
	}
}

// Secrets stay out of descriptions, errors and the redacted URL.
func TestSecretsNotShown(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"influx1://admin:hunter2@h:1?db=x",
		"influx1://h:1?db=x&u=admin&p=hunter2",
		"influx1://h:1?db=x&token=hunter2",
		"influx://h:1?bucket=b&token=hunter2",
		"influx1://admin:hunter2@h:1?db=x&colour=red&gzip=99",
	} {
		u := mustParse(t, raw)
		if r := sinks.Redact(raw); strings.Contains(r, "hunter2") {
			t.Errorf("sinks.Redact(%q) = %q", raw, r)
		}
		c, err := ParseURL(u)
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) error shows the secret: %v", raw, err)
		}
		if strings.Contains(c.String(), "hunter2") {
			t.Errorf("Config.String() = %q", c.String())
		}
	}
}

// Options.Password and Options.Token fill what the URL leaves out; the
// URL wins when it has them.
func TestSecretsFromOptions(t *testing.T) {
	t.Parallel()
	open := func(raw string, o sinks.Options) *Sink {
		s, err := Open(context.Background(), mustParse(t, raw), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s.(*Sink)
	}
	if s := open("influx1://admin@h:1?db=x", sinks.Options{Password: "pw"}); s.auth != "Basic YWRtaW46cHc=" {
		t.Errorf("password from options: auth %q", s.auth)
	}
	if s := open("influx1://h:1?db=x", sinks.Options{Token: "tk"}); s.auth != "Token tk" {
		t.Errorf("token from options: auth %q", s.auth)
	}
	if s := open("influx1://h:1?db=x&token=url", sinks.Options{Token: "opt"}); s.auth != "Token url" {
		t.Errorf("URL token wins: auth %q", s.auth)
	}
	if s := open("influx://h:1?bucket=b", sinks.Options{Token: "tk"}); s.auth != "Token tk" {
		t.Errorf("v2 token from options: auth %q", s.auth)
	}
}

// KV workloads are rejected (by the registry entry, as cmd/soakd has it),
// and so are schemas line protocol cannot carry.
func TestOpenChecks(t *testing.T) {
	t.Parallel()
	const raw = "influx1://h:1?db=x"
	reg := enginePlugins().Sinks
	if _, err := reg.Open(context.Background(), raw, sinks.Options{Kind: sources.KV}); err == nil || !strings.Contains(err.Error(), "kv workloads") {
		t.Errorf("KV: %v", err)
	}
	if err := reg.Check(raw, sources.KV); err == nil {
		t.Error("Check accepted a KV workload")
	}
	u := mustParse(t, raw)
	bad := &sources.Schema{Measurement: "#cpu", Fields: []sources.Field{{Name: "time", Kind: sources.Float}}}
	_, err := Open(context.Background(), u, sinks.Options{Kind: sources.Series, Schemas: []*sources.Schema{bad}})
	if err == nil || !strings.Contains(err.Error(), "comment") || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("bad schema: %v", err)
	}
}

func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, func(t *testing.T, u *url.URL) {
		c, err := ParseURL(u)
		if err != nil {
			t.Fatalf("Check accepts %s, ParseURL does not: %v", u, err)
		}
		if c.Host == "" || c.Timeout < 0 || c.Gzip < 0 || c.Gzip > 9 || c.API == V2 && c.Bucket == "" {
			t.Fatalf("accepted an invalid config %+v from %s", c, u)
		}
		// String must not depend on the secrets (a substring test would
		// also find a password "1" in "v1").
		other := c
		other.Password, other.Token = c.Password+"x", c.Token+"x"
		if c.String() != other.String() {
			t.Fatalf("String() shows a secret: %q", c.String())
		}
		_ = c.authHeader()
	},
		"influx://h:8086?org=o&bucket=b&token=t", "influxs://u:p@h/x?bucket=db/rp&precision=ms&gzip=9",
		"influx1://h:8086?db=x&rp=y&u=a&p=b&product=tdengine&path=/influxdb/v1/write&auth=basic",
		"influx1://h?db=x&gzip=0&timeout=1ms&create=false&idempotent=true&tls=1&insecure=1",
		"influx1://[::1]:8086?db=%ZZ", "influx://h:0?bucket=", "influx1:opaque",
	)
}
