package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/testserver"
)

// drift.target.memory is a soak's leak check: against a real Redis read
// every second, a run of reads and updates over a loaded key space keeps
// the server's memory steady and passes; the same run fails when another
// client writes big keys (outside KEY_PREFIX, none of soakd's) half-way
// through, and the summary gives the growth.
func TestTargetMemoryThresholdsRedis(t *testing.T) {
	for _, grow := range []bool{false, true} {
		t.Run(map[bool]string{false: "steady", true: "growing"}[grow], func(t *testing.T) {
			t.Parallel()
			srv := testserver.Redis(t)
			env := map[string]string{"SOAKD_WORKLOADS": "kv", "SOAKD_LISTEN": "off", "SOAKD_KV_TARGET": srv.URL,
				"SOAKD_KV_RECORDS": "20000", "SOAKD_KV_WORKLOAD": "load", "SOAKD_KV_RATE": "max", "SOAKD_KV_KEY_PREFIX": "t:",
				"SOAKD_KV_WATCH_INTERVAL": "0"}
			if code, out, errs := run(t, env); code != cli.ExitOK {
				t.Fatalf("load: exit %d\n%s\n%s", code, out, errs)
			}
			env["SOAKD_KV_WORKLOAD"], env["SOAKD_KV_LOAD"], env["SOAKD_KV_RATE"] = "read=0.9,update=0.1", "off", "500"
			env["SOAKD_KV_DURATION"], env["SOAKD_KV_WATCH_INTERVAL"], env["SOAKD_KV_DRIFT_WARMUP"] = "12s", "1s", "2s"
			// Early window 2s–6s, late 8s–12s.
			env["SOAKD_KV_THRESHOLDS"] = "drift.target.memory<5%@4s, target.memory<4GiB"

			writes := make(chan error, 1)
			if grow {
				c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
				defer c.Close()
				go func() {
					// 64 MiB between about 6 s and 8 s into the run.
					time.Sleep(6 * time.Second)
					big := strings.Repeat("x", 1<<20)
					for i := range 64 {
						if err := c.Set(context.Background(), "other:"+strconv.Itoa(i), big, 0).Err(); err != nil {
							writes <- err
							return
						}
						time.Sleep(25 * time.Millisecond)
					}
					writes <- nil
				}()
			} else {
				writes <- nil
			}
			js := filepath.Join(t.TempDir(), "sum.json")
			code, out, errs := run(t, env, "--summary-json", js)
			if err := <-writes; err != nil {
				t.Fatal(err)
			}
			want := map[bool]int{false: cli.ExitOK, true: cli.ExitFailed}[grow]
			if code != want {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, want, out, errs)
			}
			s := readJSON[struct {
				Workloads []struct {
					Thresholds []struct {
						Threshold   string   `json:"threshold"`
						OK          bool     `json:"ok"`
						Value       *float64 `json:"value"`
						Unit        string   `json:"unit"`
						WindowUnit  string   `json:"window_unit"`
						EarlyWindow *struct {
							Value float64 `json:"value"`
						} `json:"early_window"`
					} `json:"thresholds"`
				} `json:"workloads"`
			}](t, js)
			var ths []string
			for _, w := range s.Workloads {
				for _, th := range w.Thresholds {
					ths = append(ths, th.Threshold)
					switch th.Threshold {
					case "target.memory<4GiB":
						if !th.OK || th.Value == nil || th.Unit != "bytes" || *th.Value < 1<<20 {
							t.Errorf("%+v", th)
						}
					case "drift.target.memory<5%@4s":
						if th.Value != nil {
							t.Logf("%s: %+.2f%%", th.Threshold, 100**th.Value)
						}
						if th.Value == nil || th.OK == grow || th.WindowUnit != "bytes" || th.EarlyWindow == nil || th.EarlyWindow.Value < 1<<20 ||
							grow && *th.Value < 0.05 {
							t.Errorf("%+v: %v\n%s", th, th.Value, out)
						}
					}
				}
			}
			if len(ths) != 2 {
				t.Errorf("thresholds in the summary: %v", ths)
			}
			if grow && !strings.Contains(out, "✗ drift.target.memory<5%@4s") {
				t.Errorf("summary:\n%s", out)
			}
		})
	}
}

