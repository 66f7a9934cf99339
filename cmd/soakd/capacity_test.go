package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
)

// soakd capacity against real servers: the search runs its steps, and the
// report is on stdout and in files: markdown, CSV, JSON, and each chart
// as an SVG that parses and a PNG that decodes.
func TestCapacityAgainstRealServers(t *testing.T) {
	pg := testserver.Postgres(t)
	rd := testserver.Redis(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"redis", map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": rd.URL, "SOAKD_KV_RECORDS": "2000",
			"SOAKD_KV_KEY_PREFIX": "cap:", "SOAKD_KV_WORKERS": "8"}},
		{"postgres", map[string]string{"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": pg.URL,
			"SOAKD_CPU_BATCH_SIZE": "100", "SOAKD_CPU_WORKERS": "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cap")
			env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_CAPACITY_START": "500",
				"SOAKD_CAPACITY_STEP": "x2", "SOAKD_CAPACITY_MAX": "2000", "SOAKD_CAPACITY_WARMUP": "1s",
				"SOAKD_CAPACITY_SETTLE": "1s", "SOAKD_CAPACITY_HOLD": "2s", "SOAKD_CAPACITY_SLO_P99": "2s",
				"SOAKD_CAPACITY_REFINE": "1", "SOAKD_CAPACITY_OUT": out}
			for k, v := range tc.env {
				env[k] = v
			}
			code, stdout, stderr := run(t, env, "capacity")
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "# Capacity of workload") || !strings.Contains(stdout, "**Knee:") {
				t.Errorf("no markdown report on stdout:\n%s", stdout)
			}
			var res daemon.CapacityResult
			b, err := os.ReadFile(out + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			// 500, 1000 and 2000/s: a real server takes these with a 2 s SLO.
			if !res.Found || res.Knee != 2000 || len(res.Steps) != 3 {
				t.Errorf("knee %v found %v after %d steps, want 2000 after 3: %s", res.Knee, res.Found, len(res.Steps), res.Outcome)
			}
			for _, s := range res.Steps {
				if s.Achieved < 0.95*s.Target || s.Response.Count == 0 {
					t.Errorf("step %d: achieved %v of %v, %d latencies", s.Index, s.Achieved, s.Target, s.Response.Count)
				}
			}
			if res.Servers[res.Workload] == "" || res.Environment.Cores == 0 {
				t.Errorf("environment %+v, servers %v", res.Environment, res.Servers)
			}
			f, err := os.Open(out + ".csv")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(rows) != len(res.Steps)+1 {
				t.Errorf("CSV: %d rows (%v), want a header and %d steps", len(rows), err, len(res.Steps))
			}
			if md, err := os.ReadFile(out + ".md"); err != nil || !bytes.Contains(md, []byte("| # | kind |")) {
				t.Errorf("markdown file: %v", err)
			}
			for _, chart := range []string{"rate", "latency"} {
				svg, err := os.ReadFile(out + "-" + chart + ".svg")
				if err != nil {
					t.Fatal(err)
				}
				if err := xml.Unmarshal(svg, new(struct{})); err != nil || !bytes.Contains(svg, []byte("data-points=")) {
					t.Errorf("%s.svg does not parse as an SVG with data: %v", chart, err)
				}
				pf, err := os.Open(out + "-" + chart + ".png")
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(pf)
				pf.Close()
				if err != nil || img.Bounds().Dx() < 100 {
					t.Errorf("%s.png: %v", chart, err)
				}
			}
		})
	}
}

// Bad capacity settings are configuration errors naming their variable.
func TestCapacityBadSettings(t *testing.T) {
	code, _, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CAPACITY_STEP": "fast",
		"SOAKD_CAPACITY_SLO_ERRORS": "200%", "SOAKD_CAPACITY_WORKLOAD": "nope"}, "capacity")
	if code != exitConfig {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"SOAKD_CAPACITY_STEP: ", `"fast": want +N`, "SOAKD_CAPACITY_SLO_ERRORS: ", "SOAKD_CAPACITY_WORKLOAD: \"nope\""} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
