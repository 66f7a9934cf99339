package verify

import (
	"testing"

	"github.com/soakd/soakd/internal/testserver"
)

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
			base := pgDB(t, srv, "tags_"+tc.layout)
			db := base + "&layout=" + tc.layout
			env := map[string]string{
				"SOAKD_WORKLOADS": "cpu", "SOAKD_CPU_SOURCE": "devops", "SOAKD_CPU_TARGET": db,
				"SOAKD_CPU_SCALE": "4", "SOAKD_CPU_START": "2026-01-01T00:00:00Z", "SOAKD_CPU_END": "+10m",
				"SOAKD_CPU_RATE": "max", "SOAKD_CPU_WORKERS": "2", "SOAKD_CPU_BATCH_SIZE": "50",
			}
			_, path := soakRun(t, env, nil)
			code, _, rep := soakVerify(t, nil, "--summary-json", path)
			if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240}); code != 0 || got != want {
				t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
			}
			pgExec(t, base, tc.change)
			code, out, rep := soakVerify(t, nil, "--summary-json", path)
			if got, want := countsOf(only(t, rep)), (counts{acked: 240, stored: 240, mismatched: tc.mismatched}); code != 1 || got != want {
				t.Fatalf("changed tag: exit %d, %+v, want %+v", code, got, want)
			}
			hasLine(t, out, tc.line)
		})
	}
}
