package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// clusterNode starts a redis-server in cluster mode on a free port.
func clusterNode(t *testing.T) string {
	t.Helper()
	return testserver.Redis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf").Addr
}

// twoNodeCluster starts a two-node Redis Cluster (slots split in half)
// and returns its nodes' addresses with a plain client to each.
func twoNodeCluster(t *testing.T) (a, b string, ca, cb *goredis.Client) {
	t.Helper()
	a, b = clusterNode(t), clusterNode(t)
	ctx := context.Background()
	ca = goredis.NewClient(&goredis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
	cb = goredis.NewClient(&goredis.Options{Addr: b, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { ca.Close(); cb.Close() })
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
	return a, b, ca, cb
}

// A two-node Redis Cluster: the sink routes every key to its node, and
// cleanup deletes on both masters.
func TestCluster(t *testing.T) {
	a, b, ca, cb := twoNodeCluster(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 2000, "cl:"
	c.Workload, _ = kv.ParseWorkload("read=0.4,update=0.3,insert=0.1,scan=0.1,rmw=0.1")
	src := source(t, c)
	s := open(t, "redis-cluster://"+a+","+b+"?cleanup=true", sinks.Options{Shape: src.Shape(), Workers: 4})
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

	// The load probe asks each key's node for its type.
	_, probe, _ := src.Preload()
	pb := src.NewBatch()
	probe(pb)
	if n, err := s.Present(ctx, pb); err != nil || n != len(pb.Ops) {
		t.Fatalf("Present after the load = %d of %d, %v", n, len(pb.Ops), err)
	}
	str := open(t, "redis-cluster://"+a+","+b, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString, KeyPrefix: "cl:"}})
	var se *sources.SettingError
	if _, err := str.Present(ctx, pb); !errors.As(err, &se) || se.Setting != "DATA_TYPE" ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d of the %d keys probed hold a hash", len(pb.Ops), len(pb.Ops))) {
		t.Fatalf("hash records probed as strings in a cluster: %v", err)
	}

	// Move the slot of one of a's records to b. HMGET's reply is read raw,
	// so the MOVED answer is not followed by go-redis: the sink must
	// reload the slot map and report a retryable error, and the next
	// attempt must read the record from b.
	keys, _, err := ca.Scan(ctx, 0, "cl:user*", 100).Result()
	must(err)
	if len(keys) == 0 {
		t.Fatalf("no record on %s", a)
	}
	key := keys[0]
	migrateSlot(t, ca, cb, key)
	if n, _ := cb.Exists(ctx, key).Result(); n != 1 {
		t.Fatalf("%s not on %s after the migration", key, b)
	}
	read := &sources.Batch{Fields: c.Fields, FieldLength: c.FieldLength, Keys: []byte(key),
		Ops: []sources.KVOp{{Op: sources.OpRead, Field: -1, KeyLen: uint32(len(key))}}}
	var lastErr error
	for attempt := 0; ; attempt++ {
		_, lastErr = s.Write(ctx, read)
		if lastErr == nil {
			t.Logf("read of %s after the migration succeeded at attempt %d", key, attempt+1)
			break
		}
		if ok, _ := sinks.Retryable(lastErr); !ok || errClass(t, lastErr) != sinks.Server {
			t.Fatalf("read after the migration: %v, want a retryable server error", lastErr)
		}
		if attempt == 50 {
			t.Fatalf("reads did not recover from the slot move: %v", lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := s.Misses(); m != 0 {
		t.Errorf("%d misses after the migration", m)
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

// migrateSlot moves the slot of key, with its keys, from node from to node
// to, as redis-cli --cluster reshard does.
func migrateSlot(t *testing.T, from, to *goredis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	slot, err := from.ClusterKeySlot(ctx, key).Result()
	must(err)
	fromID, err := from.ClusterMyID(ctx).Result()
	must(err)
	toID, err := to.ClusterMyID(ctx).Result()
	must(err)
	must(to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err())
	must(from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err())
	host, port, _ := strings.Cut(to.Options().Addr, ":")
	for {
		keys, err := from.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(from.Do(ctx, args...).Err())
	}
	must(to.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err())
	must(from.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err())
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
	s := open(t, "redis-sentinel://"+addr+"/mymaster/0", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString, KeyPrefix: "sn:"}})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	runLoad(t, src, s, 2)
	if n, _ := admin(t, master).DBSize(context.Background()).Result(); n != 500+1 {
		t.Fatalf("master holds %d keys after loading 500 records through the sentinel", n)
	}
	u := "redis-sentinel://" + addr + "/othermaster"
	bad := open(t, u, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString}})
	if err := bad.Ping(context.Background()); err == nil {
		t.Fatalf("ping of an unknown master through %s succeeded", u)
	}
}

// A redis-cluster:// or redis-sentinel:// URL to a single Redis is a
// configuration error saying what the server is and to use redis://,
// not the server's "cluster support disabled" or "unknown command
// 'sentinel'" read as a refusal of the database or the credentials.
func TestSingleRedisAsClusterOrSentinel(t *testing.T) {
	plain := testserver.Redis(t)
	shape := sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "mode:"}}
	for _, tc := range []struct{ raw, want string }{
		{"redis-cluster://" + plain.Addr, "is a single Redis, not a Redis Cluster (its cluster support is disabled): use redis:// rather than redis-cluster://"},
		{"redis-sentinel://" + plain.Addr + "/mymaster/0", "is a single Redis, not a sentinel: use redis://"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := open(t, tc.raw, shape).Ping(ctx)
		cancel()
		if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), plain.Addr) {
			t.Errorf("Ping(%s) = %v; want a rejected protocol mismatch naming %s and saying %q", tc.raw, err, plain.Addr, tc.want)
		}
	}
	if err := open(t, "redis://"+plain.Addr+"/0", shape).Ping(t.Context()); err != nil {
		t.Errorf("redis:// to the same server: %v", err)
	}
}

