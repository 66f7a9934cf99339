package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/summary"
	"github.com/soakd/soakd/web"
)

// browser is a headless Chromium tab that records every request it makes
// and every error it logs.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	errors   []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := testserver.Chromium(t)
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000)}
	for _, f := range testserver.ChromiumFlags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // start the browser and open the tab
		t.Fatalf("cannot start %s: %v", path, err)
	}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.errors = append(b.errors, "console."+string(e.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		desc := ""
		if ex := e.ExceptionDetails.Exception; ex != nil {
			desc = ex.Description
		}
		b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Text+" "+desc)
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
			b.errors = append(b.errors, fmt.Sprintf("log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

func (b *browser) seen() (requests, errors []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...), append([]string(nil), b.errors...)
}

// eval runs a script expression in the page and decodes its value.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// chartPoints maps each chart on the page (data-chart) to the points its
// lines and point sets draw.
const chartPoints = `Object.fromEntries(Array.from(document.querySelectorAll('svg.chart')).map(s =>
	[s.dataset.chart, Array.from(s.querySelectorAll('[data-points]')).reduce((n, e) => n + Number(e.dataset.points), 0)]))`

// waitCharts polls until every chart has points and want are all there.
func waitCharts(t *testing.T, b *browser, want []string, within time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := eval[map[string]int](t, b, chartPoints)
		missing := []string{}
		for _, id := range want {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		for id, n := range got {
			if n == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("charts without data points after %v: %v (all: %v)", within, missing, got)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func metric(t *testing.T, base, line string) bool {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(body), line)
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

const (
	controlToken = "console-s3cret-token"
	targetToken  = "target-s3cret-token"
)

// TestConsoleAndReportInBrowser runs soakd against a real redis-server
// (a YCSB workload with its load phase) and a modelled series target,
// opens the console in headless Chromium and checks what a person would:
// every chart is drawn with data, numbers advance, the control form
// changes the rate with the right token and is refused with a wrong one,
// no error in the browser's console, no request leaves soakd's address.
// Then it stops the run as SIGTERM does, writes the HTML report and opens
// it offline: every chart drawn, totals equal to the summary JSON's, no
// secret in it.
func TestConsoleAndReportInBrowser(t *testing.T) {
	b := newBrowser(t)
	rds := testserver.Redis(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	env := map[string]string{
		"SOAKD_WORKLOADS": "kv,iot",
		"SOAKD_KV_TARGET": rds.URL, "SOAKD_KV_RATE": "400", "SOAKD_KV_RECORDS": "2000", "SOAKD_KV_WORKLOAD": "a",
		"SOAKD_KV_LOAD_RATE": "4000",
		"SOAKD_IOT_SOURCE":   "devops", "SOAKD_IOT_TARGET": "null://?latency=1ms", "SOAKD_IOT_RATE": "2000",
		"SOAKD_IOT_BATCH_SIZE": "100", "SOAKD_IOT_TOKEN": targetToken,
		"SOAKD_CONTROL_TOKEN": controlToken, "SOAKD_SHUTDOWN_GRACE": "5s",
	}
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	hist := history.New()
	// Only kv's target gives its own figures: kv has a Target chart, iot
	// none.
	hist.WatchTarget(kvTarget{})
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: "test", Control: cfg.EffectiveControlToken() != ""})
	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		sum *report.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Version: "test", Observers: []daemon.Observer{hist,
				serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry(), Listener: l, UI: ui})}})
		done <- result{sum, err}
	}()
	stopped := false
	defer func() {
		if !stopped {
			stop()
			<-done
		}
	}()

	// The page, with every chart drawn with data once both workloads run
	// (the KV workload loads its records first, then reads and updates).
	b.do(t, "open the console", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#view svg.chart")))
	want := []string{"kv-rate", "kv-latency-read", "kv-latency-update", "kv-dispatch", "kv-errors", "kv-concurrency",
		"kv-units", "kv-bytes", "iot-rate", "iot-latency-write", "iot-dispatch", "iot-errors", "iot-concurrency",
		"iot-units", "process-cpu", "process-memory", "kv-target", "kv-target-held"}
	first := waitCharts(t, b, want, 40*time.Second)
	t.Logf("charts and their points: %v", first)
	for _, id := range []string{"iot-target", "iot-target-held"} {
		if _, ok := first[id]; ok {
			t.Errorf("iot's target gives no figures, yet it has a chart %s", id)
		}
	}
	if _, ok := first["iot-bytes"]; ok {
		t.Error("iot writes to null://, which sends nothing, yet has a bytes chart")
	}

	// Values advance as the view refreshes, every 2 s. A refresh is a
	// fetch and a render, which a loaded machine can make last more than
	// the second a fixed wait of 3 s left after the last tick in it: so
	// the test waits for the advance, up to 30 s.
	const acked = `Number(document.querySelector('#wl-iot tr[data-phase="run"] [data-field="acked"]').textContent)`
	a1 := eval[int](t, b, acked)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		a2 := eval[int](t, b, acked)
		second := eval[map[string]int](t, b, chartPoints)
		var stuck []string
		if a2 <= a1 {
			stuck = append(stuck, fmt.Sprintf("iot acknowledged rows did not advance: %d then %d", a1, a2))
		}
		for _, id := range []string{"iot-rate", "kv-rate", "process-cpu"} {
			if second[id] <= first[id] {
				stuck = append(stuck, fmt.Sprintf("chart %s did not gain points: %d then %d", id, first[id], second[id]))
			}
		}
		if len(stuck) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after 30 s: %s", strings.Join(stuck, "; "))
			break
		}
	}

	// A screenshot for people, kept after the test.
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "soakd-console-")
	if err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(dir, "console.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the console: %s", shotPath)
	if out := os.Getenv("SOAKD_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The page never holds the token; it is served with its security
	// headers.
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), controlToken) {
		t.Error("the page contains the control token")
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", resp.Header)
	}

	// The control form: the right token changes the rate.
	control := func(token, rate string) string {
		b.do(t, "fill the control form",
			chromedp.SetValue(chromedp.CSS(`#control select[name="workload"]`), "iot"),
			chromedp.SetValue(chromedp.CSS(`#control input[name="rate"]`), rate),
			chromedp.SetValue(chromedp.CSS(`#control input[name="token"]`), token),
			chromedp.Click(chromedp.CSS(`#control button[value="rate"]`)))
		var res string
		eventually(t, "the control form's answer", 10*time.Second, func() bool {
			res = eval[string](t, b, `document.getElementById('control-result').textContent`)
			return res != "" && res != "sending…"
		})
		return res
	}
	if res := control(controlToken, "3000"); !strings.Contains(res, "rate set") {
		t.Fatalf("right token: %q", res)
	}
	eventually(t, "soakd_target_rate 3000 in /metrics", 10*time.Second, func() bool {
		return metric(t, base, `soakd_target_rate{workload="iot"} 3000`)
	})
	// Pause and resume from the same form.
	b.do(t, "pause", chromedp.Click(chromedp.CSS(`#control button[value="pause"]`)))
	eventually(t, "iot paused (target rate 0)", 10*time.Second, func() bool {
		return metric(t, base, `soakd_target_rate{workload="iot"} 0`)
	})
	b.do(t, "resume", chromedp.Click(chromedp.CSS(`#control button[value="resume"]`)))
	eventually(t, "iot resumed at 3000", 10*time.Second, func() bool {
		return metric(t, base, `soakd_target_rate{workload="iot"} 3000`)
	})
	_, errs := b.seen()
	if len(errs) > 0 {
		t.Errorf("the browser logged errors: %q", errs)
	}

	// A wrong token is refused and the rate stays.
	if res := control("not-the-token", "7000"); !strings.Contains(res, "wrong token") {
		t.Errorf("wrong token: %q", res)
	}
	time.Sleep(time.Second)
	if !metric(t, base, `soakd_target_rate{workload="iot"} 3000`) {
		t.Error("the rate changed with a wrong token")
	}
	// The only error is Chromium's note of the refused request.
	_, errs = b.seen()
	for _, e := range errs {
		if !strings.Contains(e, "401") {
			t.Errorf("the browser logged an error: %s", e)
		}
	}
	reqs, _ := b.seen()
	for _, u := range reqs {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("a request left soakd's address: %s", u)
		}
	}
	t.Logf("%d requests, all to %s", len(reqs), base)

	// Stop as SIGTERM does, then write the summary and the report as
	// soakd run --summary-json --report does.
	stop()
	r := <-done
	stopped = true
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := t.TempDir()
	sumPath, reportPath := filepath.Join(out, "summary.json"), filepath.Join(out, "report.html")
	if err := summary.WriteJSONFile(sumPath, r.sum); err != nil {
		t.Fatal(err)
	}
	if err := web.WriteReport(reportPath, web.ReportData{Summary: r.sum, History: hist, Environment: sysinfo.Collect("test"),
		Settings: web.SettingRows(cfg.Settings(), env), StoppedBy: "stopped by a signal"}); err != nil {
		t.Fatal(err)
	}
	checkReport(t, reportPath, sumPath)
}

