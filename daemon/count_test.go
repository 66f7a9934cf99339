package daemon

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/config"
)

// Counts in settings take the same grammar, and a count too large for
// the data set reaches the check that says so instead of failing on its
// syntax.
func TestCountSettings(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg, err := config.Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_SOURCE": "seq", "SOAKD_SEQ_WORKERS": "1e1",
		"SOAKD_SEQ_BATCH_SIZE": "2_000", "SOAKD_SEQ_RETRIES": "0.003k"}, p.Sources)
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Workload[0]; w.Workers != 10 || w.BatchSize != 2000 || w.Retries != 3 {
		t.Errorf("WORKERS=1e1 BATCH_SIZE=2_000 RETRIES=0.003k read as %d %d %d", w.Workers, w.BatchSize, w.Retries)
	}
	_, err = config.Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_WORKERS": "1.5"}, p.Sources)
	if err == nil || !strings.Contains(err.Error(), `SOAKD_SEQ_WORKERS: "1.5" is not a whole number`) {
		t.Errorf("WORKERS=1.5: %v", err)
	}
}
