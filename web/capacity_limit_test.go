package web

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/capacity"
)

// A search that soakd's workers limited is not shown as the target's
// knee, and each failing step shows its bottleneck.
func TestCapacityPanelSoakdLimit(t *testing.T) {
	r := &capacity.Result{Found: true, Knee: 40, Outcome: "the knee is between 40/s (passed) and 50/s (failed)",
		LimitedBy: "workers", Advice: "raise SOAKD_KV_WORKERS (now 1)",
		Steps: []capacity.Step{{Index: 1, Target: 50, Reasons: []string{"dropped 5% > 0.1%"}, Bottleneck: "workers"}}}
	p := CapacityPanel(r)
	if strings.Contains(p.Note, "knee 40") || !strings.Contains(p.Note, "no knee of the target") || !strings.Contains(p.Note, "SOAKD_KV_WORKERS") {
		t.Errorf("note %q", p.Note)
	}
	if v := p.Table.Rows[0][len(p.Table.Rows[0])-1]; !strings.Contains(v, "bottleneck: workers") {
		t.Errorf("verdict %q", v)
	}
	r.LimitedBy, r.Advice = "target", ""
	if p := CapacityPanel(r); !strings.HasPrefix(p.Note, "knee 40 units/s") {
		t.Errorf("target-limited note %q", p.Note)
	}
}
