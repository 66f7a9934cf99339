package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// TestForeignKeysSurvive writes every data type (set and zset inserts
// DEL their key first) under soakd's default KEY_PREFIX next to foreign
// keys of every type, some sharing the prefix's first bytes or holding
// glob characters, then resets (soakd sweep) and closes with
// cleanup=true: every foreign key keeps its value, and nothing under the
// prefix is left. Without a prefix, Reset and cleanup refuse.
func TestForeignKeysSurvive(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := context.Background()
	const prefix = "soakd:"
	foreign := map[string]string{
		"user1": "string", "soakd": "string", "soakd;user1": "string", "soakd_indices": "zset",
		"app:soakd:user1": "hash", "soak:user1": "set", "*": "string", "soakd\\:user1": "string",
	}
	for k, typ := range foreign {
		switch typ {
		case "string":
			a.Set(ctx, k, "keep", 0)
		case "hash":
			a.HSet(ctx, k, "f", "keep")
		case "set":
			a.SAdd(ctx, k, "keep")
		case "zset":
			a.ZAdd(ctx, k, goredis.Z{Score: 1, Member: "keep"})
		}
	}
	check := func(when string) {
		t.Helper()
		for k, typ := range foreign {
			if got, _ := a.Type(ctx, k).Result(); got != typ {
				t.Errorf("%s: foreign key %q is %q, want a %s", when, k, got, typ)
			}
		}
	}
	for _, dt := range []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet} {
		c := kv.DefaultConfig()
		c.Records, c.Fields, c.FieldLength = 200, 3, 8
		c.Workload, _ = kv.ParseWorkload("read=0.2,update=0.3,insert=0.2,scan=0.1,rmw=0.2")
		src := source(t, c)
		s := open(t, srv.URL+"?cleanup=true", sinks.Options{Shape: sources.KVShape{DataType: dt, KeyPrefix: prefix}})
		sinktest.Reset(t, s, sinktest.ResetCase{
			Write: func(t *testing.T) {
				runLoad(t, src, s, 2)
				runOps(t, src, s, 2000, 8)
			},
			Count:   func(t *testing.T) int { return under(t, a, prefix) },
			Foreign: func(_ *testing.T, when string) { check(when + " of a " + string(dt) + " run") },
		})
		runLoad(t, src, s, 2)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		check("after cleanup")
		if n := under(t, a, prefix); n != 0 {
			t.Errorf("%d keys under %s after cleanup", n, prefix)
		}
	}
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash}})
	if err := s.Reset(ctx); err == nil || !strings.Contains(err.Error(), "KEY_PREFIX") {
		t.Errorf("Reset without a prefix: %v", err)
	}
	check("after a refused Reset")
}

// under counts the keys that start with prefix.
func under(t *testing.T, a *goredis.Client, prefix string) int {
	t.Helper()
	keys, err := a.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
