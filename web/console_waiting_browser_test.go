package web_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/web"
)

// While a workload waits for a target that is not up, the console's line
// saying so (the target, the failed attempts, the last error) wraps to
// the window: on one line it made a 1,400 px page some 1,700 px wide, the
// error's end out of sight to the right.
func TestConsoleWaitingFitsTheWindow(t *testing.T) {
	b := newBrowser(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	env := map[string]string{
		"SOAKD_WORKLOADS": "kv", "SOAKD_KV_LOAD": "false",
		"SOAKD_KV_TARGET": fmt.Sprintf("redis://127.0.0.1:%d/0?client_name=soakd-staging-cluster-long-running-soak-of-the-session-cache",
			testserver.ClosedPort(t)),
	}
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	hist := history.New()
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: "test"})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{hist,
			serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry(), Listener: l, UI: ui})}})
	}()
	defer func() { stop(); <-done }()

	b.do(t, "open the console at 1,400 px", chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#view")))
	eventually(t, "the console saying what the workload waits for", 30*time.Second, func() bool {
		return eval[bool](t, b, `/attempts failed.*connection refused/.test(document.querySelector('[data-field="waiting"]')?.textContent ?? '')`)
	})
	if o := eval[int](t, b, overflow); o > 0 {
		t.Errorf("at 1,400 px the console is %d px too wide: %q", o,
			eval[string](t, b, `document.querySelector('[data-field="waiting"]').textContent`))
	}
	if right := eval[float64](t, b, `document.querySelector('[data-field="waiting"]').getBoundingClientRect().right`); right > 1400 {
		t.Errorf("the waiting line ends at %.0f px, past the 1,400 px window", right)
	}
}
