package verify

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
)

func redisClient(t *testing.T, srv *testserver.Server) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// A YCSB workload A run (load, then updates) verifies clean: the fields
// only one worker updated must hold its last acknowledged update, exactly.
// A field changed by hand is a mismatch, a record deleted by hand lost.
func TestRedis(t *testing.T) {
	srv := testserver.Redis(t)
	env := map[string]string{
		"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": srv.URL, "SOAKD_KV_RECORDS": "2000", "SOAKD_KV_FIELDS": "5",
		"SOAKD_KV_FIELD_LENGTH": "40", "SOAKD_KV_LOAD_RATE": "max", "SOAKD_KV_RATE": "4000", "SOAKD_KV_DURATION": "2s",
		"SOAKD_KV_WORKERS": "3", "SOAKD_KV_PIPELINE": "8", "SOAKD_KV_VERIFY": "0.05", "SOAKD_KV_DISTRIBUTION": "uniform",
	}
	sum, path := soakRun(t, env, nil)
	checkContinuous(t, phase(t, sum, "kv", "load"))
	checkContinuous(t, phase(t, sum, "kv", "run"))
	code, out, rep := soakVerify(t, map[string]string{"SOAKD_KV_TARGET": srv.URL}, "--summary-json", path)
	w := only(t, rep)
	if got, want := countsOf(w), (counts{acked: 2000, stored: 2000}); code != 0 || got != want {
		t.Fatalf("clean run: exit %d, %+v, want %+v", code, got, want)
	}
	if w.FieldsExact < 5000 || w.FieldsExact+w.FieldsShape != 10000 {
		t.Errorf("fields checked exactly %d, by shape %d: want most of the 10000 exactly", w.FieldsExact, w.FieldsShape)
	}
	hasLine(t, out, "kv records: acknowledged 2000, stored 2000, lost 0, duplicated 0, mismatched 0")

	ctx := context.Background()
	a := redisClient(t, srv)
	keys, err := a.Keys(ctx, "soakd:user*").Result()
	if err != nil || len(keys) != 2000 {
		t.Fatalf("%d keys (%v)", len(keys), err)
	}
	v := a.HGet(ctx, keys[0], "field2").Val()
	last := "#" // a value's last byte may already be '#': then change it to another
	if strings.HasSuffix(v, last) {
		last = "%"
	}
	a.HSet(ctx, keys[0], "field2", v[:len(v)-1]+last)
	a.Del(ctx, keys[1])
	code, out, rep = soakVerify(t, map[string]string{"SOAKD_KV_TARGET": srv.URL}, "--summary-json", path)
	w = only(t, rep)
	if got, want := countsOf(w), (counts{acked: 2000, stored: 1999, lost: 1, mismatched: 1}); code != 1 || got != want {
		t.Fatalf("after damage: exit %d, %+v, want %+v", code, got, want)
	}
	hasLine(t, out, "("+keys[0]+"): field2: ")
	hasLine(t, out, "first key "+keys[1]+")")

	// A record evicted, then one field written again by an update (the
	// value soakd wrote): it lost its other fields, and reads as lost,
	// as VERIFY during the run says missing, not as mismatched.
	v3 := a.HGet(ctx, keys[2], "field3").Val()
	a.Del(ctx, keys[2])
	a.HSet(ctx, keys[2], "field3", v3)
	code, _, rep = soakVerify(t, map[string]string{"SOAKD_KV_TARGET": srv.URL}, "--summary-json", path)
	w = only(t, rep)
	if got, want := countsOf(w), (counts{acked: 2000, stored: 1998, lost: 2, mismatched: 1}); code != 1 || got != want {
		t.Fatalf("after a record evicted and partly written again: exit %d, %+v, want %+v", code, got, want)
	}
}

// redis-server restarted without persistence in the middle of a run:
// the loaded records and the inserts acknowledged before the restart are
// lost, and soakd verify says so; inserts after it are stored.
func TestRedisRestartLosesKeys(t *testing.T) {
	srv := testserver.Redis(t)
	env := map[string]string{
		"SOAKD_WORKLOADS": "kv", "SOAKD_KV_TARGET": srv.URL, "SOAKD_KV_RECORDS": "1000", "SOAKD_KV_WORKLOAD": "d",
		// DURATION only bounds a run the test fails to stop.
		"SOAKD_KV_LOAD_RATE": "max", "SOAKD_KV_RATE": "2000", "SOAKD_KV_DURATION": "2m", "SOAKD_KV_WORKERS": "2",
		"SOAKD_KV_VERIFY": "0.02", "SOAKD_KV_TIMEOUT": "1s",
	}
	sum, path := soakRunStop(t, env, func(stop func()) {
		// Restart once the load phase has stored every record and the
		// run has inserted more, and stop the run once it has inserted
		// again after the restart, whatever the machine's load.
		c := redisClient(t, srv)
		waitKeys := func(n int64, what string) {
			for deadline := time.Now().Add(30 * time.Second); c.DBSize(context.Background()).Val() < n; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s within 30 s", what)
				}
			}
		}
		waitKeys(1100, "the run did not insert past the 1000 loaded records")
		srv.Restart(t)
		c = redisClient(t, srv)
		waitKeys(50, "the run did not insert 50 records after the restart")
		stop()
	})
	run := phase(t, sum, "kv", "run")
	t.Logf("run: %d ops, failed %d, verify checked %d missing %d", run.Units, run.Failed, run.Verify.Checked, run.Verify.Missing)
	code, out, rep := soakVerify(t, map[string]string{"SOAKD_KV_TARGET": srv.URL}, "--summary-json", path)
	w := only(t, rep)
	if code != 1 || w.Lost < 1000 || w.Mismatched != 0 || w.Stored == 0 {
		t.Fatalf("after the restart: exit %d, %+v: want the 1000 loaded records and early inserts lost, later inserts stored", code, countsOf(w))
	}
	if len(w.LostRecords) == 0 || w.LostRecords[0].From != 0 || w.LostRecords[0].Count < 1000 {
		t.Errorf("lost records %+v: want a range from record 0", w.LostRecords)
	}
	hasLine(t, out, "lost: records 0.."+strconv.FormatInt(w.LostRecords[0].Count-1, 10))
	if !strings.Contains(out, "FAILED") {
		t.Error("no FAILED verdict")
	}
}
