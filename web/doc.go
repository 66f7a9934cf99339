// Package web is soakd's web console and HTML report.
//
// The console (NewConsole, served at / by package serve through
// serve.Options.UI) shows, per workload and phase, target vs achieved rate,
// response and service latency p50/p99/p99.9, dispatch delay and
// schedule lag, errors by class with failed and dropped work, in-flight
// writes vs workers, rows/values/bytes per second, and soakd's own CPU
// and memory, drawn from a history.History. Everything it needs is embedded
// in the binary (no CDN, no external request: it works air-gapped). The
// charts are SVG rendered in Go by package charts, so the page runs one
// small script (assets/app.js) that fetches the rendered view every 2 s
// and, when SOAKD_CONTROL_TOKEN is set, sends the control form to
// /control with the token the user typed (never embedded in the page).
// Responses carry a Content-Security-Policy without inline script or
// style (SecurityPolicy), nosniff and frame-deny headers.
//
// The report (WriteReport, soakd run --report FILE.html) is the same view
// over the whole run, with the settings (secrets redacted), the
// environment and the summary table, in one file that opens offline and
// runs no script.
//
// Extension point: features that run only sometimes add sections with
// Panel: the capacity search adds its own through ConsoleOptions.Panels
// and ReportData.Panels; read-back verification (VERIFY) shows from the
// history's phase counts (VerifyPanel). The capacity and sweep reports
// draw their figures with package charts.
//
//	hist := history.New()
//	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: v, Control: cfg.EffectiveControlToken() != ""})
//	api := serve.New(serve.Options{Config: cfg, Logger: log, Version: v, Registry: prometheus.NewRegistry(), UI: ui})
//	sum, err := daemon.Run(ctx, cfg, daemon.Deps{..., Observers: []daemon.Observer{hist, api}})
//	err = web.WriteReport("run.html", web.ReportData{Summary: sum, History: hist,
//		Environment: sysinfo.Collect(v), Settings: web.SettingRows(cfg.Settings(), environ)})
package web
