package targetwatch

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/internal/testserver"
)

// A run shorter than its WATCH_INTERVAL ends with the end's figures, not
// the one reading taken when its first phase began: against a real
// redis-server, a KV run that loads 5000 records reports, in /status and
// in its summary entry, the keys the server holds once the run is over.
// Bug caught: "keys: 2 → 2" after 5000 records loaded, the watch stopped
// at the run's end without reading the target again.
func TestWatchReadsTheTargetAtTheRunsEnd(t *testing.T) {
	srv := testserver.Redis(t)
	const records = 5000
	t0 := time.Now()
	tw, _, logs, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "kv", "SOAKD_KV_TARGET", srv.URL,
		"SOAKD_KV_RECORDS", "5000", "SOAKD_KV_DURATION", "2s", "SOAKD_KV_WATCH_INTERVAL", "1h"), enginetest.Plugins())
	took := time.Since(t0)
	if err := sum.Failed(); err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	loaded, ran := sum.Workload("kv", "load"), sum.Workload("kv", "run")
	if loaded == nil || loaded.Units != records || ran == nil || !strings.HasPrefix(ran.StoppedBy, "DURATION") {
		t.Fatalf("load phase %+v, run phase %+v: want %d records loaded, then a run phase to its DURATION", loaded, ran, records)
	}

	// What the server holds now, through a client of the test's own: the
	// sink is closed, nothing writes any more.
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	keys, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if keys < records {
		t.Fatalf("the server holds %d keys after %d records loaded", keys, records)
	}

	st := statusOf(t, tw, "kv")
	if st.Keys == nil || st.Keys.Last != float64(keys) || st.Keys.Peak != float64(keys) || st.Keys.First >= float64(records) {
		t.Errorf("keys %+v, want from the start's to the %d the server holds at the end", st.Keys, keys)
	}
	if st.Readings != 2 || st.Errors != 0 || st.FirstAt == nil || !st.LastAt.After(*st.FirstAt) {
		t.Fatalf("%d readings (%d failed), first at %v, last at %v: want the first phase's and the end's", st.Readings, st.Errors, st.FirstAt, st.LastAt)
	}
	// The summary entry (what the text summary and the report print).
	f, ok := ran.Extra["target_figures"].(Summary)
	if !ok || f.Keys == nil || f.Keys.Last != float64(keys) || f.Readings != 2 {
		t.Errorf("summary target_figures %+v, want keys ending at %d", ran.Extra["target_figures"], keys)
	}
	// The last reading is the end's: after the run phase's last write was
	// acknowledged (its LastAt no earlier than the run's first reading
	// plus both phases), and before Run returned.
	if end := st.FirstAt.Add(time.Duration((loaded.Seconds + ran.Seconds) * float64(time.Second))); st.LastAt.Before(end.Add(-500*time.Millisecond)) || st.LastAt.After(t0.Add(took)) {
		t.Errorf("last reading at %v, want at the end of the run phase, %v, before Run returned at %v", st.LastAt, end, t0.Add(took))
	}
	// Over two seconds and more the rates are given, and sane.
	if st.CPU == nil || st.CPU.Cores == nil || *st.CPU.Cores < 0 || *st.CPU.Cores > float64(runtime.NumCPU()) {
		t.Errorf("cpu %+v, want the cores the server kept busy between the two readings", st.CPU)
	}
	if st.Keys != nil && (st.Keys.GrowthPerHour == nil || *st.Keys.GrowthPerHour <= 0) {
		t.Errorf("keys' growth per hour %v, want the keys loaded over the hours between the readings", st.Keys.GrowthPerHour)
	}
	if n := count(logs, "cannot"); n != 0 {
		t.Errorf("%d lines of a failed reading: %v", n, logs.All())
	}
}

// A last reading within a second of the first gives no rate: no growth
// per hour, no cores, however many the few milliseconds between them
// would make. Bug caught: a run phase of half a second extrapolating its
// keys and CPU time to an hour.
func TestWatchGivesNoRateOverLessThanASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &watchedSink{}
		tw, _, _, sum := run(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
			"SOAKD_SEQ_DURATION", "500ms", "SOAKD_SEQ_WATCH_INTERVAL", "10s"), plugins(s))
		if err := sum.Failed(); err != nil {
			t.Fatalf("the run failed: %v", err)
		}
		read := s.readings()
		if len(read) != 2 || read[1].at.Sub(read[0].at) >= time.Second {
			t.Fatalf("%d readings, want the first phase's and the end's, under a second apart", len(read))
		}
		st := statusOf(t, tw, "seq")
		if st.Keys == nil || st.Keys.Last != read[1].figures.Stats["keys"] || st.Keys.GrowthPerHour != nil {
			t.Errorf("keys %+v, want the end's without a growth per hour", st.Keys)
		}
		if st.StorageTotal == nil || st.StorageTotal.GrowthPerHour != nil {
			t.Errorf("storage total %+v, want no growth per hour", st.StorageTotal)
		}
		if st.CPU == nil || st.CPU.Last != read[1].figures.CPUSeconds || st.CPU.Cores != nil {
			t.Errorf("cpu %+v, want the end's without cores", st.CPU)
		}
	})
}

// A run stopped before its end (a signal) closes its sinks by the end of
// SHUTDOWN_GRACE, so the last reading is taken as it stops, within the
// grace: against a target whose readings never answer, the run still
// returns within the grace of the stop; against one that answers, the
// figures it ends with are those read at the stop. Bug caught: the last
// reading waited for the writes in flight, then up to 5 s more, so a
// stop against a hung target took SHUTDOWN_GRACE + 5 s.
func TestStoppedRunsLastReadingWithinTheGrace(t *testing.T) {
	for _, block := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			const grace = time.Second
			s := &watchedSink{block: block}
			p := plugins(s)
			cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "watched://", "SOAKD_SEQ_RATE", "100",
				"SOAKD_SEQ_WATCH_INTERVAL", "10s", "SOAKD_SHUTDOWN_GRACE", grace.String()), p)
			tw := New(zap.NewNop(), Options{Grace: grace})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(3*time.Second, cancel) // SIGTERM
			t0 := time.Now()
			if _, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Observers: []daemon.Observer{tw}}); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(t0); took > 3*time.Second+grace {
				t.Errorf("blocking target %v: stopped at 3 s with a grace of %v, Run returned after %v", block, grace, took)
			}
			if st := statusOf(t, tw, "seq"); !block && (st.Readings != 2 || st.LastAt == nil || st.LastAt.Sub(t0) != 3*time.Second) {
				t.Errorf("readings %d, the last at %v: want 2, the last as the run stopped at 3 s", st.Readings, st.LastAt)
			}
		})
	}
}
