package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/internal/testserver"
)

// The churned run of these tests: 6 hosts, an hour at 10 s, a quarter of
// the hosts replaced every 10 minutes, with offline hosts (whose
// buffered readings a replaced host still sends) and late readings.
const (
	churnScale    = 6
	churnShare    = 0.25
	churnEvery    = 10 * time.Minute
	churnSpan     = time.Hour
	churnInterval = 10 * time.Second
)

// churnDevices is what the schedule predicts, worked out here from the
// settings: the last reading is at span − interval; after e whole churn
// intervals floor(e × scale × share) hosts have been replaced, each by a
// new one, round robin from host_0 on; a slot's k-th replacement is
// host_(slot + k × scale).
func churnDevices() (devices int, lifetime map[string][2]time.Duration) {
	e := int((churnSpan - churnInterval) / churnEvery)
	lifetime = map[string][2]time.Duration{}
	cur := make([]int, churnScale) // the host each slot holds
	from := make([]time.Duration, churnScale)
	for s := range churnScale {
		cur[s] = s
	}
	done := 0
	for i := 1; i <= e; i++ {
		upto := int(float64(i*churnScale) * churnShare)
		for ; done < upto; done++ {
			s := done % churnScale
			lifetime["host_"+strconv.Itoa(cur[s])] = [2]time.Duration{from[s], time.Duration(i) * churnEvery}
			cur[s] += churnScale
			from[s] = time.Duration(i) * churnEvery
		}
	}
	for s := range churnScale {
		lifetime["host_"+strconv.Itoa(cur[s])] = [2]time.Duration{from[s], churnSpan}
	}
	return churnScale + done, lifetime
}

func churnInto(target, verify string) map[string]string {
	return map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": target,
		"SOAKD_CPU_SCALE": strconv.Itoa(churnScale), "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+" + churnSpan.String(),
		"SOAKD_CPU_CHURN": fmt.Sprintf("%g%%/%s", churnShare*100, churnEvery), "SOAKD_CPU_OFFLINE": "0.1:5m", "SOAKD_CPU_OUT_OF_ORDER": "0.1:1m",
		"SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "2", "SOAKD_CPU_BATCH_SIZE": "50", "SOAKD_CPU_VERIFY": verify,
	}
}

// promQuery is the value of the instant PromQL query q at the end of the
// churned data set.
func promQuery(t *testing.T, base, q string) float64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(churnSpan)
	resp, err := hc.PostForm(base+"/api/v1/query", url.Values{"query": {q}, "time": {strconv.FormatInt(at.Unix(), 10)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s, %v", q, resp.Status, err)
	}
	if len(out.Data.Result) == 0 {
		return 0
	}
	n, _ := strconv.ParseFloat(fmt.Sprint(out.Data.Result[0].Value[1]), 64)
	return n
}

// promSeries is the number of series matching match over the churned
// data set's time.
func promSeries(t *testing.T, base, match string) int {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	resp, err := hc.PostForm(base+"/api/v1/series", url.Values{"match[]": {match},
		"start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(from.Add(churnSpan).Unix(), 10)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []map[string]string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("series %s: %s, %v", match, resp.Status, err)
	}
	return len(out.Data)
}

// checkChurnedSeries checks that the target holds the series the churn
// schedule makes, each host's readings over its lifetime, no more.
func checkChurnedSeries(t *testing.T, base string) {
	t.Helper()
	devices, life := churnDevices()
	if got := promQuery(t, base, `count(count by (hostname) (count_over_time(cpu_usage_user[2h])))`); int(got) != devices {
		t.Errorf("%g hosts hold cpu_usage_user, the schedule makes %d", got, devices)
	}
	if got := promSeries(t, base, `{__name__=~"cpu_.*"}`); got != devices*10 {
		t.Errorf("%d cpu series, the schedule makes %d (10 fields per host)", got, devices*10)
	}
	for host, l := range life {
		want := int((l[1] - l[0]) / churnInterval)
		if got := promQuery(t, base, `sum(count_over_time(cpu_usage_idle{hostname="`+host+`"}[2h]))`); int(got) != want {
			t.Errorf("%s: %g samples, want %d (it held its slot %s .. %s)", host, got, want, l[0], l[1])
		}
	}
}

// A churned run into Prometheus: the hosts and series it holds are the
// ones the schedule makes, VERIFY during the run and soakd verify after
// it find every row under the host that wrote it, and the rows of a
// replacement host deleted by hand are lost under that host's name.
func TestPrometheusChurn(t *testing.T) {
	srv := testserver.PrometheusReceiver(t, time.Hour)
	sum, path := soakRun(t, churnInto("prom+http://"+srv.Addr+"/api/v1/write", "0.3"), nil)
	run := phase(t, sum, "cpu", "run")
	checkContinuous(t, run)
	rows := int64(churnScale * int(churnSpan/churnInterval))
	if run.Units != rows {
		t.Fatalf("run acknowledged %d rows, want %d", run.Units, rows)
	}
	checkChurnedSeries(t, srv.URL)
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: rows, stored: rows}); code != 0 || got != want {
		t.Fatalf("clean churned run: exit %d, %+v, want %+v", code, got, want)
	}
	devices, _ := churnDevices()
	if n := len(only(t, rep).Devices); n != devices {
		t.Errorf("verify reports %d hosts, the schedule makes %d", n, devices)
	}
}

