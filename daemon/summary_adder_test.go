package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/report"
)

// summaryAdder is a recorder that adds a field to the summary, and a
// Finisher, so that the test sees which it is told first.
type summaryAdder struct {
	recorder
	fields map[string]any
}

func (s *summaryAdder) Finished(bool) { s.add("finished") }

func (s *summaryAdder) SummaryField(workload string) (string, any, bool) {
	s.add("summary field %s", workload)
	v, ok := s.fields[workload]
	return "observed", v, ok
}

// A SummaryAdder's field lands once, after the run is over, on its
// workload's entry in the summary, and in its JSON after the engine's own
// fields, which keep their order; a workload it adds nothing to reads as
// it always has.
func TestObserverAddsSummaryField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := daemon.Plugins()
		cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
			"SOAKD_A_RATE", "10", "SOAKD_B_RATE", "10", "SOAKD_A_DURATION", "2s", "SOAKD_B_DURATION", "2s"), p)
		r := &summaryAdder{fields: map[string]any{"a": map[string]int{"step": 3}}}
		sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{r}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.seen(), "finished; summary field a; summary field b"; !bytes.HasSuffix([]byte(got), []byte(want)) {
			t.Errorf("events %q, want them to end with %q", got, want)
		}
		a, b := sum.Workload("a", "run"), sum.Workload("b", "run")
		if a == nil || b == nil || len(a.Extra) != 1 || b.Extra != nil {
			t.Fatalf("summary entries %+v %+v: want a field on a only", a, b)
		}
		type plain report.WorkloadSummary
		for _, tc := range []struct {
			ws   *report.WorkloadSummary
			tail string
		}{{a, `,"observed":{"step":3}}`}, {b, `}`}} {
			got, err := json.Marshal(tc.ws)
			if err != nil {
				t.Fatal(err)
			}
			own, _ := json.Marshal(plain(*tc.ws))
			if want := append(own[:len(own)-1:len(own)-1], tc.tail...); !bytes.Equal(got, want) {
				t.Errorf("%s's JSON:\n%s\nwant\n%s", tc.ws.Name, got, want)
			}
		}
		// A field named as one of the entry's own would give the JSON
		// two values under one name.
		clash := *a
		clash.Extra = map[string]any{"target": "x"}
		if _, err := json.Marshal(clash); err == nil || !strings.Contains(err.Error(), "summary field target") {
			t.Errorf("an extra field named target marshals: %v", err)
		}
	})
}

// /status's workload objects refuse an added field named as one of their
// own, as the summary's entries do, and keep their own fields first.
func TestStatusExtraField(t *testing.T) {
	s := report.StatusWorkload{Name: "w", Target: "redis://x"}
	s.Extra = map[string]any{"target_figures": 1}
	b, err := json.Marshal(s)
	if err != nil || !bytes.HasSuffix(b, []byte(`,"target_figures":1}`)) || !bytes.Contains(b, []byte(`"target":"redis://x"`)) {
		t.Errorf("status JSON %s (%v): want the target URL and the added field last", b, err)
	}
	s.Extra = map[string]any{"target": "x"}
	if _, err := json.Marshal(s); err == nil || !strings.Contains(err.Error(), "status field target") {
		t.Errorf("an added field named target marshals: %v", err)
	}
}
