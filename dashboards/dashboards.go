// Package dashboards holds soakd's Grafana dashboards (JSON models), so
// tests can check them against the metrics soakd exports and deploy
// tooling can embed them. They are generated from Go (package
// dashboards/mixin, with the Grafana Foundation SDK), as are the alert
// rules in deploy/prometheus and their Kubernetes forms; edit the Go and
// run go generate ./dashboards.
//
// soak.json: a soak test at a glance: target vs achieved rate, throughput,
// response and service latency quantiles and heatmaps (native histograms),
// errors by class, drops and schedule lag, concurrency, read-back
// verification (VERIFY) checks and failures by kind, the target's own
// memory, storage, CPU and storage per value, and the soakd
// processes' CPU, memory, GC and goroutines; rate changes made through
// /control are annotated. capacity.json: a ramp or capacity search, the
// achieved rate and the response p99 against the offered rate.
package dashboards

import "embed"

//go:generate go run ./mixin/gen -root ..

// FS holds every dashboard, *.json.
//
//go:embed *.json
var FS embed.FS
