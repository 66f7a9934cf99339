package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, rawURL string, o sinks.Options) *Sink {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if o.Workers == 0 {
		o.Workers = 4
	}
	s, err := Open(context.Background(), u, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", rawURL, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*Sink)
}

// admin is a plain go-redis client to check what the sink stored.
func admin(t testing.TB, srv *testserver.Server) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func source(t testing.TB, c kv.Config) *kv.Source {
	t.Helper()
	src, err := kv.New(c, 1, sources.Shard{Index: 0, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	return src.(*kv.Source)
}

// runLoad writes the whole load phase of src through s with workers
// goroutines and returns the records written.
func runLoad(t testing.TB, src *kv.Source, s *Sink, workers int) int64 {
	t.Helper()
	load, _, err := src.Preload()
	if err != nil || load == nil {
		t.Fatalf("Preload: %v, %v", load, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int64
	for w := range workers {
		st, err := load.Stream(w, workers)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			b := src.NewBatch()
			for {
				b.Reset()
				ferr := st.Fill(b, 50, 0)
				if _, err := s.Write(context.Background(), b); err != nil {
					t.Errorf("load write: %v", err)
					return
				}
				mu.Lock()
				n += int64(len(b.Ops))
				mu.Unlock()
				if errors.Is(ferr, sources.ErrDone) {
					return
				}
			}
		})
	}
	wg.Wait()
	return n
}

// runOps runs n ops of src's workload through s in batches of pipeline.
func runOps(t testing.TB, src *kv.Source, s *Sink, n, pipeline int) [sources.NumOps]int {
	t.Helper()
	st, err := src.Stream(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var count [sources.NumOps]int
	b := src.NewBatch()
	for done := 0; done < n; done += pipeline {
		b.Reset()
		_ = st.Fill(b, pipeline, 0)
		if _, err := s.Write(context.Background(), b); err != nil {
			t.Fatalf("Write: %v", err)
		}
		for _, op := range b.Ops {
			count[op.Op]++
		}
	}
	return count
}

// checkRecords checks that every key of the data set holds fields values
// of fieldLen bytes, read with the data type's own commands.
func checkRecords(t *testing.T, a *goredis.Client, dt sources.DataType, prefix string, fields, fieldLen int) int {
	t.Helper()
	ctx := context.Background()
	keys, err := a.Keys(ctx, prefix+"user*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		var vals []string
		switch dt {
		case sources.DataTypeString:
			v, err := a.Get(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != fields*fieldLen {
				t.Fatalf("%s: string of %d bytes, want %d", k, len(v), fields*fieldLen)
			}
			for i := range fields {
				vals = append(vals, v[i*fieldLen:(i+1)*fieldLen])
			}
		case sources.DataTypeHash:
			m, err := a.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			for i := range fields {
				v, ok := m["field"+strconv.Itoa(i)]
				if !ok {
					t.Fatalf("%s: no field%d in %v", k, i, m)
				}
				vals = append(vals, v)
			}
			if len(m) != fields {
				t.Fatalf("%s: %d fields, want %d", k, len(m), fields)
			}
		case sources.DataTypeSet:
			vals, err = a.SMembers(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
		case sources.DataTypeZSet:
			zs, err := a.ZRangeWithScores(ctx, k, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for i, z := range zs {
				if z.Score != float64(i) {
					t.Fatalf("%s: member %d has score %v, want %d", k, i, z.Score, i)
				}
				vals = append(vals, z.Member.(string))
			}
		}
		if len(vals) != fields {
			t.Fatalf("%s (%s): %d fields, want %d", k, dt, len(vals), fields)
		}
		for _, v := range vals {
			if len(v) != fieldLen {
				t.Fatalf("%s: field of %d bytes, want %d", k, len(v), fieldLen)
			}
		}
	}
	return len(keys)
}

func TestDataTypes(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	for _, dt := range []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet} {
		t.Run(string(dt), func(t *testing.T) {
			prefix := "dt-" + string(dt) + ":"
			c := kv.DefaultConfig()
			c.Records, c.Fields, c.FieldLength = 300, 5, 17
			c.KeyPrefix = prefix
			c.Workload, _ = kv.ParseWorkload("read=0.3,update=0.2,insert=0.1,scan=0.1,rmw=0.3")
			c.Distribution = kv.Uniform
			src := source(t, c)
			s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: dt, KeyPrefix: prefix}})
			if n := runLoad(t, src, s, 3); n != 300 {
				t.Fatalf("load wrote %d records", n)
			}
			if n := checkRecords(t, a, dt, prefix, 5, 17); n != 300 {
				t.Fatalf("%d records stored after the load, want 300", n)
			}
			if n, _ := a.ZCard(ctx, prefix+"_indices").Result(); n != 300 {
				t.Fatalf("scan index has %d keys, want 300", n)
			}
			count := runOps(t, src, s, 4000, 16)
			// Updates of one field and read-modify-writes keep FIELDS values.
			stored := checkRecords(t, a, dt, prefix, 5, 17)
			if stored != 300+count[sources.OpInsert] {
				t.Fatalf("%d records after %d inserts, want %d", stored, count[sources.OpInsert], 300+count[sources.OpInsert])
			}
			if m := s.Misses(); m != 0 {
				t.Errorf("%d reads found no record", m)
			}
			// Every read and write of all fields too.
			c.ReadAll, c.WriteAll = false, true
			runOps(t, source(t, c), s, 1000, 16)
			checkRecords(t, a, dt, prefix, 5, 17)
		})
	}
}

func TestLoadAutoExactRecords(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 5000, "load:"
	src := source(t, c)
	s := open(t, srv.URL+"?index=false", sinks.Options{Shape: src.Shape(), Workers: 8})
	_, probe, _ := src.Preload()
	b := src.NewBatch()
	probe(b)
	sinktest.Probe(t, s, b, 0) // before the load
	runLoad(t, src, s, 8)
	if n, err := a.DBSize(context.Background()).Result(); err != nil || n != 5000 {
		t.Fatalf("DBSIZE = %d, %v after loading 5000 records", n, err)
	}
	if len(b.Ops) != 1000 {
		t.Fatalf("the probe batch reads %d keys, want 1000", len(b.Ops))
	}
	sinktest.Probe(t, s, b, 1000) // after the load: every key
}

// Records of another type under the prefix make Present fail with a
// DATA_TYPE setting error that says what it found and how to fix it;
// records of the sink's own type are counted.
func TestPresentChecksType(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	types := []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet}
	for i, stored := range types {
		prefix := "pt-" + string(stored) + ":"
		c := kv.DefaultConfig()
		c.Records, c.KeyPrefix, c.DataType = 100, prefix, stored
		src := source(t, c)
		runLoad(t, src, open(t, srv.URL, sinks.Options{Shape: src.Shape()}), 2)
		_, probe, _ := src.Preload()
		b := src.NewBatch()
		probe(b)
		want := types[(i+1)%len(types)]
		t.Run(string(stored)+" as "+string(want), func(t *testing.T) {
			sinktest.Probe(t, open(t, srv.URL, sinks.Options{Shape: src.Shape()}), b, 100)
			keys, _ := a.DBSize(ctx).Result()
			sinktest.ProbeRefused(t, open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: want, KeyPrefix: prefix}}), b, "DATA_TYPE",
				`KEY_PREFIX "`+prefix+`"`, srv.URL, "100 of the 100 keys probed hold a "+string(stored),
				"DATA_TYPE="+string(want)+" stores a "+string(want), "WRONGTYPE", "use another KEY_PREFIX",
				"set DATA_TYPE="+string(stored), "?cleanup=true", "--pattern '"+prefix+"*'")
			if after, _ := a.DBSize(ctx).Result(); after != keys {
				t.Errorf("DBSIZE %d after Present, was %d", after, keys)
			}
		})
	}

	// A type no DATA_TYPE stores, under an empty KEY_PREFIX: nothing to
	// delete by prefix, so the error suggests a KEY_PREFIX only.
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 3, ""
	src := source(t, c)
	_, probe, _ := src.Preload()
	b := src.NewBatch()
	probe(b)
	if err := a.RPush(ctx, string(b.Key(&b.Ops[1])), "x").Err(); err != nil {
		t.Fatal(err)
	}
	err := sinktest.ProbeRefused(t, open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}}), b, "DATA_TYPE",
		"1 of the 3 keys probed hold a list", "set a KEY_PREFIX")
	if strings.Contains(err.Error(), "set DATA_TYPE") || strings.Contains(err.Error(), "cleanup") {
		t.Fatalf("a list under no prefix: %v", err)
	}

	// The scan index's key of another type: every insert would fail on
	// it though its record is stored. Refused naming KEY_PREFIX; with
	// index=false it is not the sink's. Bug caught: a load counted 2,000
	// inserts failed that had all been stored.
	c.Records, c.KeyPrefix = 3, "ix:"
	src = source(t, c)
	_, probe, _ = src.Preload()
	b = src.NewBatch()
	probe(b)
	if err := a.Set(ctx, "ix:_indices", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sinktest.ProbeRefused(t, open(t, srv.URL, sinks.Options{Shape: src.Shape()}), b, "KEY_PREFIX",
		`the scan index key "ix:_indices"`, "holds a string", "index=false")
	sinktest.Probe(t, open(t, srv.URL+"?index=false", sinks.Options{Shape: src.Shape()}), b, 0)
}