// A redis:// URL to a node of a Redis Cluster is a configuration error
// saying what the server is and to use redis-cluster://, not a MOVED
// reply read as a refusal of what the target holds, nor a SELECT refused
// as a wrong database; a cluster that serves no slot says to assign them,
// through either scheme, and stays a server error, retried.
func TestClusterNodeAsSingle(t *testing.T) {
	a, _, _, _ := twoNodeCluster(t)
	bare := clusterNode(t) // cluster mode, no slot assigned
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 200, "cn:"
	src := source(t, c)
	_, probe, _ := src.Preload()
	pb := src.NewBatch()
	probe(pb)
	shape := sinks.Options{Shape: src.Shape()}
	ctx := t.Context()

	_, err := open(t, "redis://"+a+"/0", shape).Present(ctx, pb)
	if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) ||
		!strings.Contains(err.Error(), "the server at "+a+" is a node of a Redis Cluster (it answered MOVED") ||
		!strings.Contains(err.Error(), "use redis-cluster:// with its address, or those of its masters, rather than redis://") {
		t.Errorf("Present through redis:// to a cluster node = %v; want a rejected protocol mismatch saying to use redis-cluster://", err)
	}
	err = open(t, "redis://"+a+"/3", shape).Ping(ctx)
	if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) ||
		!strings.Contains(err.Error(), "is a node of a Redis Cluster (it has database 0 only") ||
		!strings.Contains(err.Error(), "rather than redis://") {
		t.Errorf("Ping of redis://%s/3 = %v; want a rejected protocol mismatch saying to use redis-cluster://", a, err)
	}

	_, err = open(t, "redis://"+bare+"/0", shape).Present(ctx, pb)
	if ok, _ := sinks.Retryable(err); !ok || sinks.ClassOf(err) != sinks.Server ||
		!strings.Contains(err.Error(), "CLUSTER ADDSLOTSRANGE 0 16383") || !strings.Contains(err.Error(), "use redis-cluster:// rather than redis://") {
		t.Errorf("Present through redis:// to a node without slots = %v; want a retryable server error saying to assign the slots", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = open(t, "redis-cluster://"+bare, shape).Ping(pctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "CLUSTER ADDSLOTSRANGE 0 16383") || strings.Contains(err.Error(), "rather than") {
		t.Errorf("Ping of redis-cluster:// to a node without slots = %v; want it to say to assign the slots", err)
	}
}

// A cluster's URL may name database 0, the one it has, as a path or db=:
// the sink writes through it as without.
func TestClusterDatabaseZero(t *testing.T) {
	a, b, _, _ := twoNodeCluster(t)
	shape := sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "z:"}}
	for _, raw := range []string{"redis-cluster://" + a + "," + b + "/0", "redis-cluster://" + a + "?db=0&addr=" + b} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseURL(u); err != nil {
			t.Errorf("ParseURL(%s): %v", raw, err)
			continue
		}
		s := open(t, raw, shape)
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping(%s): %v", raw, err)
		}
		_, batch := insertBatch(t)
		if _, err := s.Write(t.Context(), batch); err != nil {
			t.Errorf("Write through %s: %v", raw, err)
		}
	}
}

