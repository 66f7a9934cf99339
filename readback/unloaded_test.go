package readback

import (
	"context"
	"errors"
	"net/url"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/redis"
	"github.com/soakd/soakd/sources"
)

// refusingInserts is a real redis-server's sink that refuses, without
// sending them, the inserts of odd records, as a server at its maxmemory
// with noeviction refuses some (OOM) and takes later updates.
type refusingInserts struct{ *redis.Sink }

func (s refusingInserts) Write(ctx context.Context, b *sources.Batch) (int, error) {
	for _, op := range b.Ops {
		if op.Op == sources.OpInsert && op.Record%2 == 1 {
			return 0, sinks.NewError(sinks.Rejected, false, errors.New("OOM command not allowed when used memory > 'maxmemory'"))
		}
	}
	return s.Sink.Write(ctx, b)
}

// An update acknowledged on a record whose insert failed made the record
// with the field it wrote alone: VERIFY checks that field, and does not
// count the insert's fields, never acknowledged, as lost. Bug caught:
// redis-server at maxmemory with noeviction refused most of the load and
// took some updates; nothing acknowledged was lost (no key evicted), yet
// the run failed "read-back of acknowledged units failed: 0 missing, 14
// mismatched" (later "14 missing").
func TestVerifyUpdateOfARecordNeverInserted(t *testing.T) {
	srv := testserver.Redis(t)
	p := enginetest.Plugins(sinks.Entry{Schemes: []string{"refusing"}, Kinds: []sources.Kind{sources.KV},
		Open: func(ctx context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
			ru := *u
			ru.Scheme = "redis"
			s, err := redis.Open(ctx, &ru, o)
			if err != nil {
				return nil, err
			}
			return refusingInserts{s.(*redis.Sink)}, nil
		}})
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_TARGET", "refusing://"+srv.Addr+"/0?index=false",
		"SOAKD_KV_RECORDS", "200", "SOAKD_KV_FIELDS", "4", "SOAKD_KV_FIELD_LENGTH", "24", "SOAKD_KV_WORKLOAD", "update=1",
		"SOAKD_KV_DISTRIBUTION", "uniform", "SOAKD_KV_LOAD_RATE", "max", "SOAKD_KV_RATE", "1000", "SOAKD_KV_DURATION", "1s",
		"SOAKD_KV_WORKERS", "2", "SOAKD_KV_RETRIES", "0", "SOAKD_KV_VERIFY", "1", "SOAKD_KV_KEY_PREFIX", "unl:"), p)
	res := runTest(context.Background(), cfg, p, nil)
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	run := res.sum.Workload("kv", "run")
	if run == nil || run.Verify == nil {
		t.Fatalf("no run phase with VERIFY: %+v", res.sum.Workloads)
	}
	// The scenario: records with fewer fields than the 4 an insert
	// writes, made by updates.
	a := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer a.Close()
	keys, err := a.Keys(context.Background(), "unl:user*").Result()
	if err != nil {
		t.Fatal(err)
	}
	partial := 0
	for _, k := range keys {
		if a.HLen(context.Background(), k).Val() < 4 {
			partial++
		}
	}
	v := run.Verify
	t.Logf("%d keys, %d partial; checked %d missing %d mismatch %d", len(keys), partial, v.Checked, v.Missing, v.Mismatch)
	if partial == 0 || v.Checked == 0 {
		t.Fatalf("no update made a record whose insert failed (%d partial, %d checked): the test proves nothing", partial, v.Checked)
	}
	if v.Missing != 0 || v.Mismatch != 0 || run.Failure != nil {
		t.Errorf("missing %d, mismatch %d, failure %+v: want every acknowledged update intact", v.Missing, v.Mismatch, run.Failure)
	}
}
