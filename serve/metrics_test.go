package serve

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// unreachable is a sink whose target never answers Prepare.
type unreachable struct{ enginetest.FailingSink }

func (unreachable) Prepare(context.Context) error {
	return sinks.NewError(sinks.Connection, true, errors.New("dial postgres://bench:hunter2@db:1/x: connection refused"))
}

// soakd_ready says what /readyz says: 0 for a target that never became
// ready, and no control changes were counted.
func TestReadyMetricWhenTargetNeverReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins(sinks.Entry{Schemes: []string{"down"}, Kinds: []sources.Kind{sources.Series},
			Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) { return unreachable{}, nil }})
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "down://db:1/x", "SOAKD_DURATION", "3s"), p)
		res := runTest(context.Background(), cfg, p, nil)
		want := `
# HELP soakd_ready 1 when the workload's target is prepared and answers its ping (what /readyz says), else 0.
# TYPE soakd_ready gauge
soakd_ready{workload="seq"} 0
# HELP soakd_control_total Changes made through POST /control: a new rate, pause or resume.
# TYPE soakd_control_total counter
soakd_control_total{action="pause",workload="seq"} 0
soakd_control_total{action="rate",workload="seq"} 0
soakd_control_total{action="resume",workload="seq"} 0
`
		if err := testutil.GatherAndCompare(res.reg, strings.NewReader(want), "soakd_ready", "soakd_control_total"); err != nil {
			t.Error(err)
		}
	})
}

// Each change made through /control is counted by action (dashboards
// annotate them), and a ready target shows soakd_ready 1.
func TestControlAndReadyMetrics(t *testing.T) {
	p := enginetest.Plugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "200", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://", "SOAKD_CONTROL_TOKEN", "tok"), p)
	startRun(t, cfg, p, l)
	eventually(t, "running", func() bool { s := status(t, base); return s.State == "running" })
	for _, q := range []string{"rate=300", "rate=400", "action=pause", "action=resume", "rate=bad"} {
		post(t, base+"/control?"+q, "tok")
	}
	_, body := get(t, base+"/metrics")
	for _, want := range []string{
		`soakd_ready{workload="seq"} 1`,
		`soakd_control_total{action="rate",workload="seq"} 2`,
		`soakd_control_total{action="pause",workload="seq"} 1`,
		`soakd_control_total{action="resume",workload="seq"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
