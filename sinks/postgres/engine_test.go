package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/seq"
)

// enginePlugins registers this sink the way cmd/soakd does, with the
// series sources available on this branch.
func enginePlugins() *config.Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: []string{"postgres", "postgresql"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: Open, Check: Check})
	srcs := sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
		Names: []string{"seq"}, Kind: sources.Series,
		Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
		New:      func(c *seq.Config, w sources.Common) (sources.Source, error) { return seq.New(*c, w.Shard) },
	}))
	for _, e := range seriesSources() {
		srcs.Add(e)
	}
	return &config.Plugins{Sources: srcs, Sinks: r, Builtin: map[sources.Kind]string{}}
}

type engineRun struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runEngine loads env (SOAKD_* settings, the workload named w) and runs
// it to its end, as `soakd run` does.
func runEngine(ctx context.Context, t *testing.T, reg *prometheus.Registry, env map[string]string) engineRun {
	t.Helper()
	cfg, p := engineConfig(t, env)
	return run(ctx, cfg, p, reg)
}

// engineConfig loads and checks env (SOAKD_* settings, the workload
// named w).
func engineConfig(t *testing.T, env map[string]string) (*config.Config, *config.Plugins) {
	t.Helper()
	env["SOAKD_LISTEN"] = "off"
	env["SOAKD_PROGRESS_INTERVAL"] = "0"
	env["SOAKD_WORKLOADS"] = "w"
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg, p
}

// run runs cfg to its end. It does not use the test, so it may run on a
// goroutine of its own.
func run(ctx context.Context, cfg *config.Config, p *config.Plugins, reg *prometheus.Registry) engineRun {
	api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: reg})
	sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{api}})
	return engineRun{sum, err, reg}
}

