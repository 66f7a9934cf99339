package dashboards

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/internal/testserver"
)

// sample is one series of an instant query's result.
type sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []any             `json:"value"`
	Histogram []any             `json:"histogram"`
}

func (s sample) float() float64 {
	if len(s.Value) != 2 {
		return 0
	}
	v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	return v
}

func instantQuery(t *testing.T, promURL, q string) ([]sample, error) {
	t.Helper()
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s", r.Error)
	}
	return r.Data.Result, nil
}

// mustFill are the panels a failing workload must fill with a non-zero
// value: errors and drops.
var mustFill = map[string]bool{
	"Error ratio": true, "Dropped in range": true, "Errors by class": true,
	"Dropped work and schedule lag": true, "Error ratio and drops": true,
}

// firing are the alerts whose expression must select the failing
// workload (and not the healthy control, kv), however long their for
// clause is.
var firing = map[string]bool{"SoakdErrorRatioHigh": true, "SoakdDroppingWork": true, "SoakdResponseP99AboveSLO": true}

// A real Prometheus scrapes a real soakd run with five workloads: device
// rows into PostgreSQL, the same source's samples into a second
// Prometheus and into VictoriaMetrics (whose count of the samples it
// discards the Target row shows) by remote write, YCSB operations on
// Redis, and a target that fails a tenth of its writes and is too slow
// for its rate (so latency grows and work is dropped). Every panel, annotation and variable query
// of every dashboard then gives a non-empty result through Prometheus'
// HTTP API; every panel that shows the PostgreSQL workload shows the
// remote-write one too (a panel whose figures the remote-write sink does
// not export would be empty for it); the error and drop panels show the
// failing workload; the alert expressions pick it out, and not the
// healthy Redis workload.
func TestPanelsOnRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("real Prometheus, PostgreSQL and Redis, ~30 s")
	}
	pg := testserver.Postgres(t)
	rd := testserver.Redis(t)
	rw := testserver.PrometheusReceiver(t, 0)
	vm := testserver.VictoriaMetrics(t, "-inmemoryDataFlushInterval=1s")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	prom := testserver.Prometheus(t, time.Second, l.Addr().String())
	env := map[string]string{
		"SOAKD_WORKLOADS": "iot,rw,vm,kv,bad", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_LOG_LEVEL": "error",
		"SOAKD_CONTROL_TOKEN": "tok",
		// The healthy workloads ask little of a shared 2-core machine and
		// wait long before dropping, so that a neighbour's load does not
		// make them look like the failing one to the alerts.
		"SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_TARGET": pg.URL, "SOAKD_IOT_RATE": "500",
		"SOAKD_IOT_BATCH_SIZE": "50", "SOAKD_IOT_WORKERS": "2", "SOAKD_IOT_VERIFY": "0.05",
		"SOAKD_IOT_MAX_LAG": "10s", "SOAKD_KV_MAX_LAG": "10s",
		"SOAKD_RW_SOURCE": "devops", "SOAKD_RW_TARGET": "prom+" + rw.URL + "/api/v1/write", "SOAKD_RW_RATE": "500",
		"SOAKD_RW_BATCH_SIZE": "50", "SOAKD_RW_WORKERS": "2", "SOAKD_RW_VERIFY": "0.05", "SOAKD_RW_MAX_LAG": "10s",
		"SOAKD_VM_SOURCE": "devops", "SOAKD_VM_TARGET": "prom+" + vm.URL + "/api/v1/write", "SOAKD_VM_RATE": "200",
		"SOAKD_VM_BATCH_SIZE": "50", "SOAKD_VM_WORKERS": "1", "SOAKD_VM_MAX_LAG": "10s", "SOAKD_VM_WATCH_INTERVAL": "1s",
		"SOAKD_KV_TARGET": rd.URL, "SOAKD_KV_RATE": "1000", "SOAKD_KV_RECORDS": "1000", "SOAKD_KV_LOAD_RATE": "max",
		"SOAKD_KV_WORKERS": "2",
		// The targets' own figures every second, so that the Target row's
		// rates have readings to go on: PostgreSQL's storage and storage
		// per value, Redis's memory and CPU time.
		"SOAKD_IOT_WATCH_INTERVAL": "1s", "SOAKD_RW_WATCH_INTERVAL": "1s", "SOAKD_KV_WATCH_INTERVAL": "1s",
		// Half the capacity it is asked for, and a tenth of the writes fail.
		"SOAKD_BAD_SOURCE": "seq", "SOAKD_BAD_RATE": "1000", "SOAKD_BAD_BATCH_SIZE": "10", "SOAKD_BAD_WORKERS": "2",
		"SOAKD_BAD_TARGET":  "null://?latency=1ms&capacity=500&fail=0.1&fail_class=server",
		"SOAKD_BAD_MAX_LAG": "2s", "SOAKD_BAD_RETRIES": "0",
		// soakd capacity searches bad: its first step (at twice what the
		// target handles) outlasts the test, so the search panels have a
		// step and a knee (0: none yet) to show.
		"SOAKD_CAPACITY_WORKLOAD": "bad", "SOAKD_CAPACITY_START": "1000", "SOAKD_CAPACITY_WARMUP": "0s",
		"SOAKD_CAPACITY_SETTLE": "0s", "SOAKD_CAPACITY_HOLD": "10m",
	}
	stop := runSoakd(t, env, prometheus.NewRegistry(), l)
	defer stop()

	// Enough scrapes for every rate window, then a rate change through
	// /control for the annotation, on both device workloads.
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := instantQuery(t, prom.URL, `count_over_time(soakd_ready{workload="kv"}[1m]) >= 12 and soakd_ready == 1`)
		if err == nil && len(r) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("soakd not scraped ready for 12 s within 60 s: %v %v", r, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, w := range []string{"iot", "rw"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/control?workload="+w+"&rate=600", nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/control %s: %v %v", w, resp, err)
		}
		resp.Body.Close()
	}
	time.Sleep(3 * time.Second)

	vars := grafanaVars("10s")
	for _, q := range allPromQL(t) {
		expr := vars.Replace(q.expr)
		res, err := instantQuery(t, prom.URL, expr)
		if err != nil {
			t.Errorf("%s: %s: Prometheus rejects %s: %v", q.file, q.where, expr, err)
			continue
		}
		byWorkload := map[string]float64{}
		seen := map[string]bool{}
		for _, s := range res {
			w := s.Metric["workload"]
			seen[w] = true
			if w != "" && s.float() > byWorkload[w] {
				byWorkload[w] = s.float()
			}
		}
		// Prometheus holds what it was sent in its head and WAL until it
		// cuts its first block, hours on: no storage per value comes from
		// it in a short run, but VictoriaMetrics, flushed each second,
		// gives one.
		remote := "rw"
		if strings.Contains(expr, "soakd_target_storage_bytes_per_value") {
			remote = "vm"
		}
		if !q.rule && seen["iot"] && !seen[remote] {
			t.Errorf("%s: %s shows the PostgreSQL workload but not the remote-write one (%s): %s", q.file, q.where, remote, expr)
		}
		switch {
		case q.rule && firing[strings.TrimPrefix(q.where, "alert ")]:
			// kv is the healthy control: thousands of Redis operations a
			// second, so its p99 stays far under the alerts' 0.5 s even
			// when a busy machine stalls for a second, and a MAX_LAG of
			// 10 s keeps it from dropping. iot's ten writes a second are
			// too few for that: one stall can put its p99 over 0.5 s for
			// real, so whether an alert selects it is not checked.
			if _, kv := byWorkload["kv"]; byWorkload["bad"] <= 0 || kv {
				t.Errorf("%s: %s selects %v, want the failing workload and not kv", q.file, q.where, byWorkload)
			}
		case q.rule:
			if len(res) > 0 && (q.where == "alert SoakdTargetNotReady" || q.where == "alert SoakdDown") {
				t.Errorf("%s: %s selects %v on a healthy run", q.file, q.where, res)
			}
		case len(res) == 0:
			t.Errorf("%s: %s: no result for %s", q.file, q.where, expr)
		case mustFill[q.panel] && byWorkload["bad"] > 0:
			delete(mustFill, q.panel) // one query of the panel shows it
		}
	}
	for p := range mustFill {
		t.Errorf("panel %q shows nothing for the failing workload", p)
	}
}
