package daemon

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/internal/testserver"
)

func TestHTTPSConfigErrors(t *testing.T) {
	certs := testserver.NewCerts(t, "")
	p := testPlugins()
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"cert only": {testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_TLS_CERT_FILE", certs.ServerCert), "SOAKD_TLS_CERT_FILE: set both SOAKD_TLS_CERT_FILE and SOAKD_TLS_KEY_FILE"},
		"key only":  {testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_TLS_KEY_FILE", certs.ServerKey), "set both"},
		"missing":   {testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_TLS_CERT_FILE", certs.Dir+"/absent.pem", "SOAKD_TLS_KEY_FILE", certs.ServerKey), "SOAKD_TLS_CERT_FILE: cannot load"},
		"wrong key": {testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_TLS_CERT_FILE", certs.ServerCert, "SOAKD_TLS_KEY_FILE", certs.ClientKey), "SOAKD_TLS_CERT_FILE: cannot load"},
	} {
		cfg, err := config.Load(tc.env, p.Sources)
		if err == nil {
			err = cfg.Validate(p)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
