package influx

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/seq"
)

// enginePlugins is the composition root of these tests: this sink (the
// registry entry cmd/soakd needs) and the series sources on main.
func enginePlugins() *config.Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: []string{"influx", "influxs", "influx1"}, Kinds: []sources.Kind{sources.Series, sources.Queries}, Open: Open, Check: Check})
	r.Add(sinks.Entry{Schemes: []string{"null"}, Kinds: []sources.Kind{sources.Series, sources.KV}, Open: null.Open, Check: null.Check})
	return &config.Plugins{
		Sources: sources.NewRegistry(sources.Register(sources.Spec[seq.Config]{
			Names: []string{"seq"}, Kind: sources.Series,
			Validate: func(c *seq.Config, _ sources.Common) error { return c.Validate() },
			New:      func(c *seq.Config, w sources.Common) (sources.Source, error) { return seq.New(*c, w.Shard) },
		}), sources.Register(sources.Spec[iot.Config]{
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
		})),
		Sinks:   r,
		Builtin: map[sources.Kind]string{sources.Series: "null://"},
	}
}

type engineRun struct {
	sum *report.Summary
	err error
	reg *prometheus.Registry
}

// runEngine loads env (SOAKD_* settings), validates it and starts a run;
// the result arrives on the returned channel. reg is live during the run.
// The run ends with the test: its context is the test's, and cleanup
// waits for it.
func runEngine(t *testing.T, env map[string]string) (*prometheus.Registry, <-chan engineRun) {
	t.Helper()
	env["SOAKD_LISTEN"] = "off"
	env["SOAKD_PROGRESS_INTERVAL"] = "0"
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Validate(p); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	reg := prometheus.NewRegistry()
	out := make(chan engineRun, 1)
	ctx, log := t.Context(), zaptest.NewLogger(t)
	go func() {
		defer close(out)
		api := serve.New(serve.Options{Config: cfg, Logger: log, Version: "test", Registry: reg})
		sum, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: log, Plugins: p, Version: "test", Observers: []daemon.Observer{api}})
		out <- engineRun{sum, err, reg}
	}()
	t.Cleanup(func() {
		for range out { // closed once the run has returned, received or not
		}
	})
	return reg, out
}

// metricSum adds up every series of a counter family.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// A finite run through the engine, through both APIs: the rows the
// engine counts as acknowledged (soakd_rows_total, the summary) are the
// rows InfluxDB holds.
func TestEngineRun(t *testing.T) {
	srv := testserver.Influx(t)
	for _, target := range []string{
		"influx1://%s?db=e2e1&gzip=true",
		"influx://%s?bucket=e2e2&precision=ms",
	} {
		t.Run(target[:8], func(t *testing.T) {
			const rows = 60000
			reg, done := runEngine(t, map[string]string{
				"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": fmt.Sprintf(target, srv.Addr),
				"SOAKD_W_RATE": "max", "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "2000",
				"SOAKD_W_DEVICES": "30", "SOAKD_W_ROWS": fmt.Sprint(rows),
			})
			res := <-done
			if res.err != nil {
				t.Fatalf("Run: %v", res.err)
			}
			w := res.sum.Workloads[0]
			db := map[byte]string{'1': "e2e1", ':': "e2e2"}[target[6]] // influx1:// or influx://
			stored := countField(t, srv, db, "seq", "n")
			acked := metricSum(t, reg, "soakd_rows_total")
			t.Logf("units %d, soakd_rows_total %.0f, stored %d, bytes %d, errors %v", w.Units, acked, stored, w.Bytes, w.Errors)
			if w.Units != rows || acked != rows || stored != rows {
				t.Errorf("acknowledged %d (soakd_rows_total %.0f), stored %d, want %d", w.Units, acked, stored, rows)
			}
			if w.Bytes <= 0 || metricSum(t, reg, "soakd_bytes_total") != float64(w.Bytes) {
				t.Errorf("bytes %d", w.Bytes)
			}
			for c, n := range w.Errors {
				if n != 0 {
					t.Errorf("%d %s errors in a run without faults", n, c)
				}
			}
		})
	}
}