// counter returns the value of the counter name summed over its series
// whose labels include want.
func counter(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestEngineRun runs the seq source through the engine into PostgreSQL
// with each insert method: the rows in the table equal soakd_rows_total
// and the data set's size.
func TestEngineRun(t *testing.T) {
	srv := testserver.Postgres(t)
	for _, method := range []string{"copy", "insert", "unnest"} {
		t.Run(method, func(t *testing.T) {
			db := newDB(t, srv, "engine_"+method)
			reg := prometheus.NewRegistry()
			res := runEngine(t.Context(), t, reg, map[string]string{
				"SOAKD_W_SOURCE": "seq", "SOAKD_W_DEVICES": "37", "SOAKD_W_ROWS": "25000",
				"SOAKD_W_TARGET": withParams(db, "insert", method), "SOAKD_W_RATE": "max",
				"SOAKD_W_WORKERS": "3", "SOAKD_W_BATCH_SIZE": "700",
			})
			if res.err != nil {
				t.Fatal(res.err)
			}
			w := res.sum.Workloads[0]
			rows := counter(t, reg, "soakd_rows_total", nil)
			stored := count(t, connect(t, db), "seq")
			if w.Units != 25000 || int64(rows) != w.Units || stored != w.Units {
				t.Errorf("acknowledged %d, soakd_rows_total %v, stored %d: want all 25000", w.Units, rows, stored)
			}
			if len(w.Errors) > 0 && sumErrors(w.Errors) > 0 {
				t.Errorf("errors: %v", w.Errors)
			}
			// Every n of the data set, once.
			var distinct, lo, hi int64
			if err := connect(t, db).QueryRow(t.Context(), "SELECT count(DISTINCT n), min(n), max(n) FROM seq").Scan(&distinct, &lo, &hi); err != nil {
				t.Fatal(err)
			}
			if distinct != 25000 || lo != 0 || hi != 24999 {
				t.Errorf("stored n: %d distinct in [%d, %d], want 0..24999 once each", distinct, lo, hi)
			}
		})
	}
}

func sumErrors(m map[string]int64) int64 {
	n := int64(0)
	for _, v := range m {
		n += v
	}
	return n
}

// TestEngineFault stops PostgreSQL in the middle of an engine run and
// starts it again: the engine keeps running, counts connection errors,
// resumes writing within a few seconds, and at the end the rows in the
// table equal soakd_rows_total.
func TestEngineFault(t *testing.T) {
	for _, method := range []string{"copy", "unnest"} {
		t.Run(method, func(t *testing.T) {
			srv := testserver.Postgres(t)
			reg := prometheus.NewRegistry()
			cfg, p := engineConfig(t, map[string]string{
				"SOAKD_W_SOURCE": "seq", "SOAKD_W_DEVICES": "100",
				"SOAKD_W_TARGET": withParams(srv.URL, "insert", method), "SOAKD_W_RATE": "20000",
				"SOAKD_W_WORKERS": "4", "SOAKD_W_BATCH_SIZE": "200", "SOAKD_W_DURATION": "9s",
				"SOAKD_W_TIMEOUT": "2s", "SOAKD_W_MAX_LAG": "1s",
			})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan engineRun, 1)
			go func() {
				defer close(done)
				done <- run(ctx, cfg, p, reg)
			}()
			// However the test ends (a failed wait below exits it), the
			// run ends first: done is closed once it has returned.
			defer func() {
				cancel()
				for range done {
				}
			}()
			rows := func() float64 { return counter(t, reg, "soakd_rows_total", nil) }
			waitFor(t, 10*time.Second, "first rows", func() bool { return rows() > 0 })
			time.Sleep(time.Second)
			srv.StopKeep()
			time.Sleep(2 * time.Second)
			down := rows()
			srv.Resume(t)
			back := time.Now()
			waitFor(t, 30*time.Second, "writes after the restart", func() bool { return rows() > down })
			resumed := time.Since(back)
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			w := res.sum.Workloads[0]
			t.Logf("acked %d, failed %d, dropped %d, errors %v; resumed %v after the server was back",
				w.Units, w.Failed, w.Dropped, w.Errors, resumed)
			// The retry back-off is capped at 5 s; 3× that leaves a loaded
			// machine its own delay and still catches a stuck reconnection.
			if resumed > 15*time.Second {
				t.Errorf("writes resumed %v after the server came back, want a few seconds", resumed)
			}
			if conn := counter(t, reg, "soakd_errors_total", map[string]string{"class": "connection"}); conn == 0 {
				t.Errorf("no connection errors counted: %v", w.Errors)
			}
			for _, bad := range []string{"other", "rejected"} {
				if w.Errors[bad] > 0 {
					t.Errorf("%d errors classed %s", w.Errors[bad], bad)
				}
			}
			stored := count(t, connect(t, srv.URL), "seq")
			if rows := int64(rows()); stored != w.Units || rows != w.Units {
				t.Errorf("rows stored %d, acknowledged %d, soakd_rows_total %d", stored, w.Units, rows)
			}
			if !strings.Contains(w.Target, "postgres://") {
				t.Errorf("summary target %q", w.Target)
			}
		})
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seriesSources registers package sources/iot as cmd/soakd does, its
// query sources included.
func seriesSources() []sources.Entry {
	return []sources.Entry{sources.Register(sources.Spec[iot.Config]{
		Names: iot.Names(), Kind: sources.Series,
		Validate: func(c *iot.Config, w sources.Common) error { return iot.Defaults(w.Source, *c).Validate() },
		New: func(c *iot.Config, w sources.Common) (sources.Source, error) {
			return iot.New(w.Source, *c, w.Seed, w.Shard)
		},
	}), sources.Register(sources.Spec[iot.QueryConfig]{
		Names: iot.QueryNames(), Kind: sources.Queries,
		Validate: func(c *iot.QueryConfig, w sources.Common) error { return c.Validate(w.Source) },
		New: func(c *iot.QueryConfig, w sources.Common) (sources.Source, error) {
			return iot.NewQueries(w.Source, *c, w.Seed)
		},
	})}
}

// TestEngineSources runs every series source through the engine with
// every insert method and compares the tables with the data set,
// regenerated here from the same settings: every row stored once, every
// value (and null) as generated, and soakd_rows_total = rows stored.
func TestEngineSources(t *testing.T) {
	srv := testserver.Postgres(t)
	const start, end, scale = "2016-01-01T00:00:00Z", "+30m", 12
	for _, source := range []string{"devops", "devops-full", "iot", "massive"} {
		// The data set, as the source generates it.
		c := iot.DefaultConfig()
		c.Scale = scale
		if err := c.Start.UnmarshalText([]byte(start)); err != nil {
			t.Fatal(err)
		}
		if err := c.End.UnmarshalText([]byte(end)); err != nil {
			t.Fatal(err)
		}
		src, err := iot.New(source, c, 7, sources.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]row, len(src.Schemas()))
		st, _ := src.Stream(0, 1)
		b := sources.NewSeriesBatch(src.Schemas())
		for {
			b.Reset()
			err := st.Fill(b, 1000, 0)
			for i, tb := range b.Tables {
				want[i] = append(want[i], expectRows(tb)...)
			}
			if err != nil {
				break
			}
		}
		total := 0
		for _, w := range want {
			total += len(w)
		}
		for _, method := range []string{"copy", "insert", "unnest"} {
			t.Run(source+"/"+method, func(t *testing.T) {
				db := newDB(t, srv, strings.ReplaceAll(source, "-", "_")+"_"+method)
				reg := prometheus.NewRegistry()
				res := runEngine(t.Context(), t, reg, map[string]string{
					"SOAKD_W_SOURCE": source, "SOAKD_W_SCALE": fmt.Sprint(scale), "SOAKD_W_SEED": "7",
					"SOAKD_W_START": start, "SOAKD_W_END": end,
					"SOAKD_W_TARGET": withParams(db, "insert", method), "SOAKD_W_RATE": "max",
					"SOAKD_W_WORKERS": "3", "SOAKD_W_BATCH_SIZE": "500",
				})
				if res.err != nil {
					t.Fatal(res.err)
				}
				w := res.sum.Workloads[0]
				if rows := counter(t, reg, "soakd_rows_total", nil); w.Units != int64(total) || int64(rows) != w.Units {
					t.Errorf("acknowledged %d, soakd_rows_total %v, data set %d rows", w.Units, rows, total)
				}
				conn := connect(t, db)
				for i, s := range src.Schemas() {
					sameRows(t, s.Measurement, readRows(t, conn, s), want[i])
				}
			})
		}
	}
}
