package verify

import (
	"net/http"
	"net/url"
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

// VictoriaMetrics read back with PromQL after the run; the series of a
// truck's diagnostics deleted by hand are lost: its 360 rows, an hour of
// one every 10 s.
func TestVictoriaMetricsRemoteWrite(t *testing.T) {
	srv := testserver.VictoriaMetrics(t)
	_, path := soakRun(t, trucksInto("prom+http://"+srv.Addr+"/api/v1/write", "0"), nil)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	get := func(u string) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("GET %s: %s", u, resp.Status)
		}
	}
	get(srv.URL + "/internal/force_flush")
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