// The fault test through the engine: influxd restarts mid-run and is then
// frozen longer than the write timeout. The engine counts the failed
// attempts by class, retries them (the sink marks them safe: line
// protocol writes are idempotent), the run completes, and what InfluxDB
// holds equals soakd_rows_total.
func TestEngineFault(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a server")
	}
	srv := testserver.Influx(t)
	const rows = 400000
	reg, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq",
		"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=efault", srv.Addr),
		"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "2000",
		"SOAKD_W_DEVICES": "50", "SOAKD_W_ROWS": fmt.Sprint(rows),
		"SOAKD_W_TIMEOUT": "1s", "SOAKD_W_RETRIES": "100", "SOAKD_W_RETRY_BACKOFF": "50ms",
	})
	waitRows := func(n float64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for metricSum(t, reg, "soakd_rows_total") < n {
			if time.Now().After(deadline) {
				t.Fatalf("soakd_rows_total stuck at %.0f, waiting for %.0f", metricSum(t, reg, "soakd_rows_total"), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRows(40000)
	srv.Restart(t)
	waitRows(metricSum(t, reg, "soakd_rows_total") + 40000) // writing resumed
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	w := res.sum.Workloads[0]
	stored := countField(t, srv, "efault", "seq", "n")
	acked := metricSum(t, reg, "soakd_rows_total")
	t.Logf("units %d failed %d, soakd_rows_total %.0f, stored %d, errors by class %v", w.Units, w.Failed, acked, stored, w.Errors)
	if w.Units != rows || w.Failed != 0 || acked != rows {
		t.Errorf("acknowledged %d (soakd_rows_total %.0f) failed %d, want all %d acknowledged", w.Units, acked, w.Failed, rows)
	}
	if stored != int64(acked) {
		t.Errorf("stored %d != acknowledged %.0f", stored, acked)
	}
	if w.Errors["connection"] == 0 || w.Errors["timeout"] == 0 {
		t.Errorf("errors by class %v: want connection errors (restart) and timeouts (stall)", w.Errors)
	}
	for c, n := range w.Errors {
		if n > 0 && c != "connection" && c != "timeout" && c != "server" {
			t.Errorf("%d errors of class %s", n, c)
		}
	}
}

// Every series source through the engine into InfluxDB 1.8. InfluxQL
// cannot count rows whose fields are partly null, so two exact checks:
// without nulls, count(first field) per measurement adds up to
// soakd_rows_total; with each source's own defaults (iot: 5 % late
// readings, 1 % null fields, trucks missing a tag), count(field) over
// every field of every measurement adds up to soakd_values_total.
func TestEngineSources(t *testing.T) {
	srv := testserver.Influx(t)
	for _, src := range iot.Names() {
		for _, missing := range []string{"none", ""} {
			name := src + "/missing=" + missing
			if missing == "" {
				name = src + "/defaults"
			}
			t.Run(name, func(t *testing.T) {
				db := strings.NewReplacer("-", "_", "/", "_", "=", "_").Replace(name)
				env := map[string]string{
					"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": src,
					"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=%s&gzip=true", srv.Addr, db),
					"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "1000",
					"SOAKD_W_SCALE": "20", "SOAKD_W_COLUMNS": "20",
					"SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": "+2h", "SOAKD_W_INTERVAL": "10s",
				}
				if missing != "" {
					env["SOAKD_W_MISSING"] = missing
				}
				reg, done := runEngine(t, env)
				res := <-done
				if res.err != nil {
					t.Fatalf("Run: %v", res.err)
				}
				w := res.sum.Workloads[0]
				rows, values := metricSum(t, reg, "soakd_rows_total"), metricSum(t, reg, "soakd_values_total")
				if w.Units == 0 || float64(w.Units) != rows || w.Failed != 0 || w.Dropped != 0 {
					t.Fatalf("units %d (soakd_rows_total %.0f) failed %d dropped %d", w.Units, rows, w.Failed, w.Dropped)
				}
				var firstFields, allFields int64
				meas := influxQuery(t, srv, db, "SHOW MEASUREMENTS")
				if len(meas) == 0 {
					t.Fatal("no measurements stored")
				}
				for _, m := range meas[0].Values {
					ss := influxQuery(t, srv, db, "SELECT count(*) FROM "+quoteIdent(m[0].(string)))
					for i, v := range ss[0].Values[0][1:] {
						n := int64(v.(float64))
						if i == 0 {
							firstFields += n
						}
						allFields += n
					}
				}
				t.Logf("%d measurements, rows %.0f, values %.0f; stored: first fields %d, all fields %d",
					len(meas[0].Values), rows, values, firstFields, allFields)
				if float64(allFields) != values {
					t.Errorf("stored %d field values, soakd_values_total %.0f", allFields, values)
				}
				if missing == "none" && float64(firstFields) != rows {
					t.Errorf("stored %d rows, soakd_rows_total %.0f", firstFields, rows)
				}
			})
		}
	}
}

// Data older than the database's retention policy: InfluxDB 1.8 stores
// the batch's newer points and answers "partial write: points beyond
// retention policy dropped=N". The rows it kept are acknowledged with
// their values (soakd_values_total is what InfluxDB holds), the rest
// failed, and the error says what to change.
func TestEngineBeyondRetentionPolicy(t *testing.T) {
	srv := testserver.Influx(t)
	srv.InfluxExec(t, "", "CREATE DATABASE rp1h WITH DURATION 1h")
	// Three hours of devops data (10 values a row, none null) from
	// three hours ago: the older part is beyond the hour the policy keeps.
	// InfluxDB keeps a point older than that when a newer point of the
	// same write falls in its shard group (an hour): the first batch,
	// 2 h 46 min of data, holds points of the last hour and of shard
	// groups wholly older than it, so it is always stored in part.
	start := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)
	reg, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops",
		"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=rp1h", srv.Addr),
		"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "10000",
		"SOAKD_W_SCALE": "10", "SOAKD_W_MISSING": "none",
		"SOAKD_W_START": start.Format(time.RFC3339), "SOAKD_W_END": "+3h",
	})
	res := <-done
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	w := res.sum.Workloads[0]
	stored := countField(t, srv, "rp1h", "cpu", "usage_user")
	rows, values := metricSum(t, reg, "soakd_rows_total"), metricSum(t, reg, "soakd_values_total")
	t.Logf("scheduled %d acked %d failed %d values %d; soakd_rows_total %.0f soakd_values_total %.0f; stored %d rows",
		w.Scheduled, w.Units, w.Failed, w.Values, rows, values, stored)
	if stored == 0 || w.Failed == 0 {
		t.Fatalf("stored %d, failed %d: want the policy to keep the newer rows only", stored, w.Failed)
	}
	if w.Scheduled != 10*3*360 || w.Units+w.Failed != w.Scheduled {
		t.Errorf("scheduled %d != acknowledged %d + failed %d", w.Scheduled, w.Units, w.Failed)
	}
	if w.Units != stored || rows != float64(stored) {
		t.Errorf("acknowledged %d (soakd_rows_total %.0f), InfluxDB holds %d", w.Units, rows, stored)
	}
	if w.Values != 10*stored || values != float64(10*stored) {
		t.Errorf("values %d (soakd_values_total %.0f), InfluxDB holds %d (10 a row)", w.Values, values, 10*stored)
	}
	if w.LastError == nil || !strings.Contains(w.LastError.Text, "set START later") ||
		!strings.Contains(w.LastError.Text, "ALTER RETENTION POLICY") {
		t.Errorf("last error %+v: want it to say what to change (START, the retention policy)", w.LastError)
	}
}