// Records stored without the scan index (a run with index=false, an
// index deleted) are missing to a workload that scans: its scans would
// read the next records the index holds instead, counted done. The load
// probe counts them missing, so LOAD=auto loads them with the index; on
// one server and through a cluster.
func TestProbeFindsRecordsOutsideTheIndex(t *testing.T) {
	srv := testserver.Redis(t)
	ca, cb, _, _ := twoNodeCluster(t)
	for _, tc := range []struct{ name, url string }{
		{"single", srv.URL},
		{"cluster", "redis-cluster://" + ca + "," + cb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			c := kv.DefaultConfig()
			c.Records, c.KeyPrefix = 300, "ix"+tc.name+":"
			c.Workload, _ = kv.ParseWorkload("a")
			plain := source(t, c)
			sep := "?"
			if strings.Contains(tc.url, "?") {
				sep = "&"
			}
			runLoad(t, plain, open(t, tc.url+sep+"index=false", sinks.Options{Shape: plain.Shape()}), 2)

			c.Workload, _ = kv.ParseWorkload("e")
			scans := source(t, c)
			s := open(t, tc.url, sinks.Options{Shape: scans.Shape()})
			_, probe, _ := scans.Preload()
			pb := scans.NewBatch()
			probe(pb)
			if n, err := s.Present(ctx, pb); err != nil || n != 0 {
				t.Errorf("Present without an index = %d of %d, %v; want 0", n, len(pb.Ops), err)
			}
			// An index that holds other records only.
			if err := s.c.(interface {
				ZAdd(context.Context, string, ...goredis.Z) *goredis.IntCmd
			}).ZAdd(ctx, c.KeyPrefix+"_indices", goredis.Z{Score: 1e9, Member: c.KeyPrefix + "other"}).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Present(ctx, pb); err != nil || n != 0 {
				t.Errorf("Present with an index of other records = %d of %d, %v; want 0", n, len(pb.Ops), err)
			}
			// A workload that does not scan needs no index.
			if n, err := open(t, tc.url, sinks.Options{Shape: plain.Shape()}).Present(ctx, pb); err != nil || n != len(pb.Ops) {
				t.Errorf("Present for a workload without scans = %d of %d, %v; want all", n, len(pb.Ops), err)
			}
			runLoad(t, scans, s, 2)
			if n, err := s.Present(ctx, pb); err != nil || n != len(pb.Ops) {
				t.Errorf("Present after a load with the index = %d of %d, %v; want all", n, len(pb.Ops), err)
			}
		})
	}
}