func deleteSeries(t *testing.T, endpoint, match string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := hc.PostForm(endpoint, url.Values{"match[]": {match}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete_series: %s", resp.Status)
	}
}

// The same churned run into VictoriaMetrics (read back after the run
// only: it makes samples searchable about a second after it takes them).
func TestVictoriaMetricsChurn(t *testing.T) {
	srv := testserver.VictoriaMetrics(t)
	_, path := soakRun(t, churnInto("prom+http://"+srv.Addr+"/api/v1/write", "0"), nil)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := hc.Get(srv.URL + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	checkChurnedSeries(t, srv.URL)
	rows := int64(churnScale * int(churnSpan/churnInterval))
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: rows, stored: rows}); code != 0 || got != want {
		t.Fatalf("clean churned run: exit %d, %+v, want %+v", code, got, want)
	}
	// Verify checks each host under its own name: the rows of a
	// replacement host deleted by hand are lost, under that host, for its
	// lifetime exactly. (Prometheus 2.42's delete_series leaves
	// out-of-order samples in place; VictoriaMetrics deletes them all.)
	_, life := churnDevices()
	// host_7 replaced host_1 at 20m and held its slot to the end.
	l := life["host_7"]
	if l != [2]time.Duration{20 * time.Minute, time.Hour} {
		t.Fatalf("BUG in the test's schedule: host_7 lives %v", l)
	}
	deleteSeries(t, srv.URL+"/api/v1/admin/tsdb/delete_series", `{__name__=~"cpu_.*",hostname="host_7"}`)
	lost := int64((l[1] - l[0]) / churnInterval)
	code, out, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: rows, stored: rows - lost, lost: lost}); code != 1 || got != want {
		t.Fatalf("after deleting host_7: exit %d, %+v, want %+v", code, got, want)
	}
	hasLine(t, out, fmt.Sprintf("lost: cpu host_7 2026-01-01T00:20:00Z .. 2026-01-01T00:59:50Z (%d rows)", lost))
}

// The same churned run into PostgreSQL, in soakd's layout and in TSBS's
// (whose tags table gets one row per host the schedule makes).
func TestPostgresChurn(t *testing.T) {
	srv := testserver.Postgres(t)
	devices, life := churnDevices()
	rows := int64(churnScale * int(churnSpan/churnInterval))
	for _, layout := range []string{"soakd", "tsbs"} {
		db := srv.CreateDatabase(t, "churn_"+layout)
		target := db
		if layout == "tsbs" {
			target += "&layout=tsbs"
			if u, _ := url.Parse(db); u.RawQuery == "" {
				target = db + "?layout=tsbs"
			}
		}
		sum, path := soakRun(t, churnInto(target, "0.3"), nil)
		checkContinuous(t, phase(t, sum, "cpu", "run"))
		code, _, rep := soakVerify(t, map[string]string{"SOAKD_CPU_TARGET": target}, "--summary-json", path)
		if got, want := countsOf(only(t, rep)), (counts{acked: rows, stored: rows}); code != 0 || got != want {
			t.Fatalf("%s: clean churned run: exit %d, %+v, want %+v", layout, code, got, want)
		}
		ctx := context.Background()
		c, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		q := `SELECT hostname, count(*) FROM cpu GROUP BY 1`
		if layout == "tsbs" {
			var tags int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM tags`).Scan(&tags); err != nil || tags != devices {
				t.Errorf("tsbs: %d tags rows (%v), the schedule makes %d hosts", tags, err, devices)
			}
			q = `SELECT t.hostname, count(*) FROM cpu JOIN tags t ON t.id = cpu.tags_id GROUP BY 1`
		}
		rs, err := c.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rs.Next() {
			var h string
			var n int
			if err := rs.Scan(&h, &n); err != nil {
				t.Fatal(err)
			}
			got[h] = n
		}
		rs.Close()
		c.Close(ctx)
		if len(got) != devices {
			t.Errorf("%s: rows of %d hosts, the schedule makes %d", layout, len(got), devices)
		}
		for host, l := range life {
			if want := int((l[1] - l[0]) / churnInterval); got[host] != want {
				t.Errorf("%s: %s has %d rows, want %d (it held its slot %s .. %s)", layout, host, got[host], want, l[0], l[1])
			}
		}
	}
}

// The same churned run into InfluxDB 1.8: one series per host the
// schedule makes (SHOW SERIES), each host's rows over its lifetime, and
// soakd verify finds every row under the host that wrote it.
func TestInfluxChurn(t *testing.T) {
	srv := testserver.Influx(t)
	target := "influx1://" + srv.Addr + "?db=churn"
	sum, path := soakRun(t, churnInto(target, "0.3"), nil)
	checkContinuous(t, phase(t, sum, "cpu", "run"))
	rows := int64(churnScale * int(churnSpan/churnInterval))
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: rows, stored: rows}); code != 0 || got != want {
		t.Fatalf("clean churned run: exit %d, %+v, want %+v", code, got, want)
	}
	devices, life := churnDevices()
	status, body := srv.InfluxQuery(t, "churn", `SELECT count("usage_idle") FROM "cpu" GROUP BY "hostname"`, nil)
	var out struct {
		Results []struct {
			Series []struct {
				Tags   map[string]string `json:"tags"`
				Values [][]any           `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil || status != http.StatusOK || len(out.Results) != 1 {
		t.Fatalf("count by hostname: HTTP %d %s (%v)", status, body, err)
	}
	got := map[string]int{}
	for _, s := range out.Results[0].Series {
		if len(s.Values) == 1 && len(s.Values[0]) == 2 {
			n, _ := s.Values[0][1].(float64)
			got[s.Tags["hostname"]] = int(n)
		}
	}
	if len(got) != devices {
		t.Errorf("rows of %d hosts, the schedule makes %d", len(got), devices)
	}
	for host, l := range life {
		if want := int((l[1] - l[0]) / churnInterval); got[host] != want {
			t.Errorf("%s has %d rows, want %d (it held its slot %s .. %s)", host, got[host], want, l[0], l[1])
		}
	}
}