func TestWorkloadKeysAndMisses(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 1000, "m:"
	c.Workload, _ = kv.ParseWorkload("c")
	src := source(t, c)
	core, logs := observer.New(zap.InfoLevel)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString, KeyPrefix: "m:"}, Logger: zap.New(core)})
	st, err := src.Stream(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := src.NewBatch()
	for range 50 {
		b.Reset()
		_ = st.Fill(b, 16, 0)
		_, err := s.Write(context.Background(), b)
		if errClass(t, err) != sinks.Empty || !slices.Equal(sinks.FailedUnits(err), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
			t.Fatalf("16 reads of an empty database: %v, failed units %v", err, sinks.FailedUnits(err))
		}
	}
	if m := s.Misses(); m != 800 {
		t.Fatalf("%d misses reading an empty database 800 times", m)
	}
	if n, _ := a.DBSize(context.Background()).Result(); n != 0 {
		t.Fatalf("reads created %d keys", n)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	logged := logs.FilterMessage("redis reads found no record").All()
	if len(logged) != 1 || logged[0].ContextMap()["misses"] != int64(800) {
		t.Fatalf("Close logged %+v, want one line with the 800 misses", logs.All())
	}
}

// A read or scan of a loaded record that is gone fails as Empty, naming
// exactly those operations of the batch; the batch's other operations,
// which found their records, are not in the error.
func TestMissingRecordsFailAsEmpty(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	for _, dt := range []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet} {
		for _, all := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/readall=%v", dt, all), func(t *testing.T) {
				prefix := fmt.Sprintf("miss-%s-%v:", dt, all)
				c := kv.DefaultConfig()
				c.Records, c.Fields, c.FieldLength, c.KeyPrefix, c.ReadAll = 200, 3, 8, prefix, all
				c.Workload, _ = kv.ParseWorkload("read=0.7,scan=0.3")
				c.Distribution = kv.Uniform
				c.ScanLength = 3
				src := source(t, c)
				s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: dt, KeyPrefix: prefix}})
				runLoad(t, src, s, 2)
				st, err := src.Stream(0, 1)
				if err != nil {
					t.Fatal(err)
				}
				b := src.NewBatch()
				_ = st.Fill(b, 40, 0)
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatalf("every record is there: %v", err)
				}
				// Delete the records of every third read; a scan misses when
				// one of the keys the index gives it is gone.
				gone := map[string]bool{}
				for i := 0; i < len(b.Ops); i += 3 {
					if b.Ops[i].Op == sources.OpRead {
						k := string(b.Key(&b.Ops[i]))
						gone[k] = true
						if err := a.Del(ctx, k).Err(); err != nil {
							t.Fatal(err)
						}
					}
				}
				var want []int
				for i := range b.Ops {
					op := &b.Ops[i]
					keys := []string{string(b.Key(op))}
					if op.Op == sources.OpScan {
						keys, err = a.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: prefix + "_indices", ByScore: true,
							Start: op.Record, Stop: "+inf", Count: int64(op.ScanLen)}).Result()
						if err != nil {
							t.Fatal(err)
						}
					}
					for _, k := range keys {
						if gone[k] {
							want = append(want, i)
							break
						}
					}
				}
				_, err = s.Write(ctx, b)
				if len(want) == 0 || errClass(t, err) != sinks.Empty || !slices.Equal(sinks.FailedUnits(err), want) {
					t.Fatalf("Write: %v, failed units %v, want %v", err, sinks.FailedUnits(err), want)
				}
			})
		}
	}
}