// A scan whose first record the index lacks (stored with index=false,
// LOAD=off) fails as empty, as a read of a missing record does, rather
// than reading the records after it as if it were there; once loaded with
// the index, the same scans succeed. On one server (the keys read raw)
// and through a cluster (through go-redis).
func TestScanOutsideTheIndexMisses(t *testing.T) {
	srv := testserver.Redis(t)
	ca, cb, _, _ := twoNodeCluster(t)
	for _, tc := range []struct{ name, url string }{
		{"single", srv.URL},
		{"cluster", "redis-cluster://" + ca + "," + cb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			c := kv.DefaultConfig()
			c.Records, c.KeyPrefix, c.ScanLength = 300, "sx"+tc.name+":", 5
			c.Workload, _ = kv.ParseWorkload("a")
			plain := source(t, c)
			sep := "?"
			if strings.Contains(tc.url, "?") {
				sep = "&"
			}
			runLoad(t, plain, open(t, tc.url+sep+"index=false", sinks.Options{Shape: plain.Shape()}), 2)
			// An index with one record only, the last: every scan finds it.
			c.Workload, _ = kv.ParseWorkload("scan=1")
			scans := source(t, c)
			s := open(t, tc.url, sinks.Options{Shape: scans.Shape()})
			st, err := scans.Stream(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			b := scans.NewBatch()
			_ = st.Fill(b, 20, 0)
			var last string
			var lastRecord uint64
			for i := range b.Ops {
				if b.Ops[i].Record >= lastRecord {
					last, lastRecord = string(b.Key(&b.Ops[i])), b.Ops[i].Record
				}
			}
			if err := s.c.(interface {
				ZAdd(context.Context, string, ...goredis.Z) *goredis.IntCmd
			}).ZAdd(ctx, c.KeyPrefix+"_indices", goredis.Z{Score: float64(lastRecord), Member: last}).Err(); err != nil {
				t.Fatal(err)
			}
			_, err = s.Write(ctx, b)
			var ue *sinks.UnitsError
			want := 0
			for i := range b.Ops {
				if b.Ops[i].Record != lastRecord {
					want++
				}
			}
			if !errors.As(err, &ue) || errClass(t, err) != sinks.Empty || len(ue.Units) != want ||
				!strings.Contains(err.Error(), "scan index \""+c.KeyPrefix+"_indices\"") {
				t.Fatalf("scans of records outside the index = %v; want %d of %d failed as empty, naming the index", err, want, len(b.Ops))
			}
			runLoad(t, scans, s, 2)
			if _, err := s.Write(ctx, b); err != nil {
				t.Errorf("scans after a load with the index: %v", err)
			}
		})
	}
}

// A cluster node announced at an address soakd cannot reach (a cluster
// in Docker or behind NAT: cluster-announce-ip) fails the dial to an
// address the URL never named: the error says where it comes from and
// what to change. A seed of the URL that is down, named by host name,
// is not such a node.
func TestClusterAnnouncedAddressUnreachable(t *testing.T) {
	a, b, ca, cb := twoNodeCluster(t)
	ctx := t.Context()
	if err := cb.ConfigSet(ctx, "cluster-announce-ip", "127.0.0.2").Err(); err != nil {
		t.Fatal(err)
	}
	_, bport, _ := strings.Cut(b, ":")
	announced := "127.0.0.2:" + bport
	deadline := time.Now().Add(20 * time.Second)
	for {
		slots, _ := ca.Do(ctx, "CLUSTER", "SLOTS").Result() // what cluster clients read, as soakd's does
		if strings.Contains(fmt.Sprint(slots), "127.0.0.2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not announce 127.0.0.2 after 20s: %v", b, slots)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 200, "an:"
	src := source(t, c)
	_, probe, _ := src.Preload()
	pb := src.NewBatch()
	probe(pb)
	const hint = "is a node of the cluster at the address it announces (CLUSTER SLOTS), not an address of the target URL"
	var err error
	for range 20 { // go-redis may first answer with a timeout of its own
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = open(t, "redis-cluster://"+a, sinks.Options{Shape: src.Shape()}).Present(pctx, pb)
		cancel()
		if strings.Contains(fmt.Sprint(err), announced) {
			break
		}
	}
	if !strings.Contains(fmt.Sprint(err), announced+" "+hint) || !strings.Contains(err.Error(), "cluster-announce-ip") {
		t.Errorf("Present with %s announced at %s = %v; want it to say the address is announced", b, announced, err)
	}

	down := "localhost:" + strconv.Itoa(testserver.ClosedPort(t))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = open(t, "redis-cluster://"+down, sinks.Options{Shape: src.Shape()}).Ping(pctx)
	cancel()
	if err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("Ping of redis-cluster://%s, down = %v; want a failure without the announced-address hint", down, err)
	}
}