// Thresholds work unchanged on a remote-write target: a short devops run
// into a real VictoriaMetrics judges latency, errors and the target's
// memory and storage (read from its own /metrics), each with a value;
// a memory ceiling below what the server holds fails the run.
// VictoriaMetrics counts what it stores once it has flushed it (every
// 5 s by default): flushed each second over an 8 s run, its storage is
// read within the run, as it is over a soak. A run too short for that has
// no storage per value (a storage of 0 B gave 0 B a value, which passed
// any storage_per_value check).
func TestThresholdsRemoteWrite(t *testing.T) {
	srv := testserver.VictoriaMetrics(t, "-inmemoryDataFlushInterval=1s")
	for _, tc := range []struct {
		thresholds string
		code       int
	}{
		{"p99<10s, errors=0, target.memory<4GiB, target.storage<1TiB, target.storage_per_value<1KiB", cli.ExitOK},
		{"errors=0, target.memory<1MiB", cli.ExitFailed},
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "rw", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
			"SOAKD_RW_SOURCE": "devops", "SOAKD_RW_TARGET": "prom+" + srv.URL + "/api/v1/write", "SOAKD_RW_RATE": "1000",
			"SOAKD_RW_BATCH_SIZE": "100", "SOAKD_RW_DURATION": "8s", "SOAKD_RW_WATCH_INTERVAL": "1s",
			"SOAKD_RW_THRESHOLDS": tc.thresholds}
		js := filepath.Join(t.TempDir(), "sum.json")
		code, out, errs := run(t, env, "--summary-json", js)
		if code != tc.code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", tc.thresholds, code, tc.code, out, errs)
		}
		s := readJSON[struct {
			Workloads []struct {
				Thresholds []struct {
					Threshold string   `json:"threshold"`
					OK        bool     `json:"ok"`
					Value     *float64 `json:"value"`
				} `json:"thresholds"`
			} `json:"workloads"`
		}](t, js)
		if len(s.Workloads) != 1 || len(s.Workloads[0].Thresholds) != strings.Count(tc.thresholds, ",")+1 {
			t.Fatalf("%s: summary %+v", tc.thresholds, s)
		}
		for _, th := range s.Workloads[0].Thresholds {
			if th.Value == nil || th.OK != (th.Threshold != "target.memory<1MiB") {
				t.Errorf("%s: %+v\n%s", tc.thresholds, th, out)
			}
		}
	}
}

// A PostgreSQL role refused pg_table_size and pg_indexes_size reads the
// database's size and the WAL, which are not summed: the watch has no
// storage total and no storage per value, and target.storage checks are
// "not available" (and fail the run) instead of passing on a total of
// 0 B. Bug caught: "storage total: 0 B → 0 B; 0.0 bytes per value" and
// "✓ target.storage_per_value<1B" with storage.table and storage.index
// listed as not read.
func TestTargetStorageThresholdsWithSizesRefused(t *testing.T) {
	srv := testserver.Postgres(t)
	db := srv.CreateDatabase(t, "sizesrefused")
	testserver.PGExec(t, db,
		"CREATE ROLE sizes LOGIN",
		"GRANT ALL ON SCHEMA public TO sizes",
		"REVOKE EXECUTE ON FUNCTION pg_table_size(regclass), pg_indexes_size(regclass) FROM PUBLIC")
	const checks = "target.storage_per_value<1B, target.storage<1KiB"
	env := map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_SCALE": "5", "SOAKD_IOT_TARGET": strings.Replace(db, "postgres@", "sizes@", 1),
		"SOAKD_IOT_RATE": "500", "SOAKD_IOT_BATCH_SIZE": "50", "SOAKD_IOT_DURATION": "3s", "SOAKD_IOT_WATCH_INTERVAL": "1s",
		"SOAKD_IOT_THRESHOLDS": checks}
	js := filepath.Join(t.TempDir(), "sum.json")
	code, out, errs := run(t, env, "--summary-json", js)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d: checks with no figure to judge fail\n%s\n%s", code, cli.ExitFailed, out, errs)
	}
	s := readJSON[struct {
		Workloads []struct {
			Phase      string `json:"phase"`
			Thresholds []struct {
				Threshold string   `json:"threshold"`
				OK        bool     `json:"ok"`
				Value     *float64 `json:"value"`
				Note      string   `json:"note"`
			} `json:"thresholds"`
			TargetFigures *struct {
				Storage         map[string]any `json:"storage_bytes"`
				StorageTotal    any            `json:"storage_total_bytes"`
				StoragePerValue *float64       `json:"storage_bytes_per_value"`
				Unavailable     map[string]any `json:"unavailable"`
			} `json:"target_figures"`
		} `json:"workloads"`
	}](t, js)
	var judged, watched int
	for _, w := range s.Workloads {
		for _, th := range w.Thresholds {
			judged++
			if th.OK || th.Value != nil || !strings.HasPrefix(th.Note, "not available") {
				t.Errorf("%s: ok %v, value %v, note %q: want not available", th.Threshold, th.OK, th.Value, th.Note)
			}
		}
		if f := w.TargetFigures; f != nil {
			watched++
			if _, ok := f.Unavailable["storage.table"]; !ok {
				t.Errorf("storage.table not named unavailable: %+v", f.Unavailable)
			}
			if _, ok := f.Storage["database"]; !ok {
				t.Errorf("no database size read: %+v (the role should read it)", f.Storage)
			}
			if f.StorageTotal != nil || f.StoragePerValue != nil {
				t.Errorf("storage total %v, per value %v: want none without table or index", f.StorageTotal, f.StoragePerValue)
			}
		}
	}
	if judged != 2 || watched == 0 {
		t.Fatalf("%d checks judged, %d entries with target figures\n%s", judged, watched, out)
	}
	if strings.Contains(out, "storage total") || strings.Contains(out, "✓ target.storage") {
		t.Errorf("summary:\n%s", out)
	}
}
