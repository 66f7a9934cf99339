// Package mixin builds soakd's monitoring from Go, in the style of the
// kube-prometheus mixins: the Grafana dashboards (with the Grafana
// Foundation SDK), the Prometheus alert rules, and their Kubernetes forms
// (a ConfigMap for Grafana's dashboard sidecar, a PrometheusRule). Every
// PromQL expression is written once here, as a function of where it runs
// (a dashboard's variables or a rule's fixed window), so the dashboards,
// the rules and the tests that evaluate them on a real Prometheus share it.
//
// The generated files are committed; go generate ./dashboards rewrites
// them and a test fails when they are stale:
//
//	files, err := mixin.Files() // repository path -> content
package mixin
