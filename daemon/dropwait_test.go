package daemon

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
)

// A ticket past MAX_LAG when a worker takes it waited for busy workers
// only when that worker was still on its last ticket when the ticket went
// stale. One handed to a worker that had long been free (an idle worker
// that ran late, soakd's CPU) is soakd's lateness: counted as waited, it
// named the workers and the target where soakd itself fell behind.
func TestStaleTicketWaitedOnlyBehindABusyWorker(t *testing.T) {
	const lag = 100 * time.Millisecond
	r := &runner{cfg: &config.Workload{MaxLag: lag}, log: zap.NewNop()}
	r.origin.Store(int64(mono() - 10*time.Second)) // the phase began 10 s ago
	now := r.since()
	stale := ticket{due: now - time.Second, units: 5}
	for _, tc := range []struct {
		name   string
		freeAt time.Duration
		waited int64
	}{
		{"busy until now", now, 5},
		{"busy until after it went stale", stale.due + 2*lag, 5},
		{"free before it went stale", stale.due + lag/2, 0},
		{"idle since the start", 0, 0},
	} {
		w := &worker{ctx: context.Background(), t: &tally{}, freeAt: tc.freeAt}
		r.take(nil, w, stale)
		if c := w.t.c; c.dropped != 5 || c.waited != tc.waited {
			t.Errorf("%s: dropped %d, of them waited %d; want 5 dropped, %d waited", tc.name, c.dropped, c.waited, tc.waited)
		}
	}
}
