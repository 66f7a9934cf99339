package verify

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

// tagRun is the run of the changed-tag tests: 4 devops hosts for 10
// minutes (240 rows) into target, as fast as it takes them.
func tagRun(target string) map[string]string {
	return map[string]string{
		"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": target,
		"SOAKD_CPU_SCALE": "4", "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+10m",
		"SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "2", "SOAKD_CPU_BATCH_SIZE": "50",
	}
}

// A tag changed in the stored data is a mismatch that names the device,
// the time and the tag, in both PostgreSQL layouts: inline tags (one row
// changed) and TSBS's tags table (the device's one tags row changed, so
// every row of the device is).
func TestPostgresChangedTag(t *testing.T) {
	srv := testserver.Postgres(t, testserver.PostgresSettings(timescale()...))
	for _, tc := range []struct {
		layout, change string
		mismatched     int64
		line           string
	}{
		{"soakd", `UPDATE cpu SET region = 'moon' WHERE hostname = 'host_2' AND time = '2026-01-01T00:05:00Z'`, 1,
			`mismatched: cpu host_2 2026-01-01T00:05:00Z region: stored "moon", written "`},
		{"tsbs", `UPDATE tags SET os = 'TempleOS' WHERE hostname = 'host_2'`, 60,
			`mismatched: cpu host_2 2026-01-01T00:00:00Z os: stored "TempleOS", written "`},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			base := srv.CreateDatabase(t, "tags_"+tc.layout)
			db := base + "&layout=" + tc.layout
			_, path := soakRun(t, tagRun(db), nil)
			code, _, rep := soakVerify(t, nil, "--summary-json", path)
			if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240}); code != 0 || got != want {
				t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
			}
			testserver.PGExec(t, base, tc.change)
			code, out, rep := soakVerify(t, nil, "--summary-json", path)
			if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240, mismatched: tc.mismatched}); code != 1 || got != want {
				t.Fatalf("changed tag: exit %d, %+v, want %+v", code, got, want)
			}
			hasLine(t, out, tc.line)
		})
	}
}

// InfluxDB keeps tags in the series key, so a point's tag cannot be
// changed in place: the point is deleted and written again with another
// region and the same fields. soakd verify reports that one mismatch.
func TestInfluxChangedTag(t *testing.T) {
	srv := testserver.Influx(t)
	target := "influx1://" + srv.Addr + "?db=verify"
	_, path := soakRun(t, tagRun(target), nil)
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
	const where = `"hostname" = 'host_2' AND time = '2026-01-01T00:05:00Z'`
	cols, row := influxRow(t, srv, "verify", `SELECT * FROM "cpu" WHERE `+where)
	srv.InfluxExec(t, "verify", `DELETE FROM "cpu" WHERE `+where)
	// Tags come back as strings, devops' fields as integers.
	var tags, fields []string
	for i, c := range cols[1:] {
		var s string
		if json.Unmarshal(row[1+i], &s) == nil {
			if c == "region" {
				s = "moon"
			}
			tags = append(tags, c+"="+s)
		} else if string(row[1+i]) != "null" {
			fields = append(fields, c+"="+string(row[1+i])+"i")
		}
	}
	line := "cpu," + strings.Join(tags, ",") + " " + strings.Join(fields, ",") + " " + string(row[0])
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(srv.URL+"/write?db=verify&precision=ns", "text/plain", strings.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write %q: HTTP %d", line, resp.StatusCode)
	}
	code, out, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240, mismatched: 1}); code != 1 || got != want {
		t.Fatalf("changed tag: exit %d, %+v, want %+v", code, got, want)
	}
	hasLine(t, out, `mismatched: cpu host_2 2026-01-01T00:05:00Z region: stored "moon", written "`)
}

// influxRow runs q, which must return one row, with nanosecond times.
func influxRow(t *testing.T, srv *testserver.Server, db, q string) ([]string, []json.RawMessage) {
	t.Helper()
	_, body := srv.InfluxQuery(t, db, q, url.Values{"epoch": {"ns"}})
	var out struct {
		Results []struct {
			Series []struct {
				Columns []string            `json:"columns"`
				Values  [][]json.RawMessage `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 1 || len(out.Results[0].Series) != 1 || len(out.Results[0].Series[0].Values) != 1 {
		t.Fatalf("%s: %+v, want one row", q, out)
	}
	s := out.Results[0].Series[0]
	return s.Columns, s.Values[0]
}