func errClass(t *testing.T, err error) sinks.Class {
	t.Helper()
	var se *sinks.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *sinks.Error", err)
	}
	return se.Class
}

func insertBatch(t testing.TB) (*kv.Source, *sources.Batch) {
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 10, "e:"
	src := source(t, c)
	load, _, _ := src.Preload()
	st, _ := load.Stream(0, 1)
	b := src.NewBatch()
	_ = st.Fill(b, 10, 0)
	return src, b
}

func TestErrorClasses(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	_, b := insertBatch(t)

	// WRONGTYPE: the key holds a list.
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "e:"}})
	a.RPush(ctx, string(b.Key(&b.Ops[3])), "x")
	_, err := s.Write(ctx, b)
	if err == nil || errClass(t, err) != sinks.Rejected || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("write over a list: %v, want rejected WRONGTYPE", err)
	}
	if ok, _ := sinks.Retryable(err); ok {
		t.Error("WRONGTYPE marked retryable")
	}
	a.FlushAll(ctx)

	// OOM with maxmemory and noeviction.
	a.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	a.ConfigSet(ctx, "maxmemory", "1")
	_, err = s.Write(ctx, b)
	if err == nil || errClass(t, err) != sinks.Rejected || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("write over maxmemory: %v, want rejected OOM", err)
	}
	a.ConfigSet(ctx, "maxmemory", "0")

	// NOAUTH, then the password from Options works.
	a.ConfigSet(ctx, "requirepass", "s3cret")
	defer func() {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Password: "s3cret", Protocol: 2, DisableIdentity: true})
		c.ConfigSet(ctx, "requirepass", "")
		c.Close()
	}()
	noauth := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	_, err = noauth.Write(ctx, b)
	if err == nil || errClass(t, err) != sinks.Rejected {
		t.Fatalf("write without a password: %v, want rejected", err)
	}
	// A wrong password in the URL is refused and never shown. (Not
	// "WRONG": the server's WRONGPASS reply holds that.)
	const wrong = "n0t-the-pa55word"
	bad := open(t, "redis://default:"+wrong+"@"+srv.Addr, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	_, werr := bad.Write(ctx, b)
	perr := bad.Ping(ctx)
	for _, err := range []error{werr, perr} {
		if err == nil || errClass(t, err) != sinks.Rejected {
			t.Fatalf("wrong password: %v, want rejected", err)
		}
		if strings.Contains(err.Error(), wrong) {
			t.Fatalf("error shows the password: %v", err)
		}
	}
	withpw := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}, Password: "s3cret"})
	if _, err := withpw.Write(ctx, b); err != nil {
		t.Fatalf("write with Options.Password: %v", err)
	}
	acl := open(t, "redis://default:s3cret@"+srv.Addr, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	if err := acl.Ping(ctx); err != nil {
		t.Fatalf("ping with user:password in the URL: %v", err)
	}
}

