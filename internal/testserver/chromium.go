package testserver

import "testing"

// Chromium finds a headless-capable Chromium (Debian's chromium package,
// which scripts/install-test-deps.sh installs) for the web console's
// browser tests; the test is skipped (or fails under
// SOAKD_REQUIRE_SERVERS=1) when there is none.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p := FindBinary(name, "/usr/bin", "/usr/local/bin", "/snap/bin"); p != "" {
			return p
		}
	}
	Unavailable(t, "no chromium binary for the browser tests (apt-get install chromium)")
	return ""
}

// ChromiumFlags are the flags the browser tests start Chromium with, as
// root on a machine without network: no sandbox (root), no GPU, and none
// of the background connections (QUIC, component updates, sync, field
// trials) that would try to leave the machine. Each is a flag name
// without dashes; every test adds a fresh --user-data-dir.
var ChromiumFlags = []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
	"disable-background-networking", "disable-component-update", "disable-sync", "disable-dev-shm-usage",
	"disable-extensions", "disable-default-apps", "no-default-browser-check", "mute-audio"}
