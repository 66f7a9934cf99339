package redis

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// infoField reads one INFO field through a client of the test's own.
func infoField(t *testing.T, a *goredis.Client, section, field string) float64 {
	t.Helper()
	text, err := a.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	v, ok := parseInfo(text)[field]
	if !ok {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// dbsize is DBSIZE read through a client of the test's own.
func dbsize(t *testing.T, a *goredis.Client) float64 {
	t.Helper()
	n, err := a.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return float64(n)
}

func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

func TestWatchMemoryGrowsWithRecords(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	const prefix = "watch:"
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: prefix}})
	before := sinktest.TargetFigures(t, s)
	if !before.HasCPU || before.CPUSeconds <= 0 {
		t.Errorf("no CPU time: %+v", before)
	}
	if len(before.Storage) != 0 || !strings.Contains(before.Unavailable["storage"], "AOF") {
		t.Errorf("without AOF: storage %v, unavailable %q", before.Storage, before.Unavailable["storage"])
	}

	if k, ok := before.Stats["keys"]; !ok || k != 0 {
		t.Errorf("keys of an empty server: %v (%t), unavailable %q", k, ok, before.Unavailable["keys"])
	}

	c := kv.DefaultConfig()
	c.Records, c.Fields, c.FieldLength = 4000, 10, 100 // 4 MB of values
	c.KeyPrefix = prefix
	if n := runLoad(t, source(t, c), s, 2); n != 4000 {
		t.Fatalf("load wrote %d records", n)
	}
	// Redis samples its RSS and fragmentation in its cron, so the sink's
	// reading is held between two read apart, just before and just after
	// it; its keys between two DBSIZE.
	rss0 := infoField(t, a, "memory", "used_memory_rss")
	frag0 := infoField(t, a, "memory", "mem_fragmentation_ratio")
	keys0 := dbsize(t, a)
	after := sinktest.TargetFigures(t, s)
	keys1 := dbsize(t, a)
	frag1 := infoField(t, a, "memory", "mem_fragmentation_ratio")
	used := infoField(t, a, "memory", "used_memory")
	if grew := after.Memory["used"] - before.Memory["used"]; grew < 4e6 {
		t.Errorf("used memory grew by %.0f bytes for 4 MB of values (%.0f -> %.0f)", grew, before.Memory["used"], after.Memory["used"])
	}
	if !within(after.Memory["used"], used, 0.02) {
		t.Errorf("used = %.0f, INFO memory read alone says used_memory:%.0f", after.Memory["used"], used)
	}
	rss1 := infoField(t, a, "memory", "used_memory_rss")
	if r := after.Memory["rss"]; r < min(rss0, rss1)*0.98 || r > max(rss0, rss1)*1.02 {
		t.Errorf("rss = %.0f, INFO memory read alone just before and after says used_memory_rss:%.0f and %.0f", r, rss0, rss1)
	}
	// A hash per record, and the sorted set the sink's scans look up
	// (prefix_indices, as YCSB's): 4001 keys.
	if k := after.Stats["keys"]; k != 4000+1 || k < min(keys0, keys1) || k > max(keys0, keys1) {
		t.Errorf("keys = %v, want the 4000 records and the scan index, DBSIZE just before and after says %v and %v", k, keys0, keys1)
	}
	if r, ok := after.Stats["memory_fragmentation_ratio"]; !ok || r < min(frag0, frag1) || r > max(frag0, frag1) {
		t.Errorf("fragmentation = %v (%t), INFO memory just before and after says mem_fragmentation_ratio:%v and %v", r, ok, frag0, frag1)
	}
	if e, ok := after.Stats["evictions"]; !ok || e != 0 {
		t.Errorf("evictions = %v (%t) without maxmemory", e, ok)
	}
	if after.CPUSeconds < before.CPUSeconds {
		t.Errorf("CPU time went back from %v to %v", before.CPUSeconds, after.CPUSeconds)
	}
}

