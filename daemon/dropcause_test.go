package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// While a run drops work, /status says what could not keep up: one
// worker against a target that takes 20 ms per write sends at most 50/s,
// so at 100/s the worker is busy all the time and the workers are named,
// with the settings to raise. Before anything was dropped, nothing is
// said.
func TestStatusNamesDropBottleneck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=20ms", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_MAX_LAG", "200ms", "SOAKD_SEQ_DURATION", "30s"), p)
		var h http.Handler
		open := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = Run(ctx, cfg, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p,
				started: func(_ []*workload, hh http.Handler) { h = hh; close(open) }})
		}()
		<-open
		get := func() StatusWorkload {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
			var st Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			return st.Workloads[0]
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if s := get(); s.Dropped != 0 || s.DropCause != nil {
			t.Fatalf("after 100 ms: dropped %d, cause %+v; want neither", s.Dropped, s.DropCause)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		s := get()
		if d := s.DropCause; s.Dropped == 0 || d == nil || d.Bottleneck != limitWorkers ||
			!strings.Contains(d.Diagnosis, "SOAKD_SEQ_WORKERS (now 1)") || !strings.Contains(d.Diagnosis, "SOAKD_SEQ_BATCH_SIZE (now 1)") {
			t.Errorf("dropped %d, cause %+v: want the workers and the settings to raise", s.Dropped, d)
		}
		cancel()
		<-done
	})
}

// A capacity search that one worker limited says so in /status too, once
// it has ended: limited_by workers, with the advice. On a modelled target
// (20 ms per write, so one worker sends at most 50/s) in synthetic time,
// so the search is exact: 20 and 40/s pass, 80 and 60/s fail.
func TestCapacityStatusSaysSoakdLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPlugins()
		cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://?latency=20ms", "SOAKD_SEQ_BATCH_SIZE", "1",
			"SOAKD_SEQ_WORKERS", "1", "SOAKD_CAPACITY_START", "20", "SOAKD_CAPACITY_STEP", "x2", "SOAKD_CAPACITY_HOLD", "3s",
			"SOAKD_CAPACITY_SETTLE", "1s", "SOAKD_CAPACITY_WARMUP", "1s", "SOAKD_CAPACITY_SLO_P99", "500ms", "SOAKD_CAPACITY_REFINE", "1"), p)
		var h http.Handler
		_, res, err := Capacity(context.Background(), cfg, nil, Deps{Logger: zap.NewNop(), Registry: prometheus.NewRegistry(), Plugins: p,
			started: func(_ []*workload, hh http.Handler) { h = hh }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Knee != 40 || res.LimitedBy != limitWorkers || res.TargetCapacity() {
			t.Fatalf("knee %v limited by %q: %s", res.Knee, res.LimitedBy, res.Outcome)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
		var st Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		c := st.Workloads[0].Capacity
		if c == nil || c.LimitedBy != limitWorkers || !strings.Contains(c.Advice, "SOAKD_SEQ_WORKERS (now 1)") {
			t.Errorf("/status capacity %+v: want limited by the workers, with the advice", c)
		}
	})
}