// kvTarget stands for a target watch that reads the memory, storage and
// keys of workload kv's target only.
type kvTarget struct{}

func (kvTarget) Memory(w string) (float64, time.Time, bool) {
	return 48 << 20, time.Now(), w == "kv"
}

func (kvTarget) Storage(w string) (float64, time.Time, bool) {
	return 2 << 20, time.Now(), w == "kv"
}

func (kvTarget) Stat(w, name string) (float64, time.Time, bool) {
	return 1001, time.Now(), w == "kv" && name == "keys"
}

// checkReport opens the report in a fresh browser with networking
// disabled and checks its charts and totals against the summary JSON.
func checkReport(t *testing.T, reportPath, sumPath string) {
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{controlToken, targetToken} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the report contains a secret: %s", secret)
		}
	}
	b := newBrowser(t)
	if _, err := chromedp.Call(b.ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + reportPath
	b.do(t, "open the report", chromedp.Navigate(fileURL), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	points := eval[map[string]int](t, b, chartPoints)
	if len(points) < 16 {
		t.Errorf("the report has %d charts: %v", len(points), points)
	}
	for id, n := range points {
		if n == 0 {
			t.Errorf("report chart %s has no data points", id)
		}
	}
	for _, id := range []string{"kv-target", "kv-target-held"} {
		if _, ok := points[id]; !ok {
			t.Errorf("the report has no chart %s for kv, whose target gave its figures", id)
		}
	}
	for _, id := range []string{"iot-target", "iot-target-held"} {
		if _, ok := points[id]; ok {
			t.Errorf("the report has a chart %s for iot, whose target gave none", id)
		}
	}
	var sum report.Summary
	sb, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sb, &sum); err != nil {
		t.Fatal(err)
	}
	rows := eval[[]map[string]string](t, b, `Array.from(document.querySelectorAll('table.summary tbody tr')).map(tr =>
		Object.assign({workload: tr.dataset.workload, phase: tr.dataset.phase},
			Object.fromEntries(Array.from(tr.querySelectorAll('[data-field]')).map(td => [td.dataset.field, td.textContent]))))`)
	if len(rows) != len(sum.Workloads) || len(rows) != 3 {
		t.Fatalf("report has %d summary rows, summary JSON %d (want 3: kv load, kv run, iot run)", len(rows), len(sum.Workloads))
	}
	for i, w := range sum.Workloads {
		row := rows[i]
		want := map[string]string{"workload": w.Name, "phase": w.Phase, "units": fmt.Sprint(w.Units), "values": fmt.Sprint(w.Values),
			"bytes": fmt.Sprint(w.Bytes), "scheduled_units": fmt.Sprint(w.Scheduled), "failed_units": fmt.Sprint(w.Failed),
			"dropped_units": fmt.Sprint(w.Dropped), "in_flight_units": fmt.Sprint(w.InFlight), "units_per_second": fmt.Sprintf("%.2f", w.UnitRate)}
		for k, v := range want {
			if row[k] != v {
				t.Errorf("report %s/%s %s = %q, summary JSON %q", w.Name, w.Phase, k, row[k], v)
			}
		}
		if w.Units == 0 {
			t.Errorf("%s/%s acknowledged nothing", w.Name, w.Phase)
		}
	}
	// Nothing but the file itself was requested, and nothing complained.
	reqs, errs := b.seen()
	for _, u := range reqs {
		if u != fileURL {
			t.Errorf("the report requested %s", u)
		}
	}
	if len(errs) > 0 {
		t.Errorf("the browser logged errors on the report: %q", errs)
	}
	if secret := eval[int](t, b, `document.querySelectorAll('script:not([type="application/json"])').length`); secret != 0 {
		t.Errorf("the report has %d scripts; it must need none", secret)
	}
}
