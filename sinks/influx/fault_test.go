package influx

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Restart influxd mid-run, then freeze it (SIGSTOP) for longer than the
// request timeout: writes fail with connection and timeout errors, all of
// them retryable; nothing crashes; writing resumes by itself; and once
// every batch is acknowledged the database holds exactly the acknowledged
// rows (resending a batch whose outcome was unknown stored nothing twice).
// The driver retries like the engine does: only what Retryable allows,
// after the server's Retry-After or a backoff.
func TestFaultRestartAndStall(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a server")
	}
	for _, raw := range []string{
		"influx1://%s?db=fault1&timeout=1s",
		"influx://%s?bucket=fault2&timeout=1s&gzip=true",
	} {
		t.Run(raw[:8], func(t *testing.T) {
			// A server per subtest: a restarted server belongs to the test
			// that restarted it.
			srv := testserver.Influx(t)
			const workers, batches, rows = 2, 120, 200
			schemas := []*sources.Schema{cpuSchema("cpu")}
			s := openSink(t, fmt.Sprintf(raw, srv.Addr), sinks.Options{Schemas: schemas, Workers: workers})
			ctx := context.Background()
			if err := s.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			var (
				mu      sync.Mutex
				classes = map[sinks.Class]int{}
				acked   atomic.Int64
				done    atomic.Int64 // batches acknowledged
				stop    atomic.Bool  // the test has failed and is ending
			)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b := sources.NewSeriesBatch(schemas)
					// Disjoint rows per worker: a different day each.
					g := &gen{devices: 10, start: time.Now().Add(-time.Duration(w+1) * 48 * time.Hour), step: time.Second}
					for range batches {
						g.fill(b, rows)
						deadline := time.Now().Add(90 * time.Second)
						for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
							_, err := s.Write(ctx, b)
							if stop.Load() {
								return
							}
							if err == nil {
								acked.Add(rows)
								done.Add(1)
								break
							}
							mu.Lock()
							classes[sinks.ClassOf(err)]++
							mu.Unlock()
							retry, after := sinks.Retryable(err)
							if !retry || time.Now().After(deadline) {
								t.Errorf("worker %d: giving up on a batch: %v (retryable %v)", w, err, retry)
								return
							}
							time.Sleep(max(after, backoff))
						}
					}
				}()
			}
			workersDone := make(chan struct{})
			go func() { wg.Wait(); close(workersDone) }()
			// When the test fails on its own goroutine, the workers stop
			// before it ends (a worker blocked in Write stops when the
			// server is killed at cleanup, without touching t).
			defer func() {
				stop.Store(true)
				select {
				case <-workersDone:
				case <-time.After(5 * time.Second):
				}
			}()
			// waitFor waits until n batches are acknowledged (or a worker
			// has given up on one and said why). Each worker gives up on a
			// batch after 90 s, so 2 minutes without reaching n means a
			// write that never returns.
			waitFor := func(n int64, what string) {
				t.Helper()
				const limit = 2 * time.Minute
				timeout := time.NewTimer(limit)
				defer timeout.Stop()
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for done.Load() < n && !t.Failed() {
					select {
					case <-tick.C:
					case <-workersDone:
						if got := done.Load(); got < n {
							t.Fatalf("%s: the workers ended after %d batches, want %d", what, got, n)
						}
					case <-timeout.C:
						t.Fatalf("%s: %d batches acknowledged after %s, want %d: a write has not returned", what, done.Load(), limit, n)
					}
				}
			}
			waitFor(40, "before the restart")
			srv.Restart(t)
			waitFor(done.Load()+40, "after the restart") // writing resumed
			if err := srv.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2500 * time.Millisecond) // > timeout=1s
			if err := srv.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			<-workersDone

			mu.Lock()
			defer mu.Unlock()
			t.Logf("errors by class: %v; rows acknowledged: %d", classes, acked.Load())
			if classes[sinks.Connection] == 0 {
				t.Errorf("no connection errors during a restart: %v", classes)
			}
			if classes[sinks.Timeout] == 0 {
				t.Errorf("no timeouts while the server was stopped for 2.5 s with timeout=1s: %v", classes)
			}
			for c := range classes {
				if c != sinks.Connection && c != sinks.Timeout && c != sinks.Server {
					t.Errorf("unexpected error class %s: %v", c, classes)
				}
			}
			if want := int64(workers * batches * rows); acked.Load() != want {
				t.Errorf("acknowledged %d rows, want %d", acked.Load(), want)
			}
			db := s.cfg.DB + s.cfg.Bucket
			if got := countField(t, srv, db, "cpu", "usage_user"); got != acked.Load() {
				t.Errorf("stored %d rows, acknowledged %d", got, acked.Load())
			}
		})
	}
}