// A user whose ACL refuses the workload's keys or one of its commands
// (NOPERM) is refused, not retried, with what to change: the reply names
// neither the keys nor a setting.
func TestACLRefusals(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	_, b := insertBatch(t)
	for _, user := range [][]string{{"otherkeys", "~app:*", "+@all"}, {"nohset", "~acl:*", "+@all", "-hset"}} {
		if err := a.Do(ctx, append([]any{"ACL", "SETUSER", user[0], "on", ">pw"}, toAny(user[1:])...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ user, want string }{
		{"otherkeys", "the URL's user may not use this workload's keys: allow them in its ACL (~acl:*, which holds the scan index acl:_indices too), or set KEY_PREFIX to a prefix it may use"},
		{"nohset", "'hset' command (the URL's user may not run a command soakd sends: allow it in its ACL, e.g. +@read +@write, or connect as another user)"},
	} {
		s := open(t, "redis://"+tc.user+":pw@"+srv.Addr, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "acl:"}})
		_, err := s.Write(ctx, b)
		if retry, _ := sinks.Retryable(err); err == nil || errClass(t, err) != sinks.Rejected || retry || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("user %s: %v, want rejected, not retried, with %q", tc.user, err, tc.want)
		}
	}
}

// The NOPERM hint's key pattern escapes the glob characters of a
// KEY_PREFIX: given to ACL SETUSER as it is written, it lets the user
// write the workload's keys and no others. Bug caught: "~a*b[?*" matched
// none of the keys of prefix "a*b[?" (an unclosed bracket).
func TestACLHintPatternGrantsTheKeys(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := t.Context()
	const prefix = "a*b[?"
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 10, prefix
	src := source(t, c)
	load, _, _ := src.Preload()
	st, _ := load.Stream(0, 1)
	b := src.NewBatch()
	_ = st.Fill(b, 10, 0)
	if err := a.Do(ctx, "ACL", "SETUSER", "globby", "on", ">pw", "+@all", "~other:*").Err(); err != nil {
		t.Fatal(err)
	}
	s := open(t, "redis://globby:pw@"+srv.Addr, sinks.Options{Shape: src.Shape()})
	_, err := s.Write(ctx, b)
	m := regexp.MustCompile(`allow them in its ACL \((~\S+), which holds`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("write as a user without the keys: %v; want the NOPERM hint with a key pattern", err)
	}
	if err := a.Do(ctx, "ACL", "SETUSER", "globby", "resetkeys", m[1]).Err(); err != nil {
		t.Fatalf("ACL SETUSER globby resetkeys %s: %v", m[1], err)
	}
	if _, err := s.Write(ctx, b); err != nil {
		t.Errorf("write after ACL SETUSER globby resetkeys %s: %v", m[1], err)
	}
	u := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Username: "globby", Password: "pw", Protocol: 2, DisableIdentity: true})
	defer u.Close()
	if err := u.Set(ctx, "aXb[?user1", "x", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("with %s a key outside the prefix was written: %v", m[1], err)
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// A server at its maxclients answers a new connection with "max number
// of clients reached" and closes it: that is the error, a server error
// worth retrying, with a password or without. Bug caught: the reply was
// taken for a server without HELLO, so the write after it failed with
// "connection reset by peer" or "broken pipe", the reason never shown.
func TestMaxClientsReached(t *testing.T) {
	for _, pw := range []string{"", "s3cret"} {
		t.Run(map[bool]string{true: "password", false: "no password"}[pw != ""], func(t *testing.T) {
			args := []string{"--maxclients", "1"}
			if pw != "" {
				args = append(args, "--requirepass", pw)
			}
			srv := testserver.Redis(t, args...)
			// The one client the server takes, held to the test's end.
			held, err := net.Dial("tcp", srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if _, err := held.Write([]byte("PING\r\n")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if n, err := held.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "+PONG") && !strings.HasPrefix(string(buf[:n]), "-NOAUTH") {
				t.Fatalf("the held connection: %q, %v", buf[:n], err)
			}
			_, b := insertBatch(t)
			s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "mc:"}, Password: pw})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for name, err := range map[string]error{"ping": s.Ping(ctx), "write": func() error { _, err := s.Write(ctx, b); return err }()} {
				retry, _ := sinks.Retryable(err)
				if err == nil || !strings.Contains(err.Error(), "max number of clients reached") || errClass(t, err) != sinks.Server || !retry {
					t.Errorf("%s at maxclients: %v, want a server error saying max number of clients reached, retried", name, err)
				}
				if err != nil && !strings.Contains(err.Error(), "WORKERS=4, and a few for readiness and the target watch, beside other clients; raise maxclients or lower WORKERS") {
					t.Errorf("%s at maxclients: %v, want the setting to raise or lower", name, err)
				}
			}
			// One worker (soakd verify's reads): nothing to lower.
			one := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "mc:"}, Password: pw, Workers: 1})
			if err := one.Ping(ctx); err == nil || !strings.HasSuffix(err.Error(), "WORKERS=1, and a few for readiness and the target watch, beside other clients; raise maxclients)") {
				t.Errorf("ping of one worker at maxclients: %v, want only maxclients to raise", err)
			}
		})
	}
}

