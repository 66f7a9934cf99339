package serve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/testserver"
)

// TestHTTPS serves the endpoints over TLS with SOAKD_TLS_CERT_FILE and
// SOAKD_TLS_KEY_FILE (certificates made by the test): a client that
// trusts the CA reads /metrics and drives /control, one that does not is
// refused, and plain HTTP gets no endpoint.
func TestHTTPS(t *testing.T) {
	certs := testserver.NewCerts(t, "")
	p := enginetest.Plugins()
	l := listen(t)
	base := "https://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "200", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://", "SOAKD_CONTROL_TOKEN", "tls-token",
		"SOAKD_TLS_CERT_FILE", certs.ServerCert, "SOAKD_TLS_KEY_FILE", certs.ServerKey), p)
	startRun(t, cfg, p, l)

	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	do := func(method, path, token string) (int, string, error) {
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	eventually(t, "readyz over https", func() bool { c, _, err := do("GET", "/readyz", ""); return err == nil && c == 200 })
	eventually(t, "metrics over https", func() bool {
		c, b, err := do("GET", "/metrics", "")
		return err == nil && c == 200 && strings.Contains(b, `soakd_target_rate{workload="seq"} 200`)
	})
	if c, _, err := do("POST", "/control?rate=300", "wrong"); err != nil || c != http.StatusUnauthorized {
		t.Errorf("wrong token over https: %d %v, want 401", c, err)
	}
	if c, b, err := do("POST", "/control?rate=300", "tls-token"); err != nil || c != 200 {
		t.Fatalf("control over https: %d %s %v", c, b, err)
	}

	// A client without the CA: the certificate is refused.
	plainTr := &http.Transport{}
	defer plainTr.CloseIdleConnections()
	_, err = (&http.Client{Transport: plainTr, Timeout: 5 * time.Second}).Get(base + "/metrics")
	var uae x509.UnknownAuthorityError
	if !errors.As(err, &uae) {
		t.Errorf("a client without the CA: %v, want an unknown authority", err)
	}
	// Plain HTTP: the server answers with 400, never an endpoint.
	resp, err := (&http.Client{Transport: plainTr, Timeout: 5 * time.Second}).Get("http://" + l.Addr().String() + "/metrics")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "soakd_") {
			t.Errorf("plain HTTP: %d %.100s, want 400", resp.StatusCode, b)
		}
	}
}
