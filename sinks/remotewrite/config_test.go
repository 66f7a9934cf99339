package remotewrite

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	c, err := ParseURL(mustParse(t, "prom+https://u:pw@h:443/api/v1/push?header=X-Scope-OrgID:tenant1&header=x-extra:%20a%20b&label=run:r1&timeout=5s&idempotent=false"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.TLS || c.Host != "h:443" || c.Path != "/api/v1/push" || c.User != "u" || c.Password != "pw" || c.Idempotent || c.Timeout.Seconds() != 5 {
		t.Errorf("config %+v", c)
	}
	if c.Headers.Get("X-Scope-Orgid") != "tenant1" || c.Headers.Get("X-Extra") != "a b" || len(c.Labels) != 1 || c.Labels[0] != (Label{"run", "r1"}) {
		t.Errorf("headers %v labels %v", c.Headers, c.Labels)
	}
	if c.String() != "https://h:443/api/v1/push" {
		t.Errorf("String() = %q", c.String())
	}
	c, err = ParseURL(mustParse(t, "prom+http://127.0.0.1:9090"))
	if err != nil || c.Path != DefaultPath || !c.Idempotent || c.MetricsPath != "/metrics" || c.authHeader() != "" || c.Protocol != ProtoAuto {
		t.Errorf("defaults: %+v %v", c, err)
	}
	for _, path := range []string{"/api/v1/imports", "/api/v1/importer/api/v1/write", "/import/api/v1/write"} {
		if c, err := ParseURL(mustParse(t, "prom+http://h"+path)); err != nil || c.Path != path {
			t.Errorf("path %s, not an import path: %+v %v", path, c, err)
		}
	}
	for v, want := range map[string]string{"auto": "auto", "1.0": "1.0", "1": "1.0", "2.0": "2.0", "2": "2.0"} {
		if c, err := ParseURL(mustParse(t, "prom+http://h/?protocol="+v)); err != nil || c.Protocol.String() != want {
			t.Errorf("protocol=%s: %s %v, want %s", v, c.Protocol, err, want)
		}
	}

	for _, tc := range []struct{ url, want string }{
		{"prom+http:///api/v1/write", "no host"},
		{"prom+http://h:99999/", `port "99999"`},
		{"prom+http://h/?header=nocolon", `header (not NAME:VALUE): want NAME:VALUE`},
		{"prom+http://h/?header=X-Api-Key=k", `header X-Api-Key...: want NAME:VALUE`},
		{"prom+http://h/?header=X-Api-Key%20k", `header X-Api-Key...: want NAME:VALUE`},
		{"prom+http://h/?header=c2VjcmV0a2V5MTI%3D", `header (not NAME:VALUE): want NAME:VALUE`},
		{"prom+http://h/?header=c2VjcmV0a2V5MQ%3D%3D", `header (not NAME:VALUE): want NAME:VALUE`},
		{"prom+http://h/?header=sk_live_abc123/xyz", `header (not NAME:VALUE): want NAME:VALUE`},
		{"prom+http://h/?header=Authorization:Bearer%20x", "header Authorization: give the credentials"},
		{"prom+http://h/?header=Content-Type:text/plain", "header Content-Type: the sink sets it"},
		{"prom+http://h/?label=1x:v", `label "1x:v"`},
		{"prom+http://h/?label=__name__:v", `label "__name__:v"`},
		{"prom+http://h/?label=a:", "the value is empty"},
		{"prom+http://h/?label=a:1&label=a:2", `label "a" is given twice`},
		{"prom+http://h/?timeout=0s", "timeout"},
		{"prom+http://h/?protocol=3.0", "protocol"},
		{"prom+http://h/?insecure=true", "insecure=true needs TLS"},
		{"prom+http://h/?ca=/x.pem", "TLS is off"},
		{"prom+http://h/?nope=1", `unknown parameter "nope"`},
		{"prom+http://h/?timeout=1s&timeout=2s", `"timeout" is given 2 times`},
		{"prom+http://h/?metrics_path=metrics", "metrics_path"},
		{"prom+http://h/api/v1/import", "path /api/v1/import is VictoriaMetrics' import (JSON lines, CSV, its native format or Prometheus text), not remote write, and would discard every batch it answers 204: use /api/v1/write"},
		{"prom+http://h/insert/0/prometheus/api/v1/import/native", "use /insert/0/prometheus/api/v1/write"},
		{"prom+http://h/api/v1/import/prometheus", "use /api/v1/write"},
		{"prometheus://h/", "want prom+http:// or prom+https://"},
	} {
		_, err := ParseURL(mustParse(t, tc.url))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	// A header's value is not repeated in errors: it may be a key.
	// Nor when the separator is wrong, nor when the name is missing: then
	// there is no telling name from value.
	for _, h := range []string{"bad%20name:s3cret", "X-Api-Key=s3cret", "X-Api-Key%20s3cret", "X-Api-Key=s3cret:x", "s3cret"} {
		if _, err := ParseURL(mustParse(t, "prom+http://h/?header="+h)); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("header=%s: %v", h, err)
		}
	}
	if err := Params.Validate(); err != nil {
		t.Error(err)
	}
}

// Credentials: the URL's user and password or PASSWORD for basic auth,
// TOKEN for a bearer token, never both.
func TestSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, password, token, auth, err string
	}{
		{url: "prom+http://u@h/", password: "pw", auth: "Basic dTpwdw=="},
		{url: "prom+http://u:url@h/", password: "pw", auth: "Basic dTp1cmw="},
		{url: "prom+http://h/", token: "tok", auth: "Bearer tok"},
		{url: "prom+http://u@h/", token: "t0k3n", err: "give one of them"},
		{url: "prom+http://h/", password: "pa55", err: "without a user"},
	} {
		c, err := ParseURL(mustParse(t, tc.url))
		if err != nil {
			t.Fatal(err)
		}
		err = c.withSecrets(tc.password, tc.token)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "pa55") || strings.Contains(err.Error(), "t0k3n") {
				t.Errorf("%s: %v, want %q", tc.url, err, tc.err)
			}
		case err != nil || c.authHeader() != tc.auth:
			t.Errorf("%s: %q %v, want %q", tc.url, c.authHeader(), err, tc.auth)
		}
	}
	// The URL's password and its headers' values (an API key, maybe)
	// are redacted where soakd shows the target.
	if r := sinks.Redact("prom+https://u:s3cret@h/api/v1/write?header=X-Api-Key:k3y&label=run:a"); strings.Contains(r, "s3cret") || strings.Contains(r, "k3y") || !strings.Contains(r, "run") {
		t.Errorf("Redact: %s", r)
	}
}
