package web_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/web"
)

// The console's status line tells an answer that is an error (soakd's
// own, or a proxy's in front of it) from no answer at all: both read
// "soakd is not answering (stopped?)", which sent a user whose proxy
// answered 502 to look at a soakd that was running.
func TestConsoleStatusSaysWhatFailed(t *testing.T) {
	b := newBrowser(t)
	ui := web.NewConsole(web.ConsoleOptions{History: history.New(), Version: "test"})
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Path == "/console/view" {
			http.Error(w, "upstream soakd timed out", http.StatusBadGateway)
			return
		}
		ui.ServeHTTP(w, r)
	}))
	defer srv.Close()
	status := func() string { return eval[string](t, b, `document.getElementById('conn').textContent`) }
	wait := func(what string, cond func(string) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			s := status()
			if cond(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s, still waiting for %s: the status line says %q", what, s)
			}
		}
	}
	updated := func(s string) bool { return len(s) > len("updated ") && s[:len("updated ")] == "updated " }

	b.do(t, "open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#view")))
	wait("a refresh", updated)
	failing.Store(true)
	const proxyErr = "the view could not be refreshed: HTTP 502: upstream soakd timed out"
	wait("the proxy's answer", func(s string) bool { return s == proxyErr })
	failing.Store(false)
	wait("a refresh after the error", updated)
	srv.CloseClientConnections()
	srv.Listener.Close()
	wait("no answer", func(s string) bool { return s == "soakd is not answering (stopped?)" })
}
