package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A churned run's summary says what CHURN did: the hosts replaced over
// the data set, worked out here from the settings (8 hosts, 2h at 10s,
// 25% every 30m: after 3 whole intervals floor(3 × 8 × 0.25) = 6
// replaced), and the devices and series (10 fields a host) created.
func TestChurnInSummary(t *testing.T) {
	js := filepath.Join(t.TempDir(), "sum.json")
	env := map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": "null://",
		"SOAKD_CPU_SCALE": "8", "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+2h",
		"SOAKD_CPU_CHURN": "25%/30m", "SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "3",
	}
	code, out, errs := run(t, env, "--summary-json", js)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	const line = "churn (25%/30m0s): 8 devices at a time, 6 replaced: 14 devices and 140 series (device × field) created"
	if !strings.Contains(out+errs, line) {
		t.Errorf("the summary lacks %q:\n%s%s", line, out, errs)
	}
	type entry struct {
		Phase string         `json:"phase"`
		Churn map[string]any `json:"churn"`
	}
	sum := readJSON[struct {
		Workloads []entry `json:"workloads"`
	}](t, js)
	var got map[string]any
	for _, w := range sum.Workloads {
		if w.Churn != nil {
			got = w.Churn
		}
	}
	want := map[string]any{"setting": "25%/30m0s", "devices": 8.0, "replaced": 6.0, "devices_created": 14.0,
		"series_created": 140.0, "table_series_created": 14.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("summary churn.%s = %v, want %v (%v)", k, got[k], v, got)
		}
	}
	// Without CHURN there is no churn field, nor line.
	delete(env, "SOAKD_CPU_CHURN")
	code, out, errs = run(t, env, "--summary-json", js)
	if code != 0 || strings.Contains(out+errs, "churn") {
		t.Errorf("without CHURN: exit %d, output mentions churn:\n%s%s", code, out, errs)
	}
}

func TestChurnBadSettingExits2(t *testing.T) {
	for _, v := range []string{"10%", "150%/10m", "10%/1s"} {
		code, _, errs := run(t, map[string]string{
			"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": "null://", "SOAKD_CPU_CHURN": v,
		})
		if code != 2 || !strings.Contains(errs, "SOAKD_CPU_CHURN") {
			t.Errorf("CHURN=%s: exit %d, want 2 naming SOAKD_CPU_CHURN:\n%s", v, code, errs)
		}
	}
}
