package remotewrite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// soakdHash is the bcrypt hash of "s3cret-pass" (cost 4), for
// Prometheus' basic_auth_users.
const soakdHash = "$2a$04$aIuBl4d/HxSlVx5dX5HySujyyT.MpIdOfQ6hZRPdj5Lz2Ohkem0VC"

// Prometheus serving HTTPS only, behind basic auth: the sink writes with
// the CA of ca= and the password from PASSWORD, and reads its figures and
// rows back with them; a wrong password is refused as authentication,
// and a server certificate of an unknown CA as TLS, both without
// showing the password.
func TestTLSBasicAuth(t *testing.T) {
	certs := testserver.NewCerts(t, "")
	srv := testserver.PrometheusReceiver(t, 0, testserver.PrometheusTLS(certs),
		testserver.PrometheusBasicAuth("soakd", "s3cret-pass", soakdHash))
	schemas := []*sources.Schema{cpuSchema("cpu")}
	raw := "prom+https://soakd@" + srv.Addr + "/api/v1/write?ca=" + certs.CA
	s := openSink(t, raw, sinks.Options{Schemas: schemas, Password: "s3cret-pass"})
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	b := sources.NewSeriesBatch(schemas)
	g := &gen{devices: 3, start: time.Now().Add(-time.Hour).Truncate(time.Second), step: time.Second}
	g.fill(b, 30)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if f, err := s.TargetFigures(ctx); err != nil || len(f.Unavailable) != 1 || f.Memory["rss"] <= 0 {
		t.Errorf("figures %+v: %v", f, err)
	}
	out := []*sources.Table{sources.NewTable(schemas[0])}
	if err := s.ReadSeries(ctx, []sinks.SeriesQuery{{Schema: schemas[0], Device: 1, From: 0, To: 1<<63 - 1}}, out); err != nil || out[0].Len() != 10 {
		t.Errorf("read back %d rows: %v", out[0].Len(), err)
	}

	bad := openSink(t, raw, sinks.Options{Schemas: schemas, Password: "wrong-pass"})
	err := bad.Ping(ctx)
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), sinks.AuthFailed) || strings.Contains(err.Error(), "wrong-pass") {
		t.Errorf("wrong password: %v", err)
	}
	other := testserver.NewCerts(t, "")
	untrusted := openSink(t, "prom+https://soakd@"+srv.Addr+"/api/v1/write?ca="+other.CA, sinks.Options{Schemas: schemas, Password: "s3cret-pass"})
	_, err = untrusted.Write(ctx, b)
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "set ca to the CA") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unknown CA: %v", err)
	}
}

// A prom+https:// URL to a server that speaks plain HTTP is refused at
// once, as a configuration error naming the scheme to give. Bug caught:
// net/http's "server gave HTTP response to HTTPS client" was taken for a
// broken connection and retried, so soakd waited for the target until
// START_TIMEOUT, by default for ever.
func TestHTTPSToPlainHTTP(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, 0)
	schemas := []*sources.Schema{cpuSchema("cpu")}
	s := openSink(t, "prom+https://"+srv.Addr+"/api/v1/write", sinks.Options{Schemas: schemas})
	ctx := t.Context()
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 3, start: time.Now().Add(-time.Hour).Truncate(time.Second), step: time.Second}).fill(b, 30)
	_, werr := s.Write(ctx, b)
	for what, err := range map[string]error{"Ping": s.Ping(ctx), "Write": werr} {
		retry, _ := sinks.Retryable(err)
		if sinks.ClassOf(err) != sinks.Rejected || retry || !strings.Contains(err.Error(), "plain HTTP") || !strings.Contains(err.Error(), "prom+http://") {
			t.Errorf("%s: class %s, retry %v: %v; want rejected, not resent, saying the server speaks plain HTTP", what, sinks.ClassOf(err), retry, err)
		}
	}
}
