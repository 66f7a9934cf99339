package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
)

// TestPasswordsNeverShown runs soakd end to end with passwords in its
// target URLs: one PostgreSQL target that is down (so its errors reach
// the log, /status, /readyz and the summary) and one real redis-server
// that requires its password, plus SOAKD_<W>_PASSWORD and the control
// token. No password appears in the log, /status, /readyz, /metrics,
// /history, the web console, `soakd config`, the summary text and JSON,
// or the HTML report.
func TestPasswordsNeverShown(t *testing.T) {
	const pgPass, redisPass, envPass, token = "pg-Pass-4kq", "redis-Pass-7zt", "env-Pass-2mw", "ctl-Token-9vb"
	srv := testserver.Redis(t, "--requirepass", redisPass)
	dir := t.TempDir()
	report, js := filepath.Join(dir, "run.html"), filepath.Join(dir, "sum.json")
	port := testserver.FreePort(t)
	env := map[string]string{
		"SOAKD_WORKLOADS":  "iot,kv",
		"SOAKD_IOT_TARGET": fmt.Sprintf("postgres://bench:%s@127.0.0.1:%d/bench?sslmode=disable&connect_timeout=1", pgPass, testserver.ClosedPort(t)),
		"SOAKD_IOT_RATE":   "100",
		"SOAKD_KV_TARGET":  "redis://:" + redisPass + "@" + srv.Addr + "/0",
		"SOAKD_KV_RATE":    "200", "SOAKD_KV_RECORDS": "100",
		"SOAKD_IOT_PASSWORD":   envPass,
		"SOAKD_CONTROL_TOKEN":  token,
		"SOAKD_LISTEN":         fmt.Sprintf("127.0.0.1:%d", port),
		"SOAKD_LOG_FORMAT":     "json",
		"SOAKD_SHUTDOWN_GRACE": "2s",
	}
	secrets := []string{pgPass, redisPass, envPass, token}
	check := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("a secret (%s) appears in %s", s, what)
			}
		}
	}

	code, out, errs := run(t, env, "config")
	if code != 0 {
		t.Fatalf("soakd config: exit %d\n%s", code, errs)
	}
	check("soakd config", out+errs)

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"--duration", "1m", "--report", report, "--summary-json", js}, env, &stdout, &stderr)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	hc := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) string {
		resp, err := hc.Get(base + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st := get("/status")
		if strings.Contains(get("/readyz"), "iot: connection error") && strings.Contains(st, "kv") && strings.Contains(get("/metrics"), `soakd_ops_total{op="read",result="ok",workload="kv"}`) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	pages := map[string]string{}
	for _, p := range []string{"/status", "/readyz", "/metrics", "/history", "/"} {
		pages[p] = get(p)
		check(p, pages[p])
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("soakd did not stop")
	}
	hc.CloseIdleConnections()
	check("the log", stderr.String())
	check("the summary", stdout.String())
	// Else the test would prove nothing: the errors with the URLs' text
	// did reach the summary and the log.
	if !strings.Contains(stdout.String(), "127.0.0.1") || !strings.Contains(stdout.String(), "refused") {
		t.Errorf("the summary does not name the targets and the PostgreSQL error:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "refused") {
		t.Errorf("the log does not show the PostgreSQL error:\n%s", stderr.String())
	}
	for _, f := range []string{report, js} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f), string(b))
	}
}
