package redis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources/kv"
)

// clusterNode starts a redis-server in cluster mode on a free port.
func clusterNode(t *testing.T) string {
	t.Helper()
	return testserver.Redis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf").Addr
}

// A two-node Redis Cluster (slots split in half): the sink routes every
// key to its node, and cleanup deletes on both masters.
func TestCluster(t *testing.T) {
	a, b := clusterNode(t), clusterNode(t)
	ctx := context.Background()
	ca := goredis.NewClient(&goredis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
	cb := goredis.NewClient(&goredis.Options{Addr: b, Protocol: 2, DisableIdentity: true})
	defer ca.Close()
	defer cb.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ca.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 8191).Err())
	must(cb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 8192, 16383).Err())
	host, port, _ := strings.Cut(b, ":")
	must(ca.ClusterMeet(ctx, host, port).Err())
	deadline := time.Now().Add(20 * time.Second)
	for {
		ia, _ := ca.ClusterInfo(ctx).Result()
		ib, _ := cb.ClusterInfo(ctx).Result()
		if strings.Contains(ia, "cluster_state:ok") && strings.Contains(ib, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 20s:\n%s\n%s", ia, ib)
		}
		time.Sleep(100 * time.Millisecond)
	}

	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 2000, "cl:"
	c.Workload, _ = kv.ParseWorkload("read=0.4,update=0.3,insert=0.1,scan=0.1,rmw=0.1")
	src := source(t, c)
	s := open(t, "redis-cluster://"+a+","+b+"?cleanup=true", sinks.Options{DataType: "hash", KeyPrefix: "cl:", Workers: 4})
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	runLoad(t, src, s, 4)
	runOps(t, src, s, 3000, 16)
	na, _ := ca.DBSize(ctx).Result()
	nb, _ := cb.DBSize(ctx).Result()
	t.Logf("keys: %s %d, %s %d", a, na, b, nb)
	if na < 500 || nb < 500 || na+nb < 2000+1 {
		t.Fatalf("keys not spread over both nodes: %d and %d", na, nb)
	}
	if m := s.Misses(); m != 0 {
		t.Errorf("%d misses", m)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	na, _ = ca.DBSize(ctx).Result()
	nb, _ = cb.DBSize(ctx).Result()
	if na+nb != 0 {
		t.Fatalf("cleanup left %d + %d keys", na, nb)
	}
}

// A master watched by a sentinel: the sink asks the sentinel for the
// master and writes there.
func TestSentinel(t *testing.T) {
	bin := testserver.RedisBinary(t)
	master := testserver.Redis(t)
	dir := testserver.TempDir(t, "")
	port := testserver.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	host, mport, _ := strings.Cut(master.Addr, ":")
	conf := filepath.Join(dir, "sentinel.conf")
	cfg := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor mymaster %s %s 1\n", port, dir, host, mport)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	testserver.Start(t, testserver.Command{
		Name: "redis-sentinel", Path: bin, Dir: dir, Args: []string{conf, "--sentinel"},
		Ready: testserver.DialReady(addr),
	})
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 500, "sn:"
	src := source(t, c)
	s := open(t, "redis-sentinel://"+addr+"/mymaster/0", sinks.Options{DataType: "string", KeyPrefix: "sn:"})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	runLoad(t, src, s, 2)
	if n, _ := admin(t, master).DBSize(context.Background()).Result(); n != 500+1 {
		t.Fatalf("master holds %d keys after loading 500 records through the sentinel", n)
	}
	u := "redis-sentinel://" + addr + "/othermaster"
	bad := open(t, u, sinks.Options{DataType: "string"})
	if err := bad.Ping(context.Background()); err == nil {
		t.Fatalf("ping of an unknown master through %s succeeded", u)
	}
}
