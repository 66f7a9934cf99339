package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/web"
)

func fetch(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestReadOnlyConsole serves the console of a short run without a
// control token: no control form, security headers on every response,
// the assets with their types, the view in both ranges, an extra panel,
// and the history as JSON.
func TestReadOnlyConsole(t *testing.T) {
	p := plugins.All()
	env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://?latency=1ms", "SOAKD_SEQ_RATE": "500",
		"SOAKD_SEQ_BATCH_SIZE": "10", "SOAKD_SEQ_PASSWORD": "pw-s3cret"}
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	hist := history.New()
	panel := web.Panel{ID: "capacity", Title: "Capacity search", Note: "step 3 of 8",
		Table:  &web.Table{Header: []string{"step", "rate", "result"}, Rows: [][]string{{"1", "1000", "passed"}}},
		Charts: []charts.Chart{{ID: "capacity-steps", Title: "steps", Lines: []charts.Line{{Name: "p99", X: []float64{1, 2}, Y: []float64{1, 2}}}}}}
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: "test", Panels: func() []web.Panel { return []web.Panel{panel} }})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan *report.Summary, 1)
	go func() {
		sum, _ := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Version: "test", Observers: []daemon.Observer{hist,
				serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry(), Listener: l, UI: ui})}})
		done <- sum
	}()
	var sum *report.Summary
	defer func() {
		if sum == nil {
			stop()
			<-done
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, body := fetch(t, base+"/console/view"); strings.Contains(body, `data-phase="run"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run phase never showed in the view")
		}
	}

	resp, page := fetch(t, base+"/")
	if resp.StatusCode != 200 || !strings.Contains(page, "Read-only") || strings.Contains(page, `id="control"`) {
		t.Errorf("read-only page: %d, form shown or no note:\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, `id="panel-capacity"`) || !strings.Contains(page, `data-chart="capacity-steps"`) || !strings.Contains(page, "step 3 of 8") {
		t.Error("the extra panel is not shown")
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, " style=") || strings.Contains(page, "<style") {
		t.Error("the page has inline script or style, which its CSP forbids")
	}
	for path, ctype := range map[string]string{"/": "text/html", "/console/view?range=whole": "text/html",
		"/console/app.js": "text/javascript", "/console/app.css": "text/css", "/console/icon.svg": "image/svg+xml", "/console/nope.js": "", "/nope": ""} {
		resp, body := fetch(t, base+path)
		if ctype == "" {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %d, want 404", path, resp.StatusCode)
			}
		} else if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || body == "" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if resp.Header.Get("Content-Security-Policy") != web.SecurityPolicy || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: security headers missing: %v", path, resp.Header)
		}
	}
	if _, body := fetch(t, base+"/console/view?range=whole"); !strings.Contains(body, `data-range="whole"`) {
		t.Error("range=whole not honoured")
	}
	resp, body := fetch(t, base+"/history")
	if resp.StatusCode != 200 || !strings.Contains(body, `"achieved_rate"`) || !strings.Contains(body, `"whole"`) {
		t.Errorf("/history: %d %.200s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/control?rate=10", nil)
	req.Header.Set("Authorization", "Bearer anything")
	cresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cresp.Body.Close()
	if cresp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /control without SOAKD_CONTROL_TOKEN: %d, want 404", cresp.StatusCode)
	}

	stop()
	sum = <-done
	rep, err := web.Report(web.ReportData{Summary: sum, History: hist, Environment: sysinfo.Collect("test"),
		Settings: web.SettingRows(cfg.Settings(), env), Panels: []web.Panel{panel}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rep), "pw-s3cret") {
		t.Error("the report shows a password")
	}
	for _, want := range []string{"SOAKD_SEQ_PASSWORD", "(set)", `id="soakd-summary"`, `data-chart="seq-rate"`, `id="panel-capacity"`} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestSettingRowsRedact(t *testing.T) {
	t.Parallel()
	list := []settings.Setting{
		{Key: "SOAKD_W_TARGET", URL: true}, {Key: "SOAKD_W_TOKEN", Secret: true}, {Key: "SOAKD_W_RATE", Default: "1000"},
	}
	rows := web.SettingRows(list, map[string]string{
		"SOAKD_W_TARGET": "postgres://u:hunter2@db/x?sslpassword=k3y", "SOAKD_W_TOKEN": "t0ken"})
	for _, r := range rows {
		for _, secret := range []string{"hunter2", "k3y", "t0ken"} {
			if strings.Contains(r.Value, secret) {
				t.Errorf("%s shows %q: %s", r.Key, secret, r.Value)
			}
		}
	}
	if rows[1].Value != "(set)" || rows[2].Value != "1000" || rows[2].Set || !rows[0].Set {
		t.Errorf("rows: %+v", rows)
	}
}