// A Redis filled past its maxmemory under allkeys-lru evicts keys: the
// sink's evictions are INFO stats' evicted_keys, read alone just before
// and just after, and its keys are what is left, DBSIZE's.
func TestWatchEvictions(t *testing.T) {
	srv := testserver.Redis(t, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru")
	a := admin(t, srv)
	const prefix = "evict:"
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: prefix}})
	c := kv.DefaultConfig()
	c.Records, c.Fields, c.FieldLength = 4000, 10, 100 // 4 MB of values
	c.KeyPrefix = prefix
	if n := runLoad(t, source(t, c), s, 2); n != 4000 {
		t.Fatalf("load wrote %d records", n)
	}
	ev0, keys0 := infoField(t, a, "stats", "evicted_keys"), dbsize(t, a)
	f := sinktest.TargetFigures(t, s)
	ev1, keys1 := infoField(t, a, "stats", "evicted_keys"), dbsize(t, a)
	if ev0 == 0 {
		t.Fatalf("4 MB of values in a 2 MB Redis evicted nothing: the test proves nothing")
	}
	if e := f.Stats["evictions"]; e < min(ev0, ev1) || e > max(ev0, ev1) {
		t.Errorf("evictions = %v, INFO stats just before and after says evicted_keys:%v and %v", e, ev0, ev1)
	}
	if k := f.Stats["keys"]; k >= 4000+1 || k < min(keys0, keys1) || k > max(keys0, keys1) {
		t.Errorf("keys = %v of 4000 written, DBSIZE just before and after says %v and %v", k, keys0, keys1)
	}
}

func TestWatchAOFSize(t *testing.T) {
	srv := testserver.Redis(t, "--appendonly", "yes", "--appendfsync", "no")
	a := admin(t, srv)
	const prefix = "aof:"
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString, KeyPrefix: prefix}})
	c := kv.DefaultConfig()
	c.Records, c.Fields, c.FieldLength = 1000, 4, 100
	c.KeyPrefix = prefix
	runLoad(t, source(t, c), s, 1)
	f := sinktest.TargetFigures(t, s)
	if f.Storage["aof"] < 400e3 {
		t.Errorf("aof = %.0f bytes after 400 kB of values (unavailable: %v)", f.Storage["aof"], f.Unavailable)
	}
	if want := infoField(t, a, "persistence", "aof_current_size"); f.Storage["aof"] != want {
		t.Errorf("aof = %.0f, INFO persistence says aof_current_size:%.0f", f.Storage["aof"], want)
	}
}

