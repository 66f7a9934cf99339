package capacity

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/enginetest"
)

// A capacity run shows the rate of the step it is on as its run phase's
// rate (the console's and /status's "configured rate", the summary's
// "rate"), not an empty one; its report writes big rates as people do.
func TestCapacityShowsTheStepsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?capacity=5000&latency=2ms", "SOAKD_SEQ_BATCH_SIZE", "50",
			"SOAKD_SEQ_WORKERS", "8", "SOAKD_CAPACITY_START", "1000", "SOAKD_CAPACITY_HOLD", "5s",
			"SOAKD_CAPACITY_SETTLE", "2s", "SOAKD_CAPACITY_WARMUP", "2s", "SOAKD_CAPACITY_SLO_P99", "50ms"), p)
		h := history.New()
		sum, res, err := Run(context.Background(), cfg, nil, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{h}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		last := strconv.FormatFloat(res.Steps[len(res.Steps)-1].Target, 'f', -1, 64)
		doc := h.Snapshot()
		var rates []string
		for _, ph := range doc.Workloads[0].Phases {
			rates = append(rates, ph.Name+"="+ph.Rate)
		}
		if got := strings.Join(rates, " "); !strings.HasSuffix(got, "run="+last) {
			t.Errorf("phases' rates %q, want the run phase at the last step's %s", got, last)
		}
		if w := sum.Workload("seq", "run"); w == nil || w.Rate != last {
			t.Errorf("summary's run phase rate %+v, want %s", w, last)
		}
		var b strings.Builder
		res.WriteMarkdown(&b)
		md := b.String()
		if !strings.Contains(md, "at most 10,000,000/s") || !strings.Contains(md, "start 1,000/s") || strings.Contains(md, "e+") {
			t.Errorf("report's numbers are not written for people:\n%s", md)
		}
	})
}

// The search's outcome writes rates as the report does: never 1e+07.
func TestCapacityOutcomeWritesRatesForPeople(t *testing.T) {
	cc := config.CapacityConfig{Start: 1000, Max: 1e7}
	if err := cc.Step.UnmarshalText([]byte("x1.5")); err != nil {
		t.Fatal(err)
	}
	_, _, outcome := search(cc, 1e7, func(float64, string) (bool, bool) { return true, true })
	if !strings.Contains(outcome, "(10,000,000/s)") {
		t.Errorf("outcome %q, want the limit written 10,000,000/s", outcome)
	}
}
