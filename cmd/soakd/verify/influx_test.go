package verify

import (
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

// InfluxDB 1.8 read back with InfluxQL: the trucks' two tables (late
// rows, nulls, offline devices backfilling) verify clean; rows deleted by
// hand are lost with their exact ranges.
func TestInflux(t *testing.T) {
	srv := testserver.Influx(t)
	target := "influx1://" + srv.Addr + "?db=verify"
	env := map[string]string{
		"SOAKD_WORKLOADS": "trucks", "SOAKD_TRUCKS_SOURCE": "iot", "SOAKD_TRUCKS_TARGET": target,
		"SOAKD_TRUCKS_SCALE": "6", "SOAKD_TRUCKS_START": "2026-01-01T00:00:00Z", "SOAKD_TRUCKS_END": "+1h",
		"SOAKD_TRUCKS_OFFLINE": "0.2:2m", "SOAKD_TRUCKS_RATE": "max", "SOAKD_TRUCKS_WORKERS": "2",
		"SOAKD_TRUCKS_BATCH_SIZE": "100", "SOAKD_TRUCKS_VERIFY": "0.2",
	}
	sum, path := soakRun(t, env, nil)
	checkContinuous(t, phase(t, sum, "trucks", "run"))
	code, _, rep := soakVerify(t, nil, "--summary-json", path)
	if got, want := countsOf(only(t, rep)), (counts{acked: 4320, stored: 4320}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
	srv.InfluxExec(t, "verify", `DELETE FROM "diagnostics" WHERE "name" = 'truck_4' AND time >= '2026-01-01T00:20:00Z' AND time < '2026-01-01T00:22:00Z'`)
	code, out, rep := soakVerify(t, nil, "--summary-json", path)
	w := only(t, rep)
	if code != 1 || w.Lost != 12 {
		t.Fatalf("after deleting rows: exit %d, %+v, want 12 lost", code, countsOf(w))
	}
	hasLine(t, out, "lost: diagnostics truck_4 2026-01-01T00:20:00Z .. 2026-01-01T00:21:50Z (12 rows)")
}