func TestServerDownAndBack(t *testing.T) {
	srv := testserver.Redis(t)
	ctx := context.Background()
	_, b := insertBatch(t)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}, Workers: 2})
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	srv.StopKeep()
	_, err := s.Write(ctx, b)
	if err == nil || errClass(t, err) != sinks.Connection {
		t.Fatalf("write to a stopped server: %v, want connection", err)
	}
	if ok, _ := sinks.Retryable(err); !ok {
		t.Error("connection error not retryable")
	}
	if s.Ping(ctx) == nil {
		t.Error("Ping of a stopped server succeeded")
	}
	srv.Resume(t)
	var lastErr error
	for range 50 { // the client reconnects on its own
		if _, lastErr = s.Write(ctx, b); lastErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("writes did not resume after the server came back: %v", lastErr)
	}
}

func TestStalledServerRespectsContext(t *testing.T) {
	srv := testserver.Redis(t)
	_, b := insertBatch(t)
	// read_timeout=1m is what would end the write without the context:
	// the bound is half of it, not 300 ms plus a margin a loaded machine
	// can exceed.
	s := open(t, srv.URL+"?read_timeout=1m", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer srv.Signal(syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Write(ctx, b)
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("Write took %v with a 300ms deadline (read_timeout 1m)", took)
	}
	if err == nil || errClass(t, err) != sinks.Timeout {
		t.Fatalf("write to a stopped server: %v, want timeout", err)
	}
}

// TestStalledServerCancel: a write or ping cancelled (no deadline, as at
// the engine's shutdown) while the server is stopped ends at once instead
// of waiting for read_timeout, and a write whose context is already done
// sends nothing.
func TestStalledServerCancel(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	_, b := insertBatch(t)
	// read_timeout=1m: what would end a call that ignored the
	// cancellation; the bound below is half of it.
	s := open(t, srv.URL+"?read_timeout=1m", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "e:"}})
	if _, err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	a.FlushDB(context.Background())
	if _, err := s.Write(done, b); errClass(t, err) != sinks.Timeout || !errors.Is(err, context.Canceled) {
		t.Errorf("write with a cancelled context: %v, want a timeout", err)
	}
	if n, _ := a.DBSize(context.Background()).Result(); n != 0 {
		t.Errorf("a write with a cancelled context stored %d keys", n)
	}

	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := sync.OnceFunc(func() { _ = srv.Signal(syscall.SIGCONT) })
	defer cont()
	for _, op := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"write", func(ctx context.Context) error { _, err := s.Write(ctx, b); return err }},
		{"ping", s.Ping},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		err := op.do(ctx)
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("%s cancelled after 200ms took %v (read_timeout is 1m)", op.name, took)
		}
		if err == nil || errClass(t, err) != sinks.Timeout || !errors.Is(err, context.Canceled) {
			t.Errorf("%s to a stopped server, cancelled: %v, want a timeout", op.name, err)
		}
		cancel()
	}
	cont()
	// The interrupted connection is replaced.
	if _, err := s.Write(context.Background(), b); err != nil {
		t.Fatalf("write after the server resumed: %v", err)
	}
}

