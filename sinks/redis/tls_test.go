package redis

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// TestTLS runs the sink against a redis-server that serves only TLS and
// requires a client certificate, all made by the test: rediss:// with
// ?ca=&cert=&key= stores the records; a wrong CA, a host name the
// certificate does not hold or no client certificate fail with errors
// that name what to check, and never show the password.
func TestTLS(t *testing.T) {
	certs := testserver.NewCerts(t, "")
	const password = "s3cret-Redis-pw"
	srv := testserver.RedisTLS(t, certs, true, "--requirepass", password)
	q := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	base := "rediss://:" + password + "@" + srv.Addr + "/0"
	shape := sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "tls:"}}

	t.Run("verified", func(t *testing.T) {
		c := kv.DefaultConfig()
		c.Records, c.KeyPrefix = 200, "tls:"
		s := open(t, base+"?"+q("ca", certs.CA, "cert", certs.ClientCert, "key", certs.ClientKey), shape)
		if n := runLoad(t, source(t, c), s, 2); n != 200 {
			t.Fatalf("load wrote %d records", n)
		}
		tc := &goredis.Options{Addr: srv.Addr, Password: password, Protocol: 2, DisableIdentity: true, TLSConfig: s.own.TLSConfig}
		a := goredis.NewClient(tc)
		defer a.Close()
		if n, err := a.DBSize(t.Context()).Result(); err != nil || n != 201 {
			t.Fatalf("DBSIZE %d, %v; want 200 records and the scan index", n, err)
		}
	})

	failures := []struct {
		name, raw string
		want      []string
	}{
		{"wrong CA", base + "?" + q("ca", certs.OtherCA, "cert", certs.ClientCert, "key", certs.ClientKey),
			[]string{"not signed by a trusted authority", "set ca"}},
		{"system CAs", base + "?" + q("cert", certs.ClientCert, "key", certs.ClientKey),
			[]string{"not signed by a trusted authority", "set ca"}},
		{"wrong host", "rediss://:" + password + "@" + testserver.OtherHost(t, srv.Addr) + "/0?" + q("ca", certs.CA, "cert", certs.ClientCert, "key", certs.ClientKey),
			[]string{"not valid for the host", "127.0.0.1"}},
		// With TLS 1.3 the server checks the client's certificate after
		// the client's handshake ended: the error is its alert or a reset.
		{"no client certificate", base + "?" + q("ca", certs.CA), nil},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.raw+"&dial_timeout=3s&read_timeout=3s", shape)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := s.Ping(ctx)
			if err == nil {
				t.Fatal("Ping succeeded")
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("the password leaked: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(tc.want) > 0 && sinks.ClassOf(err) != sinks.Rejected {
				t.Errorf("class %s, want rejected (a refused certificate is refused again)", sinks.ClassOf(err))
			}
		})
	}

	for _, tc := range []struct{ raw, want string }{
		{"redis://" + srv.Addr + "?" + q("ca", certs.CA), "use rediss://"},
		{"rediss://" + srv.Addr + "?" + q("ca", certs.Dir+"/absent.pem"), "ca " + certs.Dir + "/absent.pem: cannot read"},
		{"rediss://" + srv.Addr + "?" + q("ca", certs.ClientKey), "no PEM certificate"},
		{"rediss://" + srv.Addr + "?" + q("cert", certs.ClientCert), "cert, key"},
		{"rediss://" + srv.Addr + "?" + q("cert", certs.ClientCert, "key", certs.ClientKeyEncrypted), "encrypted key is not supported"},
		{"rediss://" + srv.Addr + "?" + q("ca", certs.CA, "skip_verify", "true"), "skip_verify"},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(u, sources.KV); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.raw, err, tc.want)
		}
	}
}

// A URL to a server of another protocol is a configuration error naming
// what to change, not a target to wait for: rediss:// to a plain-text
// server (whose TLS handshake never gets an answer), redis:// to a
// TLS-only one (whose commands are cut), and redis:// or rediss:// to an
// HTTP, HTTPS or PostgreSQL server (a wrong port; an HTTPS one completes a
// TLS handshake, and was taken for a Redis over TLS). With TLS on both sides, or off on both, nothing is said
// of TLS. Bug caught: each waited until START_TIMEOUT, the first as
// "timeout".
func TestProtocolOtherThanTheURLs(t *testing.T) {
	plain := testserver.Redis(t)
	certs := testserver.NewCerts(t, "")
	secure := testserver.RedisTLS(t, certs, false)
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	// An HTTPS port (an ingress's 443) completes a TLS handshake and
	// answers plain text with HTTP 400, as nginx and Go's servers do.
	https := httptest.NewTLSServer(http.NotFoundHandler())
	defer https.Close()
	httpsAddr := strings.TrimPrefix(https.URL, "https://")
	// PostgreSQL closes at a PING, with no answer: it was retried as a
	// lost connection, forever.
	pg := testserver.Postgres(t)
	const short = "dial_timeout=1s&read_timeout=1s"
	shape := sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "tls:"}}
	ping := func(raw string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return open(t, raw, shape).Ping(ctx)
	}
	for _, tc := range []struct{ raw, want string }{
		{"rediss://" + plain.Addr + "/0?" + short, "answers in plain text, not TLS: use redis://"},
		{"redis://" + secure.Addr + "/0?" + short, "speaks TLS: use rediss://"},
		{"redis://" + strings.TrimPrefix(web.URL, "http://") + "/0?" + short, "speaks HTTP, not Redis"},
		{"redis://" + httpsAddr + "/0?" + short, "speaks HTTPS, not Redis"},
		{"rediss://" + httpsAddr + "/0?skip_verify=true&" + short, "speaks HTTPS, not Redis"},
		{"redis://" + pg.Addr + "/0?" + short, "speaks PostgreSQL, not Redis"},
		{"rediss://" + pg.Addr + "/0?" + short, "speaks PostgreSQL, not Redis"},
	} {
		err := ping(tc.raw)
		if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ping(%s) = %v; want a rejected protocol mismatch saying %q", tc.raw, err, tc.want)
		}
	}
	if err := ping("redis://" + plain.Addr + "/0"); err != nil {
		t.Errorf("plain text to plain text: %v", err)
	}
	if err := ping("rediss://" + secure.Addr + "/0?skip_verify=true&" + short); err != nil {
		t.Errorf("TLS to TLS: %v", err)
	}
	// A server that is down is waited for, as before.
	down := plain.Addr
	plain.StopKeep()
	if err := ping("rediss://" + down + "/0?" + short); err == nil || sinks.IsProtocolMismatch(err) || sinks.ClassOf(err) == sinks.Rejected {
		t.Errorf("rediss:// to a server that is down: %v; want a connection error to wait out", err)
	}
}
