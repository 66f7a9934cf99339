package deploy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// Rows of the sharded-run data set: TSBS cpu-only, 30 hosts, one hour at
// 10 s, written at a total of shardRate rows/s.
const (
	shardHosts = 30
	shardRows  = shardHosts * 360
	shardRate  = 4000
)

// runIoT runs one soakd process's workload (in this process) into db and
// returns its summary.
func runIoT(t *testing.T, pgURL, db string, extra map[string]string) *report.Summary {
	t.Helper()
	target := strings.Replace(pgURL, "/postgres?", "/"+db+"?", 1)
	env := map[string]string{
		"SOAKD_WORKLOADS": "iot", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_TARGET": target, "SOAKD_IOT_RATE": strconv.Itoa(shardRate),
		"SOAKD_IOT_BATCH_SIZE": "100", "SOAKD_IOT_WORKERS": "2", "SOAKD_IOT_SCALE": strconv.Itoa(shardHosts),
		"SOAKD_IOT_START": "2026-01-01T00:00:00Z", "SOAKD_IOT_END": "+1h",
	}
	for k, v := range extra {
		env[k] = v
	}
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err = cfg.Check(p, err); err != nil {
		t.Fatalf("config %v: %v", extra, err)
	}
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"})
	if err == nil {
		err = sum.Failed()
	}
	if err != nil {
		t.Fatalf("run %v: %v", extra, err)
	}
	return sum
}

// stored is what a database holds: its row count, distinct (host, time)
// pairs, each host's first and last time and count, and a digest of every
// row in order.
type stored struct {
	rows, distinct int64
	perHost        string
	digest         string
}

func readStored(t *testing.T, pgURL, db string) stored {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, strings.Replace(pgURL, "/postgres?", "/"+db+"?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var s stored
	if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT (hostname, time)) FROM cpu`).Scan(&s.rows, &s.distinct); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT string_agg(hostname || ' ' || lo || ' ' || hi || ' ' || n, E'\n' ORDER BY hostname)
		FROM (SELECT hostname, min(time)::text lo, max(time)::text hi, count(*)::text n FROM cpu GROUP BY hostname) h`).Scan(&s.perHost); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT md5(string_agg(r::text, E'\n' ORDER BY r.hostname, r.time)) FROM cpu r`).Scan(&s.digest); err != nil {
		t.Fatal(err)
	}
	return s
}

// Three soakd processes with SHARD=0/3, 1/3, 2/3 store exactly the rows
// one unsharded process stores, at the same total rate; so do three with
// SHARD=auto and the variables a Kubernetes Indexed Job sets. Each shard
// runs a third of RATE, so the sharded runs take as long as the single
// one.
func TestShardedRunsStoreTheUnshardedRows(t *testing.T) {
	t.Parallel()
	pg := testserver.Postgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"single", "sharded", "auto"} {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close(ctx)

	t0 := time.Now()
	one := runIoT(t, pg.URL, "single", nil)
	single := time.Since(t0)
	want := readStored(t, pg.URL, "single")
	if want.rows != shardRows || want.distinct != shardRows || one.Workloads[0].Units != shardRows {
		t.Fatalf("unsharded run: %d rows stored (%d distinct), %d acknowledged, want %d", want.rows, want.distinct,
			one.Workloads[0].Units, shardRows)
	}

	for _, tc := range []struct {
		db    string
		shard func(i int) map[string]string
	}{
		{"sharded", func(i int) map[string]string { return map[string]string{"SOAKD_IOT_SHARD": fmt.Sprintf("%d/3", i)} }},
		{"auto", func(i int) map[string]string {
			return map[string]string{"SOAKD_IOT_SHARD": "auto", config.JobIndexVar: strconv.Itoa(i), config.JobCountVar: "3"}
		}},
	} {
		var wg sync.WaitGroup
		units := make([]int64, 3)
		t0 := time.Now()
		for i := range 3 {
			wg.Go(func() { units[i] = runIoT(t, pg.URL, tc.db, tc.shard(i)).Workloads[0].Units })
		}
		wg.Wait()
		took := time.Since(t0)
		got := readStored(t, pg.URL, tc.db)
		if got.rows != want.rows || got.distinct != want.distinct {
			t.Errorf("%s: %d rows (%d distinct), want %d (%d distinct)", tc.db, got.rows, got.distinct, want.rows, want.distinct)
		}
		if got.perHost != want.perHost {
			t.Errorf("%s: per-host ranges differ\n got %s\nwant %s", tc.db, got.perHost, want.perHost)
		}
		if got.digest != want.digest {
			t.Errorf("%s: the rows differ from the unsharded run's", tc.db)
		}
		for i, u := range units {
			if u < shardRows/3-shardHosts || u > shardRows/3+shardHosts {
				t.Errorf("%s: shard %d acknowledged %d rows, want about a third of %d", tc.db, i, u, shardRows)
			}
		}
		// The data set at shardRate takes shardRows/shardRate s; each
		// shard paces a third of the rows at a third of the rate.
		ideal := time.Duration(float64(shardRows) / shardRate * float64(time.Second))
		t.Logf("%s: %d rows in %v (unsharded %v, ideal %v)", tc.db, got.rows, took, single, ideal)
		// The schedule is a floor no machine beats: a run faster than it
		// paces too fast. Above it, a loaded machine adds its own delay, so
		// the sharded run is compared with the unsharded one measured here:
		// shards that each paced their third at a ninth of the rate would
		// take 3× as long.
		for what, d := range map[string]time.Duration{"unsharded": single, tc.db: took} {
			if d < ideal*9/10 {
				t.Errorf("%s run took %v for %d rows at %d rows/s: want at least %v", what, d, shardRows, shardRate, ideal)
			}
		}
		if took > 2*single {
			t.Errorf("%s run took %v, the unsharded one %v: want about as long", tc.db, took, single)
		}
	}
}