// CLOCK=wall into InfluxDB at precision=ms: a batch of 100 rows over 10
// hosts holds 10 of each host's readings, due at the batch's time. Each
// gets a millisecond of its own, so InfluxDB holds every row it
// acknowledged rather than one of each host's per batch.
func TestEngineWallClockCoarsePrecision(t *testing.T) {
	srv := testserver.Influx(t)
	reg, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops",
		"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=wallms&precision=ms", srv.Addr),
		"SOAKD_W_CLOCK":  "wall", "SOAKD_W_SCALE": "10", "SOAKD_W_RATE": "100",
		"SOAKD_W_WORKERS": "2", "SOAKD_W_BATCH_SIZE": "100", "SOAKD_W_DURATION": "3s",
	})
	res := <-done
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	w := res.sum.Workloads[0]
	stored := countField(t, srv, "wallms", "cpu", "usage_user")
	rows := metricSum(t, reg, "soakd_rows_total")
	t.Logf("acknowledged %d (soakd_rows_total %.0f) failed %d; InfluxDB holds %d", w.Units, rows, w.Failed, stored)
	if w.Units < 200 || w.Failed != 0 || stored != w.Units || rows != float64(stored) {
		t.Errorf("acknowledged %d (soakd_rows_total %.0f), failed %d, InfluxDB holds %d: want every acknowledged row stored",
			w.Units, rows, w.Failed, stored)
	}
}

