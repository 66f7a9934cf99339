package dashboards

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
)

type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func load(t *testing.T) map[string]dashboard {
	t.Helper()
	out := map[string]dashboard{}
	files, err := fs.Glob(FS, "*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, f := range files {
		b, _ := FS.ReadFile(f)
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: no uid, title or panels", f)
		}
		out[f] = d
	}
	return out
}

var metricName = regexp.MustCompile(`\b(soakd_[a-z_]+|process_[a-z_]+|go_[a-z_]+)\b`)

// Dashboards may only use metrics soakd exports (the DESIGN.md contract).
func TestDashboardsUseExportedMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	daemon.NewMetrics(reg, "test")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, mf := range mfs {
		known[mf.GetName()] = true
	}
	// Label-vector families only appear once a label set exists.
	for _, n := range []string{"soakd_target_rate", "soakd_rows_total", "soakd_values_total", "soakd_ops_total",
		"soakd_errors_total", "soakd_dropped_total", "soakd_bytes_total", "soakd_response_seconds",
		"soakd_service_seconds", "soakd_schedule_lag_seconds", "soakd_inflight", "soakd_workers"} {
		known[n] = true
	}
	for f, d := range load(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, m := range metricName.FindAllString(tg.Expr, -1) {
					if !known[m] {
						t.Errorf("%s: panel %q uses %s, which soakd does not export", f, p.Title, m)
					}
				}
			}
		}
	}
}

// Every panel query parses and runs on a real Prometheus.
func TestDashboardQueriesRunOnPrometheus(t *testing.T) {
	prom := testserver.Prometheus(t, time.Second, "127.0.0.1:1")
	repl := strings.NewReplacer("$__rate_interval", "1m", "$workload", ".*", "$job", ".*")
	for f, d := range load(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				q := repl.Replace(tg.Expr)
				resp, err := http.Get(prom.URL + "/api/v1/query?query=" + url.QueryEscape(q))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: panel %q: Prometheus rejects %q: %s", f, p.Title, q, resp.Status)
				}
			}
		}
	}
}
