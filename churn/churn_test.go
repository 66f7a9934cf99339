package churn_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/churn"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sources"
)

// /status and the summary carry what CHURN did for the workload that
// churns, and nothing for the one that does not: devops, 10 devices for
// an hour at 10 s, 10% replaced every 10 minutes, makes 5 replacements
// (the last reading, at 59:50, is 5 intervals in), so 15 devices and
// 150 series (10 fields each).
func TestStatusAndSummary(t *testing.T) {
	p := enginetest.Plugins()
	common := func(w string) []string {
		return []string{"SOAKD_" + w + "_SOURCE", "devops", "SOAKD_" + w + "_SCALE", "10", "SOAKD_" + w + "_START", "2026-01-01T00:00:00Z",
			"SOAKD_" + w + "_END", "+1h", "SOAKD_" + w + "_RATE", "max"}
	}
	kv := append([]string{"SOAKD_WORKLOADS", "c,p", "SOAKD_C_CHURN", "10%/10m"}, common("C")...)
	kv = append(kv, common("P")...)
	cfg := enginetest.Load(t, enginetest.Env(kv...), p)
	api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: prometheus.NewRegistry()})
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
		Observers: []daemon.Observer{churn.New(), api}})
	if err != nil {
		t.Fatal(err)
	}
	want := sources.ChurnFigures{Setting: "10%/10m0s", Devices: 10, Replaced: 5, DevicesCreated: 15, SeriesCreated: 150, TableSeries: 15}

	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
	var st struct {
		Workloads []map[string]json.RawMessage `json:"workloads"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || len(st.Workloads) != 2 {
		t.Fatalf("/status: %v\n%s", err, rec.Body.String())
	}
	for _, w := range st.Workloads {
		var name string
		_ = json.Unmarshal(w["name"], &name)
		raw, has := w[churn.Field]
		switch name {
		case "c":
			var got sources.ChurnFigures
			if err := json.Unmarshal(raw, &got); !has || err != nil || got != want {
				t.Errorf("/status of c: churn %s (%v), want %+v", raw, err, want)
			}
		case "p":
			if has {
				t.Errorf("/status of p, which does not churn: churn %s", raw)
			}
		default:
			t.Errorf("/status: workload %q", name)
		}
	}

	for _, w := range sum.Workloads {
		got, has := w.Extra[churn.Field]
		if (w.Name == "c") != has || (has && got != want) {
			t.Errorf("summary of %s: churn %+v (%v), want it only for c, %+v", w.Name, got, has, want)
		}
	}
}