// InfluxDB 1.8's series limits refuse points with an error that names
// the server's setting; soakd's says which of its own settings to lower.
// max-series-per-database counts each point of a write: a batch of 600
// rows of 10 series is refused whole at a limit of 500. max-values-per-tag
// caps the hostnames: 600 hosts are more than 50.
func TestEngineSeriesLimits(t *testing.T) {
	srv := testserver.Influx(t, testserver.InfluxData("max-series-per-database = 500", "max-values-per-tag = 50"))
	for _, c := range []struct {
		name, scale, batch, end, want string
	}{
		{"max-series-per-database", "10", "600", "+10m", "so BATCH_SIZE must be below it"},
		{"max-values-per-tag", "600", "400", "+2m", "lower SCALE, or raise the limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, done := runEngine(t, map[string]string{
				"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops",
				"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=%s", srv.Addr, strings.ReplaceAll(c.name, "-", "_")),
				"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": c.batch, "SOAKD_W_SCALE": c.scale,
				"SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": c.end,
			})
			res := <-done
			w := res.sum.Workloads[0]
			if w.Failed == 0 || w.Units+w.Failed != w.Scheduled {
				t.Errorf("scheduled %d, acknowledged %d, failed %d: want failed rows, adding up", w.Scheduled, w.Units, w.Failed)
			}
			if w.LastError == nil || !strings.Contains(w.LastError.Text, c.name+" limit exceeded") || !strings.Contains(w.LastError.Text, c.want) {
				t.Errorf("last error %+v: want InfluxDB's %s and %q", w.LastError, c.name, c.want)
			}
		})
	}
}

