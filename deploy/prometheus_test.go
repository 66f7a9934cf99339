package deploy

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

// promtool finds Prometheus' promtool (Debian's prometheus package has
// it); without it the test skips, or fails under SOAKD_REQUIRE_SERVERS=1.
func promtool(t *testing.T) string {
	t.Helper()
	bin := testserver.FindBinary("promtool", "/usr/bin", "/usr/local/bin")
	if bin == "" {
		testserver.Unavailable(t, "no promtool binary (apt-get install prometheus)")
	}
	return bin
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}

// The rule file is valid, its alerts fire (and stay quiet) as the recorded
// series in soakd.rules.test.yml say, and the scrape config loads it.
func TestPrometheusRulesAndConfig(t *testing.T) {
	t.Parallel()
	pt := promtool(t)
	run(t, "prometheus", pt, "check", "rules", "soakd.rules.yml")
	run(t, "prometheus", pt, "test", "rules", "soakd.rules.test.yml")
	run(t, "prometheus", pt, "check", "config", "prometheus.yml")
}
