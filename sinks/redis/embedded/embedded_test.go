package embedded

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, raw string, o sinks.Options) *Sink {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), u, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", raw, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*Sink)
}

func TestIs(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"redis://embedded":                  true,
		"redis://embedded?index=false":      true,
		"redis://embedded/2":                true,
		"rediss://embedded":                 false,
		"redis://embedded:6379":             false,
		"redis-cluster://embedded":          false,
		"redis://127.0.0.1:6379":            false,
		"null://embedded":                   false,
		"redis://embedded.example.com:6379": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Is(u); got != want {
			t.Errorf("Is(%s) = %v, want %v", raw, got, want)
		}
	}
}

// Every data type works against the in-process server: the load inserts
// every record, the probe finds them, and a mixed workload reads them all.
func TestDataTypes(t *testing.T) {
	ctx := context.Background()
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix = 200, "demo:"
	c.Workload, _ = kv.ParseWorkload("read=0.4,update=0.3,insert=0.1,scan=0.1,rmw=0.1")
	for _, dt := range []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet} {
		c.DataType = dt
		src, err := kv.New(c, 1, sources.Shard{Index: 0, Count: 1})
		if err != nil {
			t.Fatal(err)
		}
		s := open(t, URL, sinks.Options{Workers: 1, Shape: src.(sources.Shaped).Shape()})
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		load, probe, err := src.(sources.Preloader).Preload()
		if err != nil {
			t.Fatal(err)
		}
		b := src.(sources.Batcher).NewBatch()
		write := func(st sources.Stream) error {
			b.Reset()
			ferr := st.Fill(b, 25, 0)
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatalf("%s: Write: %v", dt, err)
			}
			return ferr
		}
		ls, _ := load.Stream(0, 1)
		for !errors.Is(write(ls), sources.ErrDone) {
		}
		b.Reset()
		probe(b)
		if n, err := s.Present(ctx, b); err != nil || n != len(b.Ops) {
			t.Fatalf("%s: Present after the load = %d of %d, %v", dt, n, len(b.Ops), err)
		}
		rs, _ := src.Stream(0, 1)
		for range 20 {
			_ = write(rs)
		}
		if n := len(s.srv.Keys()); n < 200+1 {
			t.Fatalf("%s: the server holds %d keys, want the 200 records and the scan index", dt, n)
		}
		if m := s.Misses(); m != 0 {
			t.Errorf("%s: %d reads found no record", dt, m)
		}
	}
}

// Closing the sink stops the server: its port no longer answers.
func TestCloseStopsServer(t *testing.T) {
	s := open(t, URL+"?pool_size=2", sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	addr := s.srv.Addr()
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Close", addr)
	}
}

// A URL the redis sink refuses starts no server (goleak checks).
func TestOpenRefusesBadURL(t *testing.T) {
	u, _ := url.Parse(URL + "?no_such_param=1")
	if _, err := Open(context.Background(), u, sinks.Options{}); err == nil {
		t.Fatal("Open accepted an unknown parameter")
	}
	u, _ = url.Parse("redis://127.0.0.1:6379")
	if _, err := Open(context.Background(), u, sinks.Options{}); err == nil {
		t.Fatal("Open accepted a URL that is not redis://embedded")
	}
}

// Past its memory bound the built-in target refuses writes as a Redis
// server at its maxmemory does (OOM, rejected), and still serves reads:
// inserts would otherwise grow soakd's memory without end.
func TestWritesRefusedPastMemoryBound(t *testing.T) {
	ctx := context.Background()
	c := kv.DefaultConfig()
	c.Records, c.KeyPrefix, c.DataType = 50, "demo:", sources.DataTypeString
	src, err := kv.New(c, 1, sources.Shard{Index: 0, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, URL, sinks.Options{Workers: 1, Shape: src.(sources.Shaped).Shape()})
	load, _, err := src.(sources.Preloader).Preload()
	if err != nil {
		t.Fatal(err)
	}
	b := src.(sources.Batcher).NewBatch()
	ls, _ := load.Stream(0, 1)
	b.Reset()
	_ = ls.Fill(b, 25, 0)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatalf("under the bound: %v", err)
	}
	keys := len(s.srv.Keys())
	s.guard.limit = 1 // the heap is over it at the next read
	s.guard.n.Store(0)
	b.Reset()
	_ = ls.Fill(b, 25, 0)
	_, err = s.Write(ctx, b)
	if err == nil || sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("past the bound: %v, want an OOM rejection", err)
	}
	if n := len(s.srv.Keys()); n != keys {
		t.Errorf("the server holds %d keys, want the %d written under the bound", n, keys)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping past the bound: %v", err)
	}
}