// A field keeps the type it was first written with: a run of massive
// floats into a database an integer run wrote is refused ("field type
// conflict"), and the error says where that comes from and what to do.
func TestEngineFieldTypeConflict(t *testing.T) {
	srv := testserver.Influx(t)
	for _, typ := range []string{"int", "float"} {
		_, done := runEngine(t, map[string]string{
			"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "massive", "SOAKD_W_COLUMNS": "5", "SOAKD_W_COLUMN_TYPE": typ,
			"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=conflict", srv.Addr),
			"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "100", "SOAKD_W_RETRIES": "0",
			"SOAKD_W_SCALE": "10", "SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": "+1m",
		})
		w := (<-done).sum.Workloads[0]
		if typ == "int" {
			if w.Failed != 0 || w.Units == 0 {
				t.Fatalf("first run: acknowledged %d, failed %d: want every row stored", w.Units, w.Failed)
			}
			continue
		}
		if w.Failed == 0 || w.Units+w.Failed != w.Scheduled || w.LastError == nil ||
			!strings.Contains(w.LastError.Text, "field type conflict") || !strings.Contains(w.LastError.Text, "COLUMN_TYPE") {
			t.Errorf("second run: scheduled %d, acknowledged %d, failed %d, last error %+v: want failed rows, adding up, and COLUMN_TYPE named",
				w.Scheduled, w.Units, w.Failed, w.LastError)
		}
	}
}

// A batch larger than InfluxDB 1.8's whole write cache is refused each
// time it is sent ("cache-max-memory-size exceeded"): the error says
// which of soakd's settings relieve it.
func TestEngineCacheFull(t *testing.T) {
	srv := testserver.Influx(t, testserver.InfluxData(`cache-max-memory-size = "1m"`))
	_, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "massive", "SOAKD_W_COLUMNS": "500",
		"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=cache", srv.Addr),
		"SOAKD_W_RATE":   "max", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "500", "SOAKD_W_RETRIES": "0",
		"SOAKD_W_SCALE": "10", "SOAKD_W_START": "2026-01-01T00:00:00Z", "SOAKD_W_END": "+10m",
	})
	res := <-done
	w := res.sum.Workloads[0]
	if w.Failed == 0 || w.Units+w.Failed != w.Scheduled {
		t.Errorf("scheduled %d, acknowledged %d, failed %d: want failed rows, adding up", w.Scheduled, w.Units, w.Failed)
	}
	if w.LastError == nil || !strings.Contains(w.LastError.Text, "cache-max-memory-size exceeded") ||
		!strings.Contains(w.LastError.Text, "BATCH_SIZE") || !strings.Contains(w.LastError.Text, "RATE") {
		t.Errorf("last error %+v: want InfluxDB's cache-max-memory-size, and BATCH_SIZE and RATE named", w.LastError)
	}
}

// CLOCK=wall with offline and late devices: a stream whose devices all
// hold their readings at a batch's time fills less than the batch asks.
// The run still adds up, with nothing in flight at its end, and InfluxDB
// holds every row acknowledged.
func TestEngineWallClockHeldReadingsAddUp(t *testing.T) {
	srv := testserver.Influx(t)
	reg, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "devops",
		"SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=wallheld", srv.Addr),
		"SOAKD_W_CLOCK":  "wall", "SOAKD_W_OFFLINE": "0.5:10s", "SOAKD_W_OUT_OF_ORDER": "0.2:5s",
		"SOAKD_W_SCALE": "10", "SOAKD_W_RATE": "40", "SOAKD_W_WORKERS": "4", "SOAKD_W_BATCH_SIZE": "20", "SOAKD_W_DURATION": "5s",
	})
	res := <-done
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	w := res.sum.Workloads[0]
	stored := countField(t, srv, "wallheld", "cpu", "usage_user")
	t.Logf("scheduled %d = acknowledged %d + failed %d + dropped %d + in flight %d; InfluxDB holds %d",
		w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight, stored)
	if w.Units == 0 || w.InFlight != 0 || w.Units+w.Failed+w.Dropped != w.Scheduled {
		t.Errorf("scheduled %d = acknowledged %d + failed %d + dropped %d + in flight %d: want nothing in flight at the end",
			w.Scheduled, w.Units, w.Failed, w.Dropped, w.InFlight)
	}
	if rows := metricSum(t, reg, "soakd_rows_total"); stored != w.Units || rows != float64(stored) {
		t.Errorf("acknowledged %d (soakd_rows_total %.0f), InfluxDB holds %d", w.Units, rows, stored)
	}
}
