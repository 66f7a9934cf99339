package influx

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// TestTLS runs both APIs against an InfluxDB 1.8 that serves only HTTPS
// with a certificate the test made: with ?ca= the rows are stored; a
// wrong CA, the system's CAs or a host name the certificate does not
// hold fail with errors that name what to check, without the password.
func TestTLS(t *testing.T) {
	certs := testserver.NewCerts(t, "")
	srv := testserver.Influx(t, testserver.InfluxTLS(certs))
	const password = "influx-Pw-9x"
	ca := url.QueryEscape(certs.CA)
	ctx := t.Context()
	for _, tc := range []struct{ name, raw, db string }{
		{"v2 influxs", "influxs://" + srv.Addr + "?bucket=tlsv2&ca=" + ca, "tlsv2"},
		{"v1 tls=true", "influx1://" + srv.Addr + "?db=tlsv1&tls=true&u=w&p=" + password + "&ca=" + ca, "tlsv1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schemas := []*sources.Schema{cpuSchema("cpu")}
			s := openSink(t, tc.raw, sinks.Options{Schemas: schemas, Workers: 1})
			if err := s.Prepare(ctx); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			g := &gen{devices: 3, start: time.Now().Add(-time.Hour), step: time.Second}
			b := sources.NewSeriesBatch(schemas)
			g.fill(b, 90)
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if n := countTLS(t, s.tr, srv.URL, tc.db); n != 90 {
				t.Errorf("%d rows stored, want 90", n)
			}
		})
	}

	other := testserver.OtherHost(t, srv.Addr)
	for _, tc := range []struct {
		name, raw string
		want      []string
	}{
		{"wrong CA", "influx1://" + srv.Addr + "?db=x&tls=true&u=w&p=" + password + "&ca=" + url.QueryEscape(certs.OtherCA),
			[]string{"not signed by a trusted authority", "set ca"}},
		{"system CAs", "influxs://" + srv.Addr + "?bucket=x&token=" + password, []string{"not signed by a trusted authority", "set ca"}},
		{"wrong host", "influxs://" + other + "?bucket=x&token=" + password + "&ca=" + ca, []string{"not valid for the host", "127.0.0.1"}},
		{"plain http to https", "influx1://" + srv.Addr + "?db=x&u=w&p=" + password, []string{"400"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openSink(t, tc.raw, sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}, Workers: 1})
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err := s.Ping(pctx)
			if err == nil {
				t.Fatal("Ping succeeded")
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("the password leaked: %v", err)
			}
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

	for _, tc := range []struct{ raw, want string }{
		{"influx1://" + srv.Addr + "?db=x&ca=" + ca, "TLS is off"},
		{"influxs://" + srv.Addr + "?bucket=x&ca=" + url.QueryEscape(certs.Dir+"/absent.pem"), "ca " + certs.Dir + "/absent.pem: cannot read"},
		{"influxs://" + srv.Addr + "?bucket=x&key=" + url.QueryEscape(certs.ClientKey), "cert, key"},
		{"influxs://" + srv.Addr + "?bucket=x&insecure=true&ca=" + ca, "insecure"},
	} {
		if err := Check(mustParse(t, tc.raw), sources.Series); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.raw, err, tc.want)
		}
	}
}

// An influxs:// URL (or tls=true) to an InfluxDB that speaks plain HTTP
// is refused at once, naming the scheme to give: it was taken for a
// broken connection and waited for until START_TIMEOUT, by default for
// ever.
func TestTLSToPlainHTTP(t *testing.T) {
	srv := testserver.Influx(t)
	ctx := t.Context()
	for _, raw := range []string{"influxs://" + srv.Addr + "?bucket=x", "influx1://" + srv.Addr + "?db=x&tls=true"} {
		s := openSink(t, raw, sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}, Workers: 1})
		err := s.Ping(ctx)
		retry, _ := sinks.Retryable(err)
		if sinks.ClassOf(err) != sinks.Rejected || retry || !strings.Contains(err.Error(), "plain HTTP") || !strings.Contains(err.Error(), "influx://") {
			t.Errorf("%s: class %s, retry %v: %v; want rejected, not resent, saying the server speaks plain HTTP", raw, sinks.ClassOf(err), retry, err)
		}
	}
}

// countTLS is SELECT count(usage_user) FROM cpu over the sink's own
// transport (which trusts the test's CA).
func countTLS(t *testing.T, tr http.RoundTripper, base, db string) int64 {
	t.Helper()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	resp, err := hc.PostForm(base+"/query", url.Values{"db": {db}, "q": {"SELECT count(usage_user) FROM cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Results []struct {
			Series []series `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if len(out.Results) == 0 || len(out.Results[0].Series) == 0 {
		return 0
	}
	n, _ := out.Results[0].Series[0].Values[0][1].(float64)
	return int64(n)
}
