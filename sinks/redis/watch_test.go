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

	c := kv.DefaultConfig()
	c.Records, c.Fields, c.FieldLength = 4000, 10, 100 // 4 MB of values
	c.KeyPrefix = prefix
	if n := runLoad(t, source(t, c), s, 2); n != 4000 {
		t.Fatalf("load wrote %d records", n)
	}
	// Redis samples its RSS in its cron, so the sink's reading is held
	// between two read apart, just before and just after it.
	rss0 := infoField(t, a, "memory", "used_memory_rss")
	after := sinktest.TargetFigures(t, s)
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
	if after.CPUSeconds < before.CPUSeconds {
		t.Errorf("CPU time went back from %v to %v", before.CPUSeconds, after.CPUSeconds)
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
	for _, fig := range []string{"memory", "cpu", "storage"} {
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
	mem := sectionInfo{section: "memory", fields: map[string]string{"used_memory": "100", "used_memory_rss": "x"}}
	cpu := sectionInfo{section: "cpu", fields: map[string]string{"used_cpu_sys": "1.5", "used_cpu_user": "2.25"}}
	per := sectionInfo{section: "persistence", fields: map[string]string{"aof_enabled": "1", "aof_current_size": "42"}}
	f := figures(mem, cpu, per, mem, cpu, per) // two masters
	if f.Memory["used"] != 200 || f.CPUSeconds != 7.5 || !f.HasCPU || f.Storage["aof"] != 84 {
		t.Errorf("sums: %+v", f)
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
	if cpu := infoField(t, ca, "cpu", "used_cpu_user"); f.CPUSeconds < cpu {
		t.Errorf("CPU = %v s, less than one master's user time %v s", f.CPUSeconds, cpu)
	}
}