func TestCleanup(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	a.Set(ctx, "other:user1", "keep", 0)
	a.Set(ctx, "cl*user1", "keep", 0) // a glob character in another prefix
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 2500, "cl:"
	src := source(t, c)
	s := open(t, srv.URL+"?cleanup=true", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeSet, KeyPrefix: "cl:"}})
	runLoad(t, src, s, 2)
	if n, _ := a.DBSize(ctx).Result(); n != 2500+1+2 {
		t.Fatalf("DBSIZE %d before cleanup", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.DBSize(ctx).Result(); n != 2 {
		t.Fatalf("DBSIZE %d after cleanup, want the 2 other keys", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	u, _ := url.Parse(srv.URL + "?cleanup=true")
	if _, err := Open(ctx, u, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeSet}}); err == nil || !strings.Contains(err.Error(), "KEY_PREFIX") {
		t.Fatalf("cleanup without a prefix: %v", err)
	}
}

func BenchmarkWrite(b *testing.B) {
	srv := testserver.Redis(b)
	for _, tc := range []struct {
		name, workload string
		dt             sources.DataType
		fields         int
		oneField       bool // updates write one field (inserts write all)
	}{
		{"set-1x100", "update=1", sources.DataTypeString, 1, false},
		{"get-1x100", "read=1", sources.DataTypeString, 1, false},
		{"ycsb-a-hash-10x100", "a", sources.DataTypeHash, 10, false},
		{"ycsb-c-hash-10x100", "c", sources.DataTypeHash, 10, false},
		// One-field updates and all-field inserts of the same command in
		// one batch.
		{"mixed-hash-10x100", "read=0.5,update=0.3,insert=0.2", sources.DataTypeHash, 10, true},
		{"mixed-set-10x100", "read=0.5,update=0.3,insert=0.2", sources.DataTypeSet, 10, true},
		{"mixed-zset-10x100", "read=0.5,update=0.3,insert=0.2", sources.DataTypeZSet, 10, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := kv.DefaultConfig()
			c.Records, c.Fields, c.FieldLength, c.KeyPrefix = 10000, tc.fields, 100, "bench-"+tc.name+":"
			c.Workload, _ = kv.ParseWorkload(tc.workload)
			c.Distribution = kv.Uniform
			c.WriteAll = !tc.oneField
			src := source(b, c)
			s := open(b, srv.URL+"?index=false", sinks.Options{Shape: sources.KVShape{DataType: tc.dt, KeyPrefix: c.KeyPrefix}})
			runLoad(b, src, s, 2)
			st, _ := src.Stream(0, 1)
			batch := src.NewBatch()
			ctx := context.Background()
			const pipeline = 16
			b.ReportAllocs()
			for b.Loop() {
				batch.Reset()
				_ = st.Fill(batch, pipeline, 0)
				if _, err := s.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pipeline), "ns/kvop")
		})
	}
}

