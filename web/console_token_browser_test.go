package web_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/web"
)

// The console's control form sends the token as curl does, its UTF-8
// bytes, with the white space around it dropped as soakd drops it from
// SOAKD_CONTROL_TOKEN: a token with ö was refused as wrong (the browser
// sent it in Latin-1), one with € said "soakd is not answering" (the
// browser sent nothing), and one pasted with a space before it was
// refused as wrong.
func TestConsoleControlTokenAsTyped(t *testing.T) {
	const token = "pässwörd-€-s3cret"
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://",
		"SOAKD_CONTROL_TOKEN", token), enginetest.Plugins())
	ui := web.NewConsole(web.ConsoleOptions{History: history.New(), Version: "test", Control: true})
	srv := httptest.NewServer(serve.New(serve.Options{Config: cfg, UI: ui}).Handler())
	defer srv.Close()

	b := newBrowser(t)
	b.do(t, "open the console", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#control")))
	send := func(typed string) string {
		t.Helper()
		if eval[bool](t, b, `(document.getElementById('control-result').textContent = '', true)`) != true {
			t.Fatal("cannot clear the form's answer")
		}
		b.do(t, "fill the control form",
			chromedp.SetValue(chromedp.CSS(`#control input[name="rate"]`), "500"),
			chromedp.SetValue(chromedp.CSS(`#control input[name="token"]`), typed),
			chromedp.Click(chromedp.CSS(`#control button[value="rate"]`)))
		var res string
		eventually(t, "the control form's answer", 10*time.Second, func() bool {
			res = eval[string](t, b, `document.getElementById('control-result').textContent`)
			return res != "" && res != "sending…"
		})
		return res
	}
	for _, typed := range []string{token, " " + token + " "} {
		if res := send(typed); !strings.HasPrefix(res, "rate set") {
			t.Errorf("the right token typed as %q: the form says %q", typed, res)
		}
	}
	if res := send("pässwörd-€-s3creT"); !strings.Contains(res, "wrong token") {
		t.Errorf("a wrong token: the form says %q", res)
	}
}
