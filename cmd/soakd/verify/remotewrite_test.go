package verify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
)

// trucksInto is a run of the trucks' two tables (late readings, nulls,
// offline devices backfilling) into target.
func trucksInto(target, verify string) map[string]string {
	return map[string]string{
		"SOAKD_WORKLOADS": "trucks", "SOAKD_TRUCKS_SOURCE": "iot", "SOAKD_TRUCKS_TARGET": target,
		"SOAKD_TRUCKS_SCALE": "6", "SOAKD_TRUCKS_START": "2026-01-01T00:00:00Z", "SOAKD_TRUCKS_END": "+1h",
		"SOAKD_TRUCKS_OFFLINE": "0.2:2m", "SOAKD_TRUCKS_RATE": "max", "SOAKD_TRUCKS_WORKERS": "2",
		"SOAKD_TRUCKS_BATCH_SIZE": "100", "SOAKD_TRUCKS_VERIFY": verify,
	}
}

// Prometheus 2.42 (with an out-of-order window for the late readings and
// backfills) read back with PromQL: VERIFY during the run and soakd
// verify after it find every acknowledged row, with its values.
func TestPrometheusRemoteWrite(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, time.Hour)
	sum, path := soakRun(t, trucksInto("prom+http://"+srv.Addr+"/api/v1/write?label=run:verify", "0.2"), nil)
	checkContinuous(t, phase(t, sum, "trucks", "run"))
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 4320, stored: 4320}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
}

// Prometheus v3 written with Remote-Write 2.0 (protocol=2.0: a fall back
// to 1.0 would be an error) and read back with PromQL: VERIFY during the
// run and soakd verify after it find every acknowledged row, with its
// values.
func TestPrometheus3RemoteWrite2(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, time.Hour, testserver.PrometheusV3())
	sum, path := soakRun(t, trucksInto("prom+http://"+srv.Addr+"/api/v1/write?protocol=2.0&label=run:verify2", "0.2"), nil)
	checkContinuous(t, phase(t, sum, "trucks", "run"))
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 4320, stored: 4320}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
}

// VictoriaMetrics read back with PromQL after the run; the series of a
// truck's diagnostics deleted by hand are lost: its 360 rows, an hour of
// one every 10 s.
func TestVictoriaMetricsRemoteWrite(t *testing.T) {
	srv := testserver.VictoriaMetrics(t)
	_, path := soakRun(t, trucksInto("prom+http://"+srv.Addr+"/api/v1/write", "0"), nil)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	// No flush here: verify has VictoriaMetrics flush its newest rows
	// (Settle), which it otherwise makes searchable seconds later.
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 4320, stored: 4320}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
	resp, err := hc.PostForm(srv.URL+"/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {`{__name__=~"diagnostics_.*",name="truck_4"}`}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete_series: %s", resp.Status)
	}
	code, out, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 4320, stored: 3960, lost: 360}); code != 1 || got != want {
		t.Fatalf("after deleting a truck's diagnostics: exit %d, %+v, want %+v", code, got, want)
	}
	hasLine(t, out, "lost: diagnostics truck_4 2026-01-01T00:00:00Z .. 2026-01-01T00:59:50Z (360 rows)")
}

// promSamples is the number of samples of metric Prometheus at base
// holds, or -1 when it does not answer.
func promSamples(base, metric string) int64 {
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := hc.PostForm(base+"/api/v1/query", url.Values{"query": {"sum(count_over_time(" + metric + "[1000d]))"}})
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	if len(out.Data.Result) == 0 {
		return 0
	}
	n, _ := strconv.ParseFloat(fmt.Sprint(out.Data.Result[0].Value[1]), 64)
	return int64(n)
}

// Prometheus killed with SIGKILL mid-run and started again on its data:
// every acknowledged row is there (its WAL has each acknowledged write
// handed to the kernel before it answers), the batches that failed are
// in doubt, never lost.
func TestPrometheusKilled(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, time.Hour)
	target := "prom+http://" + srv.Addr + "/api/v1/write"
	env := map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": target,
		"SOAKD_CPU_SCALE": "20", "SOAKD_CPU_START": "2026-01-01T00:00:00Z",
		// DURATION only bounds a run the test fails to stop.
		"SOAKD_CPU_RATE": "3000", "SOAKD_CPU_DURATION": "2m", "SOAKD_CPU_WORKERS": "4", "SOAKD_CPU_BATCH_SIZE": "50",
		"SOAKD_CPU_TIMEOUT": "2s", "SOAKD_CPU_MAX_LAG": "30s", "SOAKD_CPU_VERIFY": "0.05",
	}
	waitSamples := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); promSamples(srv.URL, "cpu_usage_user") < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus holds %d samples of cpu_usage_user, waiting for %d", promSamples(srv.URL, "cpu_usage_user"), n)
			}
		}
	}
	sum, path := soakRunStop(t, env, func(stop func()) {
		waitSamples(1000)
		time.Sleep(500 * time.Millisecond)
		srv.Kill()
		time.Sleep(time.Second)
		srv.Resume(t)
		waitSamples(promSamples(srv.URL, "cpu_usage_user") + 1000)
		stop()
	})
	run := phase(t, sum, "cpu", "run")
	t.Logf("run: acknowledged %d, failed %d, errors %v; verify checked %d skipped %d", run.Units, run.Failed, run.Errors,
		run.Verify.Checked, run.Verify.Skipped)
	if run.Failed == 0 {
		t.Fatal("no write failed: the server was not down during the run")
	}
	code, _, rep := soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": target}, "--summary-json", path)
	w := only(t, rep)
	if code != 0 || w.Lost != 0 || w.Mismatched != 0 || w.Duplicated != 0 {
		t.Fatalf("after the crash: exit %d, %+v: want every acknowledged row stored once", code, countsOf(w))
	}
	if w.Acknowledged != run.Units || w.Stored != run.Units {
		t.Errorf("acknowledged %d, stored %d; the run acknowledged %d", w.Acknowledged, w.Stored, run.Units)
	}
}