// cpuTime is the CPU time (user + system) this process has used: the
// client side of a benchmark against a server in another process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParallel drives the sink closed-loop from 50 goroutines (25 per
// CPU on the 2-core test machine), like redis-benchmark -c 50: compare
// its kvops/s with redis-benchmark -c 50 -P N -d 100 against the same
// server (bench/redis.sh does it through the daemon).
func BenchmarkParallel(b *testing.B) {
	srv := testserver.Redis(b)
	for _, tc := range []struct {
		name, workload string
		pipeline       int
		dt             sources.DataType
		fields, par    int
	}{
		{"set-P1", "update=1", 1, sources.DataTypeString, 1, 25}, {"get-P1", "read=1", 1, sources.DataTypeString, 1, 25},
		{"set-P16", "update=1", 16, sources.DataTypeString, 1, 25}, {"get-P16", "read=1", 16, sources.DataTypeString, 1, 25},
		// go-ycsb's workloads a and c (hash, 10 x 100 B, uniform) with 16 threads.
		{"ycsb-a-hash-P1", "a", 1, sources.DataTypeHash, 10, 8}, {"ycsb-c-hash-P1", "c", 1, sources.DataTypeHash, 10, 8},
		{"ycsb-a-hash-P16", "a", 16, sources.DataTypeHash, 10, 8}, {"ycsb-c-hash-P16", "c", 16, sources.DataTypeHash, 10, 8},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := kv.DefaultConfig()
			c.Records, c.Fields, c.FieldLength, c.KeyPrefix = 100000, tc.fields, 100, "par-"+string(tc.dt)+":"
			c.Workload, _ = kv.ParseWorkload(tc.workload)
			c.Distribution = kv.Uniform
			src := source(b, c)
			s := open(b, srv.URL+"?index=false", sinks.Options{Shape: sources.KVShape{DataType: tc.dt, KeyPrefix: c.KeyPrefix}, Workers: 50})
			if b.N == 1 {
				runLoad(b, src, s, 2)
			}
			var part sync.Mutex
			next := 0
			b.SetParallelism(tc.par)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				part.Lock()
				st, _ := src.Stream(next%50, 50)
				next++
				part.Unlock()
				batch := src.NewBatch()
				ctx := context.Background()
				for pb.Next() {
					batch.Reset()
					_ = st.Fill(batch, tc.pipeline, 0)
					if _, err := s.Write(ctx, batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*tc.pipeline)/b.Elapsed().Seconds(), "kvops/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*tc.pipeline), "cpu-ns/kvop")
		})
	}
}

// BenchmarkNaivePipeline is the same SET/GET load as BenchmarkParallel's
// -P16 cases written the plain go-redis way (pipe.Set / pipe.Get, a new
// command and boxed arguments per operation, pooled connections), as the
// baseline for the sink's prepared commands.
func BenchmarkNaivePipeline(b *testing.B) {
	srv := testserver.Redis(b)
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true, PoolSize: 54,
		PipelinePoolSize: -1, MaxRetries: -1})
	defer client.Close()
	val := strings.Repeat("v", 100)
	// The keys of BenchmarkParallel's data set (same count and length).
	c := kv.DefaultConfig()
	c.Records, c.Fields, c.KeyPrefix = 100000, 1, "par-string:"
	load, _, _ := source(b, c).Preload()
	st, _ := load.Stream(0, 1)
	var all []string
	for batch := (&sources.Batch{}); ; batch.Reset() {
		err := st.Fill(batch, 1000, 0)
		for i := range batch.Ops {
			all = append(all, string(batch.Key(&batch.Ops[i])))
		}
		if err != nil {
			break
		}
	}
	for _, get := range []bool{false, true} {
		name := "set-P16"
		if get {
			name = "get-P16"
		}
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(25)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				keys := make([]string, 16)
				n := 0
				for pb.Next() {
					for i := range keys {
						keys[i] = all[n%len(all)]
						n++
					}
					_, err := client.Pipelined(ctx, func(p goredis.Pipeliner) error {
						for _, k := range keys {
							if get {
								p.Get(ctx, k)
							} else {
								p.Set(ctx, k, val, 0)
							}
						}
						return nil
					})
					if err != nil && !errors.Is(err, goredis.Nil) {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "kvops/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*16), "cpu-ns/kvop")
		})
	}
}

