package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// TestTLS runs the sink against a PostgreSQL that takes only TLS
// connections presenting a client certificate, all made by the test:
// verify-full with the right CA stores rows over TLS (also with an
// encrypted client key and its sslpassword); a wrong CA, a host name the
// certificate does not hold, or no client certificate fail with errors
// that name the setting to check; a missing file is a configuration
// error. The key's passphrase appears in no log line or error.
func TestTLS(t *testing.T) {
	certs := testserver.NewCerts(t, testserver.PostgresOwner())
	srv := testserver.Postgres(t, testserver.PostgresTLS(certs, true))
	base := "postgres://postgres@" + srv.Addr + "/postgres"
	good := withParams(base, "sslmode", "verify-full", "sslrootcert", certs.CA, "sslcert", certs.ClientCert, "sslkey", certs.ClientKey)
	ctx := t.Context()

	write := func(t *testing.T, raw string, log *zap.Logger) error {
		t.Helper()
		cpu := cpuSchema("cpu", 4)
		s := openSink(t, raw, log, cpu)
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := s.Prepare(pctx); err != nil {
			return err
		}
		b := sources.NewSeriesBatch([]*sources.Schema{cpu})
		fill(b.Tables[0], 4, 0, 100, testBase, false)
		if _, err := s.Write(pctx, b); err != nil {
			return err
		}
		var ssl bool
		if err := s.pool.QueryRow(pctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
			t.Fatal(err)
		}
		if !ssl {
			t.Error("the connection does not use TLS")
		}
		return nil
	}

	t.Run("verify-full", func(t *testing.T) {
		if err := write(t, good, nil); err != nil {
			t.Fatalf("verify-full with the right CA: %v", err)
		}
		if n := count(t, connect(t, good), "cpu"); n != 100 {
			t.Errorf("%d rows stored, want 100", n)
		}
	})

	t.Run("encrypted key", func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		raw := withParams(base, "sslmode", "verify-full", "sslrootcert", certs.CA, "sslcert", certs.ClientCert,
			"sslkey", certs.ClientKeyEncrypted, "sslpassword", certs.KeyPassphrase)
		if err := write(t, raw, zap.New(core)); err != nil {
			t.Fatalf("encrypted key with sslpassword: %v", err)
		}
		bad := withParams(base, "sslmode", "verify-full", "sslrootcert", certs.CA, "sslcert", certs.ClientCert,
			"sslkey", certs.ClientKeyEncrypted, "sslpassword", certs.KeyPassphrase+"-wrong")
		err := Check(mustURL(t, bad), sources.Series)
		if err == nil || !strings.Contains(err.Error(), "sslpassword") {
			t.Errorf("wrong passphrase: %v, want an error naming sslpassword", err)
		}
		for _, text := range append(logText(logs), errText(err), sinks.RedactURL(mustURL(t, raw))) {
			if strings.Contains(text, certs.KeyPassphrase) {
				t.Errorf("the key passphrase leaked: %s", text)
			}
		}
	})

	failures := []struct {
		name, raw string
		want      []string
	}{
		{"wrong CA", withParams(base, "sslmode", "verify-full", "sslrootcert", certs.OtherCA, "sslcert", certs.ClientCert, "sslkey", certs.ClientKey),
			[]string{"not signed by a trusted authority", "sslrootcert"}},
		{"wrong CA, verify-ca", withParams(base, "sslmode", "verify-ca", "sslrootcert", certs.OtherCA, "sslcert", certs.ClientCert, "sslkey", certs.ClientKey),
			[]string{"not signed by a trusted authority", "sslrootcert"}},
		{"wrong host", withParams("postgres://postgres@"+testserver.OtherHost(t, srv.Addr)+"/postgres",
			"sslmode", "verify-full", "sslrootcert", certs.CA, "sslcert", certs.ClientCert, "sslkey", certs.ClientKey),
			[]string{"not valid for the host", "sslmode=verify-full", "127.0.0.1"}},
		{"no client certificate", withParams(base, "sslmode", "verify-full", "sslrootcert", certs.CA),
			[]string{"certificate"}},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			err := write(t, withParams(tc.raw, "connect_timeout", "5"), nil)
			if err == nil {
				t.Fatal("connected")
			}
			// Refused now, refused again: soakd exits 2 instead of
			// waiting for a target that is up.
			if c := sinks.ClassOf(err); c != sinks.Rejected {
				t.Errorf("class %s, want rejected (a refused certificate is refused again): %v", c, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		err := Check(mustURL(t, withParams(base, "sslmode", "verify-full", "sslrootcert", certs.Dir+"/absent.pem")), sources.Series)
		if err == nil || !strings.Contains(err.Error(), "sslrootcert") {
			t.Errorf("got %v, want an error naming sslrootcert", err)
		}
	})
}

func logText(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		var b strings.Builder
		b.WriteString(e.Message)
		for k, v := range e.ContextMap() {
			b.WriteString(" " + k + "=")
			b.WriteString(strings.TrimSpace(strings.ReplaceAll(toString(v), "\n", " ")))
		}
		out = append(out, b.String())
	}
	return out
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return fmt.Sprint(v)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A server without TLS refuses sslmode=require's request for it: a
// configuration error naming sslmode, not a target to wait for. With
// sslmode=prefer the refusal is followed by a plain-text attempt, whose
// own failure (here a database that does not exist) is what the error
// tells. Bug caught: sslmode=require against it retried as "connection"
// until START_TIMEOUT.
func TestTLSRequiredOfAServerWithout(t *testing.T) {
	srv := testserver.Postgres(t)
	base := "postgres://postgres@" + srv.Addr
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	err := openSink(t, base+"/postgres?sslmode=require", nil).Ping(ctx)
	if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), "sslmode=disable or prefer") {
		t.Errorf("sslmode=require against a server without TLS: %v; want a rejected TLS mismatch naming sslmode", err)
	}
	err = openSink(t, base+"/nosuchdb?sslmode=prefer", nil).Ping(ctx)
	if err == nil || sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), "nosuchdb") {
		t.Errorf("sslmode=prefer, a database that does not exist: %v; want the database's error, not a TLS mismatch", err)
	}
	if err := openSink(t, base+"/postgres?sslmode=prefer", nil).Ping(ctx); err != nil {
		t.Errorf("sslmode=prefer: %v", err)
	}
}
