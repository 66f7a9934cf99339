package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/testserver"
)

type emptySummary struct {
	Workloads []struct {
		Phase     string           `json:"phase"`
		Scheduled int64            `json:"scheduled_units"`
		Units     int64            `json:"units"`
		Failed    int64            `json:"failed_units"`
		Dropped   int64            `json:"dropped_units"`
		InFlight  int64            `json:"in_flight_units"`
		Errors    map[string]int64 `json:"errors"`
		Failure   *struct {
			Reason string `json:"reason"`
		} `json:"failure"`
	} `json:"workloads"`
}

func runKVReads(t *testing.T, srv *testserver.Server) (int, string, emptySummary) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "sum.json")
	code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_KV_TARGET": srv.URL,
		"SOAKD_KV_RECORDS": "200", "SOAKD_KV_WORKLOAD": "read=0.9,update=0.1", "SOAKD_KV_RATE": "400", "SOAKD_KV_WORKERS": "2",
		"SOAKD_KV_PIPELINE": "4", "SOAKD_KV_DURATION": "2s", "SOAKD_KV_KEY_PREFIX": "e:", "SOAKD_KV_THRESHOLDS": "errors<0.1%"},
		"--summary-json", js)
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("exit %d, no summary: %v\n%s\n%s", code, err, out, errs)
	}
	var s emptySummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return code, out, s
}

// A Redis that refuses every write (maxmemory 1, noeviction) rejects the
// load, so every read of the run finds nothing: those reads failed (class
// empty), the errors threshold counts them, the phase whose every write
// failed fails the run, and "errors: none" is printed nowhere.
func TestRedisRefusingWritesFailsReads(t *testing.T) {
	srv := testserver.Redis(t, "--maxmemory", "1", "--maxmemory-policy", "noeviction")
	code, out, s := runKVReads(t, srv)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if strings.Contains(out, "errors: none") || !strings.Contains(out, "✗ errors<0.1%") {
		t.Errorf("summary:\n%s", out)
	}
	var failure string
	for _, w := range s.Workloads {
		if w.Scheduled != w.Units+w.Failed+w.Dropped+w.InFlight {
			t.Errorf("%s phase: scheduled %d != acked %d + failed %d + dropped %d + in flight %d",
				w.Phase, w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
		}
		if w.Failure != nil {
			failure = w.Failure.Reason
		}
		if w.Phase == "run" && (w.Errors["empty"] == 0 || w.Errors["rejected"] == 0 || w.Units != 0) {
			t.Errorf("run phase: %d acknowledged, errors %v; want reads failed as empty, updates rejected", w.Units, w.Errors)
		}
	}
	if failure == "" {
		t.Errorf("no failure in the summary:\n%s", out)
	}
}

// Against a Redis that keeps what it is sent, the same run's reads all
// find their records: no empty failures, the threshold passes, exit 0.
func TestRedisReadsHitNoEmpty(t *testing.T) {
	srv := testserver.Redis(t)
	code, out, s := runKVReads(t, srv)
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	for _, w := range s.Workloads {
		if w.Errors["empty"] != 0 || w.Failure != nil {
			t.Errorf("%s phase: errors %v, failure %v", w.Phase, w.Errors, w.Failure)
		}
	}
	if !strings.Contains(out, "✓ errors<0.1%") {
		t.Errorf("summary:\n%s", out)
	}
}

// Reads that find their records do not hide a run whose every write is
// refused: a Redis loaded first, then set to refuse writes (maxmemory 1,
// noeviction), answers the reads and rejects every update; the run phase
// fails the run with that reason.
func TestRedisEveryUpdateRefusedFails(t *testing.T) {
	srv := testserver.Redis(t)
	env := map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_KV_TARGET": srv.URL,
		"SOAKD_KV_RECORDS": "200", "SOAKD_KV_WORKLOAD": "load", "SOAKD_KV_RATE": "max", "SOAKD_KV_KEY_PREFIX": "u:"}
	if code, out, errs := run(t, env); code != cli.ExitOK {
		t.Fatalf("load: exit %d\n%s\n%s", code, out, errs)
	}
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	if err := c.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "sum.json")
	env["SOAKD_KV_WORKLOAD"], env["SOAKD_KV_RATE"], env["SOAKD_KV_DURATION"] = "read=0.5,update=0.5", "200", "2s"
	code, out, errs := run(t, env, "--summary-json", js)
	if code != cli.ExitFailed || !strings.Contains(out, "FAILED: every write of the run phase failed") {
		t.Fatalf("exit %d, want 1 with the run phase's writes failed\n%s\n%s", code, out, errs)
	}
	var s emptySummary
	b, err := os.ReadFile(js)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Workloads {
		if w.Phase == "run" && (w.Units == 0 || w.Errors["empty"] != 0 || w.Errors["rejected"] == 0) {
			t.Errorf("run phase: %d acknowledged, errors %v; want reads answered, updates rejected", w.Units, w.Errors)
		}
	}
}
