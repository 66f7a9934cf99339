// Package dashboards holds soakd's Grafana dashboards (JSON models), so
// tests can check them against the metrics soakd exports and deploy
// tooling can embed them.
//
// soak.json: target vs achieved rate, response and service latency (native
// histograms), errors by class, drops and schedule lag, concurrency,
// throughput and the soakd processes' memory and CPU, per workload.
package dashboards

import "embed"

// FS holds every dashboard, *.json.
//
//go:embed *.json
var FS embed.FS