// TestWatchInfoRefused: a user whose ACL denies INFO (as managed
// services do for some commands) gets every figure in Unavailable with
// the server's answer, and no error: the target is up.
func TestWatchInfoRefused(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	if err := a.Do(context.Background(), "ACL", "SETUSER", "soak", "on", ">pw", "~*", "+@all", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	s := open(t, "redis://soak:pw@"+srv.Addr+"/0", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	f := sinktest.TargetFigures(t, s)
	if len(f.Memory) != 0 || len(f.Storage) != 0 || f.HasCPU {
		t.Errorf("figures read without INFO: %+v", f)
	}
	if len(f.Stats) != 0 {
		t.Errorf("stats read without INFO: %v", f.Stats)
	}
	for _, fig := range []string{"memory", "cpu", "storage", "keys", "evictions", "memory_fragmentation_ratio"} {
		if why := f.Unavailable[fig]; !strings.Contains(why, "NOPERM") {
			t.Errorf("unavailable %s: %q, want the server's NOPERM answer", fig, why)
		}
	}
}

func TestWatchServerDown(t *testing.T) {
	srv := testserver.Redis(t)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	sinktest.TargetFiguresServerDown(t, s, srv.Proc.Stop)
}

func TestWatchFiguresOfSections(t *testing.T) {
	t.Parallel()
	mem := sectionInfo{section: "memory", fields: map[string]string{"used_memory": "100", "used_memory_rss": "x", "mem_fragmentation_ratio": "1.25"}}
	mem2 := sectionInfo{section: "memory", fields: map[string]string{"used_memory": "100", "used_memory_rss": "x", "mem_fragmentation_ratio": "3.50"}}
	cpu := sectionInfo{section: "cpu", fields: map[string]string{"used_cpu_sys": "1.5", "used_cpu_user": "2.25"}}
	per := sectionInfo{section: "persistence", fields: map[string]string{"aof_enabled": "1", "aof_current_size": "42"}}
	sta := sectionInfo{section: "stats", fields: map[string]string{"evicted_keys": "7"}}
	ks := sectionInfo{section: "keyspace", titled: true, fields: map[string]string{"db0": "keys=10,expires=0,avg_ttl=0", "db3": "keys=5,expires=1,avg_ttl=9"}}
	empty := sectionInfo{section: "keyspace", titled: true, fields: map[string]string{}}
	f := figures(mem, cpu, per, sta, ks, mem2, cpu, per, sta, empty) // two masters
	if f.Memory["used"] != 200 || f.CPUSeconds != 7.5 || !f.HasCPU || f.Storage["aof"] != 84 {
		t.Errorf("sums: %+v", f)
	}
	// Keys over every database of every master; evictions summed; the
	// fragmentation of the most fragmented master.
	if f.Stats["keys"] != 15 || f.Stats["evictions"] != 14 || f.Stats["memory_fragmentation_ratio"] != 3.5 {
		t.Errorf("stats: %v", f.Stats)
	}
	bad := ks
	bad.fields = map[string]string{"db0": "keys=lots"}
	if f := figures(mem, sta, bad); !strings.Contains(f.Unavailable["keys"], `"lots"`) || f.Stats["evictions"] != 7 {
		t.Errorf("keys not a number: %+v", f)
	}
	// A server whose INFO keyspace is an empty reply gives no figure;
	// an empty Redis (its title, no database) holds 0 keys.
	if f := figures(mem, sta, sectionInfo{section: "keyspace", fields: map[string]string{}}); !strings.Contains(f.Unavailable["keys"], "nothing") {
		t.Errorf("empty INFO keyspace reply: %+v", f)
	}
	if f := figures(mem, sta, empty); f.Stats["keys"] != 0 || f.Unavailable["keys"] != "" || !hasKey(f.Stats, "keys") {
		t.Errorf("an empty Redis: %+v", f)
	}
	noFrag := mem
	noFrag.fields = map[string]string{"used_memory": "100"}
	if f := figures(noFrag, sta, ks); !strings.Contains(f.Unavailable["memory_fragmentation_ratio"], "no mem_fragmentation_ratio") {
		t.Errorf("no mem_fragmentation_ratio: %+v", f)
	}
	if _, ok := f.Memory["rss"]; ok || !strings.Contains(f.Unavailable["memory.rss"], `"x"`) {
		t.Errorf("rss not a number: %+v", f)
	}
	noAOF := per
	noAOF.fields = map[string]string{"aof_enabled": "0"}
	if f := figures(mem, cpu, per, mem, cpu, noAOF); len(f.Storage) != 0 || f.Unavailable["storage"] == "" {
		t.Errorf("AOF on one master only: %+v", f)
	}
}

// TestWatchCluster: a cluster's figures are its masters' summed.
func TestWatchCluster(t *testing.T) {
	a, b, ca, cb := twoNodeCluster(t)
	s := open(t, "redis-cluster://"+a+","+b, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "wcl:"}})
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 2000, "wcl:"
	runLoad(t, source(t, c), s, 2)
	f := sinktest.TargetFigures(t, s)
	used := infoField(t, ca, "memory", "used_memory") + infoField(t, cb, "memory", "used_memory")
	if !within(f.Memory["used"], used, 0.02) {
		t.Errorf("used = %.0f, the masters' used_memory adds up to %.0f", f.Memory["used"], used)
	}
	if k := f.Stats["keys"]; k != 2000+1 || k != dbsize(t, ca)+dbsize(t, cb) {
		t.Errorf("keys = %v, want the 2000 records and the scan index, the masters' DBSIZE adding up to %v", k, dbsize(t, ca)+dbsize(t, cb))
	}
	if cpu := infoField(t, ca, "cpu", "used_cpu_user"); f.CPUSeconds < cpu {
		t.Errorf("CPU = %v s, less than one master's user time %v s", f.CPUSeconds, cpu)
	}
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// The server's identity is read with its figures, and a restart of
// redis-server gives another: what the target watch tells a restart
// (after which a server without persistence holds nothing) from. Bug
// caught: a server restarted mid-run was seen only as its counters
// falling, and said nowhere.
func TestWatchInstanceChangesOnRestart(t *testing.T) {
	srv := testserver.Redis(t)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	before := sinktest.TargetFigures(t, s).Instance
	if before == "" || before != sinktest.TargetFigures(t, s).Instance {
		t.Fatalf("instance %q, then another without a restart: want the server's run_id, the same", before)
	}
	srv.Restart(t)
	var after string
	for range 50 { // the sink's connections fail once, then reconnect
		if f, err := s.TargetFigures(context.Background()); err == nil {
			after = f.Instance
			break
		}
	}
	if after == "" || after == before {
		t.Fatalf("instance %q after a restart, %q before: want another run_id", after, before)
	}
}

// FLUSHALL and FLUSHDB calls are read as flushes: what the target watch
// tells a target emptied mid-run from. Bug caught: FLUSHALL in the middle
// of a run left a store of nothing, said nowhere.
func TestWatchFlushes(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	before, ok := sinktest.TargetFigures(t, s).Stats[sinks.StatFlushes]
	if !ok {
		t.Fatal("no flushes figure")
	}
	a.FlushAll(context.Background())
	a.FlushDB(context.Background())
	if after := sinktest.TargetFigures(t, s).Stats[sinks.StatFlushes]; after != before+2 {
		t.Errorf("flushes %v after FLUSHALL and FLUSHDB, %v before: want 2 more", after, before)
	}
}