// serverCalls returns how often the server ran cmd (INFO commandstats).
func serverCalls(t testing.TB, a *goredis.Client, cmd string) int64 {
	t.Helper()
	info, err := a.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// 100k operations of a mixed workload reach the server in the configured
// proportions (±2 %), each operation as exactly its commands.
func TestServerSeesProportions(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 20000, "mix:"
	c.Workload, _ = kv.ParseWorkload("read=0.5,update=0.3,insert=0.1,rmw=0.1")
	src := source(t, c)
	s := open(t, srv.URL+"?index=false", sinks.Options{Shape: src.Shape()})
	runLoad(t, src, s, 4)
	a.ConfigResetStat(context.Background())
	const n = 100_000
	count := runOps(t, src, s, n, 16)
	hmget, hset := serverCalls(t, a, "hmget"), serverCalls(t, a, "hset")
	if want := int64(count[sources.OpRead] + count[sources.OpRMW]); hmget != want {
		t.Errorf("server ran %d HMGET, want %d (reads + read-modify-writes)", hmget, want)
	}
	if want := int64(count[sources.OpUpdate] + count[sources.OpInsert] + count[sources.OpRMW]); hset != want {
		t.Errorf("server ran %d HSET, want %d (updates + inserts + read-modify-writes)", hset, want)
	}
	for op, want := range map[sources.Op]float64{sources.OpRead: 0.5, sources.OpUpdate: 0.3, sources.OpInsert: 0.1, sources.OpRMW: 0.1} {
		if got := float64(count[op]) / n; got < want-0.02 || got > want+0.02 {
			t.Errorf("%s: %.4f of the operations, want %.2f ± 0.02", op, got, want)
		}
	}
	if keys, _ := a.DBSize(context.Background()).Result(); keys != int64(20000+count[sources.OpInsert]) {
		t.Errorf("%d keys after %d inserts into 20000 records", keys, count[sources.OpInsert])
	}
}

// With zipfian keys a few records take most reads: the server's LFU
// counters (log factor 0: one step per access, saturating at 255) show
// a handful of saturated keys, where uniform keys leave none.
func TestServerSeesZipfianHotKeys(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	for k, v := range map[string]string{"maxmemory-policy": "allkeys-lfu", "lfu-log-factor": "0", "lfu-decay-time": "0"} {
		if err := a.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hot := func(dist kv.Distribution, prefix string) (saturated int) {
		c := kv.DefaultConfig()
		c.Records, c.Fields, c.KeyPrefix = 20000, 1, prefix
		c.Workload, _ = kv.ParseWorkload("c")
		c.Distribution = dist
		src := source(t, c)
		s := open(t, srv.URL+"?index=false", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeString, KeyPrefix: prefix}})
		runLoad(t, src, s, 4)
		runOps(t, src, s, 100_000, 16)
		keys, err := a.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		p := a.Pipeline()
		freqs := make([]*goredis.IntCmd, len(keys))
		for i, k := range keys {
			freqs[i] = p.ObjectFreq(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, f := range freqs {
			if f.Val() >= 250 {
				saturated++
			}
		}
		return saturated
	}
	// Zipfian: rank i gets 100000 * i^-0.99 / 26.47 reads, >= 250 for the
	// ~15 hottest; uniform: 5 reads per record on average.
	z, u := hot(kv.Zipfian, "zipf:"), hot(kv.Uniform, "unif:")
	t.Logf("keys read >= 250 times: zipfian %d, uniform %d", z, u)
	if z < 8 || z > 30 {
		t.Errorf("zipfian: %d keys read >= 250 times, want about 15", z)
	}
	if u != 0 {
		t.Errorf("uniform: %d keys read >= 250 times, want 0", u)
	}
}
