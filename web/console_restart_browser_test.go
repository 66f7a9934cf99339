package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/web"
)

// A console left open while soakd is restarted on the same address shows
// the new run as it is: it kept the old run's control form (its
// workloads, control on when the new run has it off) under the new run's
// view, with nothing to say the run had changed.
func TestConsoleOpenAcrossRestartShowsTheNewRun(t *testing.T) {
	b := newBrowser(t)
	first := web.NewConsole(web.ConsoleOptions{History: history.New(), Version: "first", Control: true})
	second := web.NewConsole(web.ConsoleOptions{History: history.New(), Version: "second"})
	var restarted atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if restarted.Load() {
			second.ServeHTTP(w, r)
			return
		}
		first.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// page reads the page as one value; while the page reloads there is
	// none (version "").
	page := func() (version string, form, readOnly bool) {
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](
			`[document.querySelector('.version')?.textContent ?? '', !!document.getElementById('control'), !!document.querySelector('.readonly')]`))
		if err != nil || len(s) != 3 {
			return "", false, false
		}
		version, _ = s[0].(string)
		form, _ = s[1].(bool)
		readOnly, _ = s[2].(bool)
		return version, form, readOnly
	}
	b.do(t, "open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#control")))
	if v, form, ro := page(); v != "first" || !form || ro {
		t.Fatalf("the first run's page: version %q, control form %v, read-only notice %v", v, form, ro)
	}
	restarted.Store(true)
	var v string
	var form, ro bool
	eventually(t, "the new run's page", 20*time.Second, func() bool {
		v, form, ro = page()
		return v == "second"
	})
	if form || !ro {
		t.Errorf("after the restart: control form %v, read-only notice %v; the new run has control off", form, ro)
	}
}
