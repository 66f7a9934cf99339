package web_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/web"
)

// shoot saves a screenshot of the page for people to look at (kept after
// the test, its path logged; SOAKD_SHOTS names a directory to copy to).
func shoot(t *testing.T, b *browser, name string) {
	t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("SOAKD_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// overflow is the page's horizontal overflow: how much wider the
// document is than the window (0 when it reflows to fit).
const overflow = `document.documentElement.scrollWidth - window.innerWidth`

// TestLayoutInBrowser opens the console of a run with a series and a
// query workload in Chromium: at 420 px wide the page reflows (no
// horizontal scrolling), the query workload's charts count queries/s,
// not rows/s; then the HTML report of the run, whose summary table fits
// a 1,400 px window though a target URL is long.
func TestLayoutInBrowser(t *testing.T) {
	b := newBrowser(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	env := map[string]string{
		"SOAKD_WORKLOADS":  "iot,q",
		"SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_RATE": "2000", "SOAKD_IOT_BATCH_SIZE": "20",
		"SOAKD_IOT_TARGET": "null://a-long-host-name-of-the-staging-database-cluster.example.internal:5432/a_long_database_name?latency=1ms..2ms&capacity=1000000",
		"SOAKD_Q_SOURCE":   "devops-queries", "SOAKD_Q_RATE": "50",
		"SOAKD_SHUTDOWN_GRACE": "5s",
	}
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	hist := history.New()
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: "test"})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan *report.Summary, 1)
	go func() {
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
			Version: "test", Observers: []daemon.Observer{hist,
				serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry(), Listener: l, UI: ui})}})
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	stopped := false
	defer func() {
		if !stopped {
			stop()
			<-done
		}
	}()

	b.do(t, "open the console", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#view svg.chart")))
	waitCharts(t, b, []string{"iot-rate", "q-rate", "q-units"}, 40*time.Second)

	// The query workload's charts say queries/s on their axes, never rows/s.
	labels := eval[map[string]string](t, b, `Object.fromEntries(Array.from(document.querySelectorAll('#wl-q svg.chart')).map(s =>
		[s.dataset.chart, Array.from(s.querySelectorAll('text.axis-label, text.title')).map(e => e.textContent).join(' | ')]))`)
	for _, id := range []string{"q-rate", "q-units"} {
		if !strings.Contains(labels[id], "queries/s") {
			t.Errorf("chart %s says %q, want queries/s", id, labels[id])
		}
	}
	for id, text := range labels {
		if strings.Contains(text, "rows") {
			t.Errorf("query chart %s says rows: %q", id, text)
		}
	}

	// 420 px wide: the page reflows, nothing scrolls sideways.
	b.do(t, "narrow the window", chromedp.EmulateViewport(420, 900))
	time.Sleep(2500 * time.Millisecond) // one refresh of the view at this width
	if o := eval[int](t, b, overflow); o > 0 {
		wide := eval[[]string](t, b, `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))`)
		t.Errorf("at 420 px the console is %d px too wide; too wide: %q", o, wide)
	}
	if w := eval[float64](t, b, `document.querySelector('svg.chart').getBoundingClientRect().width`); w > 420 {
		t.Errorf("a chart is %.0f px wide in a 420 px window", w)
	}
	shoot(t, b, "console-420.png")

	stop()
	sum := <-done
	stopped = true
	reportPath := filepath.Join(t.TempDir(), "report.html")
	if err := web.WriteReport(reportPath, web.ReportData{Summary: sum, History: hist, Environment: sysinfo.Collect("test"),
		Settings: web.SettingRows(cfg.Settings(), env), StoppedBy: "stopped by a signal"}); err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the report at 1,400 px", chromedp.EmulateViewport(1400, 1000), chromedp.Navigate("file://"+reportPath),
		chromedp.WaitVisible(chromedp.CSS("table.summary")))
	if w := eval[float64](t, b, `document.querySelector('table.summary').getBoundingClientRect().width`); w > 1400 {
		t.Errorf("the report's summary table is %.0f px wide, more than the 1,400 px window", w)
	}
	if text := eval[string](t, b, `Array.from(document.querySelectorAll('svg.chart[data-chart="q-units"] text.axis-label')).map(e => e.textContent).join(' ')`); !strings.Contains(text, "queries/s") {
		t.Errorf("the report's query chart axis says %q, want queries/s", text)
	}
	shoot(t, b, "report-1400.png")
}

// TestChartLabelsDoNotOverlapInBrowser draws capacity charts where the
// labels crowd (the knee at the right edge, the SLO at the top of the
// latency range, next to the x-axis title) in Chromium and checks, with
// the browser's own text metrics, that no two labels, legend entries or
// titles intersect.
func TestChartLabelsDoNotOverlapInBrowser(t *testing.T) {
	b := newBrowser(t)
	var html strings.Builder
	html.WriteString("<!doctype html><html><body>")
	for _, slo := range []time.Duration{80 * time.Millisecond, 200 * time.Millisecond, 2 * time.Millisecond} {
		res := &capacity.Result{Workload: "iot", Found: true, Knee: 9_500_000}
		res.Settings.SLOP99 = slo
		for i, r := range []float64{1e6, 2e6, 4e6, 8e6, 9.5e6, 1e7} {
			res.Steps = append(res.Steps, capacity.Step{Index: i + 1, Target: r, Achieved: min(r, 9.6e6), Pass: r <= 9.5e6,
				Response: report.Quantiles{P50: 0.001 * float64(i+1), P99: 0.02 * float64(i+1)}})
		}
		for _, c := range web.CapacityCharts(res) {
			html.Write(c.SVG())
		}
	}
	html.WriteString("</body></html>")
	path := filepath.Join(t.TempDir(), "charts.html")
	if err := os.WriteFile(path, []byte(html.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(t, "open the charts", chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS("svg")))
	overlaps := eval[[]string](t, b, `(() => {
		const out = [];
		document.querySelectorAll('svg').forEach((svg, n) => {
			const texts = Array.from(svg.querySelectorAll('text.mark-label, text.axis-label, text.title, .legend text'));
			const boxes = texts.map(e => e.getBBox());
			for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
				const a = boxes[i], b = boxes[j];
				if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height)
					out.push('chart ' + n + ' (' + svg.dataset.chart + '): "' + texts[i].textContent + '" and "' + texts[j].textContent + '"');
			}
		});
		return out;
	})()`)
	for _, o := range overlaps {
		t.Errorf("labels overlap: %s", o)
	}
	if n := eval[int](t, b, `document.querySelectorAll('text.mark-label').length`); n != 9 {
		t.Errorf("%d mark labels, want 9 (a knee on both charts and an SLO, three times)", n)
	}
	if text := eval[string](t, b, `document.querySelector('text.mark-label').textContent`); text != "knee 9,500,000/s" {
		t.Errorf("knee label %q, want knee 9,500,000/s", text)
	}
	shoot(t, b, "capacity-labels.png")
}
