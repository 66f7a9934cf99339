package targetwatch

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/soakd/soakd/internal/enginetest"
)

// The summary's "target_figures" field holds what /status shows once the run is
// over, on the workload's last entry only (a KV workload's run phase,
// not its load phase), and in the summary's JSON after the engine's own
// fields; a workload whose watch is off has none. Bugs caught: figures
// read before the watch stopped; the field on every phase's entry; the
// field lost in --summary-json.
func TestSummaryHoldsTheTargetsFigures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{}
		tw, _, _, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "kv,off", "SOAKD_KV_TARGET", "watched://", "SOAKD_KV_WORKLOAD", "a",
			"SOAKD_KV_LOAD", "on", "SOAKD_KV_RECORDS", "1000", "SOAKD_KV_LOAD_RATE", "1000", "SOAKD_KV_RATE", "500",
			"SOAKD_KV_DURATION", "5s", "SOAKD_KV_WATCH_INTERVAL", "1s",
			"SOAKD_OFF_SOURCE", "seq", "SOAKD_OFF_TARGET", "watched://", "SOAKD_OFF_DURATION", "2s", "SOAKD_OFF_WATCH_INTERVAL", "0"), plugins(s))
		loaded, ran, off := sum.Workload("kv", "load"), sum.Workload("kv", "run"), sum.Workload("off", "run")
		if loaded == nil || ran == nil || off == nil {
			t.Fatalf("summary %+v", sum.Workloads)
		}
		if loaded.Extra != nil || off.Extra != nil {
			t.Errorf("extra fields on the load phase (%v) or a workload not watched (%v)", loaded.Extra, off.Extra)
		}
		got, ok := ran.Extra["target_figures"].(Summary)
		if !ok {
			t.Fatalf("run entry's extra fields %v, want a target Summary", ran.Extra)
		}
		st := statusOf(t, tw, "kv")
		if got.Readings < 5 || got.Readings != st.Readings || !reflect.DeepEqual(got.Memory, st.Memory) ||
			!reflect.DeepEqual(got.Storage, st.Storage) || !reflect.DeepEqual(got.StorageTotal, st.StorageTotal) ||
			!reflect.DeepEqual(got.CPU, st.CPU) || got.CPU == nil || got.CPU.Cores == nil ||
			got.StoragePerValue == nil || *got.StoragePerValue != *st.StoragePerValue || got.Counted != "records" ||
			got.Unavailable["wal"] == "" {
			t.Errorf("summary %+v\nwant the figures of /status after the run %+v", got, st)
		}
		if g := got.StorageTotal.GrowthPerHour; g == nil || *g <= 0 {
			t.Errorf("storage total growth %v, want > 0 per hour", g)
		}
		b, err := json.Marshal(ran)
		if err != nil {
			t.Fatal(err)
		}
		i, j := strings.Index(string(b), `"prepared":`), strings.Index(string(b), `,"target_figures":{"interval_seconds":1,`)
		if i < 0 || j < i || !strings.HasSuffix(string(b), "}}") {
			t.Errorf("summary JSON %s: want target after the engine's fields", b)
		}
		var back struct {
			Target Summary `json:"target_figures"`
		}
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Target.Memory, got.Memory) {
			t.Errorf("target read back %+v, %v", back.Target, err)
		}
	})
}
