package postgres

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/summary"
)

// TestMixedRun runs ingest and queries at constant rates at the same
// time against TimescaleDB, as one soakd process: devops rows into
// hypertables, and devops queries over what is written so far. Both show
// in the summary and on /metrics, per query type; no query that must find
// rows comes back empty.
func TestMixedRun(t *testing.T) {
	srv := testserver.TimescaleDB(t)
	db := newDB(t, srv, "mixed")
	target := withParams(db, "dialect", "timescaledb")
	env := map[string]string{
		"SOAKD_WORKLOADS": "ingest,q", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_INGEST_SOURCE": "devops", "SOAKD_INGEST_SCALE": "20", "SOAKD_INGEST_TARGET": target,
		"SOAKD_INGEST_RATE": "2000", "SOAKD_INGEST_BATCH_SIZE": "200", "SOAKD_INGEST_DURATION": "6s",
		"SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_SCALE": "20", "SOAKD_Q_TARGET": target,
		"SOAKD_Q_RATE": "20", "SOAKD_Q_WORKERS": "2", "SOAKD_Q_DURATION": "6s",
		"SOAKD_Q_QUERIES": "lastpoint,single-groupby-1-1-1,double-groupby-5,high-cpu-all,groupby-orderby-limit",
	}
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	type result struct {
		sum *report.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: reg, Listener: l})
		sum, err := daemon.Run(t.Context(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{api}})
		done <- result{sum, err}
	}()
	// /metrics while both run.
	var metrics string
	waitFor(t, 20e9, "both workloads on /metrics", func() bool {
		resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		metrics = string(b)
		return strings.Contains(metrics, `soakd_ops_total{op="lastpoint",result="ok",workload="q"} `) &&
			!strings.Contains(metrics, `soakd_ops_total{op="lastpoint",result="ok",workload="q"} 0`) &&
			!strings.Contains(metrics, `soakd_rows_total{workload="ingest"} 0`)
	})
	for _, want := range []string{
		`soakd_query_rows_total{op="lastpoint",workload="q"}`,
		`soakd_response_seconds_count{op="double-groupby-5",workload="q"}`,
		`soakd_errors_total{class="empty",op="lastpoint",workload="q"} 0`,
		`soakd_ops_total{op="write",result="ok",workload="ingest"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	var text bytes.Buffer
	summary.WriteText(&text, res.sum)
	t.Log(text.String())
	ing, q := res.sum.Workload("ingest", "run"), res.sum.Workload("q", "run")
	if ing == nil || q == nil {
		t.Fatalf("summary lacks a workload: %+v", res.sum.Workloads)
	}
	if ing.Units < 10000 || q.Units < 100 || q.Kind != "query" {
		t.Errorf("ingest %d rows, %d queries (%s); want about 12000 and 120", ing.Units, q.Units, q.Kind)
	}
	ops := map[string]report.OpSummary{}
	for _, o := range q.Ops {
		ops[o.Op] = o
	}
	for _, name := range []string{"lastpoint", "single-groupby-1-1-1", "double-groupby-5", "high-cpu-all", "groupby-orderby-limit"} {
		if ops[name].Count == 0 {
			t.Errorf("no %s in the summary", name)
		}
	}
	if lp := ops["lastpoint"]; lp.Rows < lp.Count*15 {
		t.Errorf("lastpoint: %d rows for %d queries, want about 20 hosts each", lp.Rows, lp.Count)
	}
	if len(q.Notes) != 0 || len(ing.Notes) != 0 {
		t.Errorf("notes in the summary of a run that found its data in hypertables: %q, %q", q.Notes, ing.Notes)
	}
	if sumErrors(q.Errors) > 0 || sumErrors(ing.Errors) > 0 {
		t.Errorf("errors: queries %v, ingest %v (%v)", q.Errors, ing.Errors, q.LastError)
	}
	for _, want := range []string{"ran ", " queries in ", "LASTPOINT response", "StdDev(us)", "== workload ingest", "loaded "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary text lacks %q", want)
		}
	}
	_ = context.Background
}

// TestSummaryNotesPlainTables: dialect=timescaledb against a PostgreSQL
// that does not preload TimescaleDB gets plain tables, and the summary
// says so beside its figures, not only the log: a run read from its
// summary (or its report) must not pass for one into hypertables.
func TestSummaryNotesPlainTables(t *testing.T) {
	srv := testserver.Postgres(t)
	target := withParams(newDB(t, srv, "notes"), "dialect", "timescaledb")
	env := map[string]string{
		"SOAKD_WORKLOADS": "ingest", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_INGEST_SOURCE": "devops", "SOAKD_INGEST_SCALE": "5", "SOAKD_INGEST_TARGET": target,
		"SOAKD_INGEST_RATE": "500", "SOAKD_INGEST_BATCH_SIZE": "50", "SOAKD_INGEST_DURATION": "1s",
	}
	sum := runWorkloads(t, env)
	const want = "dialect=timescaledb, but plain tables, not hypertables: the server does not preload timescaledb (shared_preload_libraries)"
	w := sum.Workload("ingest", "run")
	if w == nil || w.Units == 0 || len(w.Notes) != 1 || w.Notes[0] != want {
		t.Fatalf("summary notes: %+v, want [%s]", w, want)
	}
	var text bytes.Buffer
	summary.WriteText(&text, sum)
	if !strings.Contains(text.String(), "\nnote: "+want+"\n") {
		t.Errorf("summary text lacks the note:\n%s", text.String())
	}
}

// TestSummaryNotesNoDataToQuery: a query workload whose tables hold no
// rows (a writer that wrote nothing, or elsewhere) answers every query
// with no rows: the summary says that no data was found the whole run,
// naming where it looked.
func TestSummaryNotesNoDataToQuery(t *testing.T) {
	srv := testserver.Postgres(t)
	target := newDB(t, srv, "nodata")
	// The ingest creates the tables and writes nothing: its first batch
	// of 1,000 rows at 1 row/s is due after the run.
	env := map[string]string{
		"SOAKD_WORKLOADS": "ingest,q", "SOAKD_PROGRESS_INTERVAL": "0",
		"SOAKD_INGEST_SOURCE": "devops", "SOAKD_INGEST_SCALE": "5", "SOAKD_INGEST_TARGET": target,
		"SOAKD_INGEST_RATE": "1", "SOAKD_INGEST_BATCH_SIZE": "1000", "SOAKD_INGEST_DURATION": "2s",
		"SOAKD_Q_SOURCE": "devops-queries", "SOAKD_Q_SCALE": "5", "SOAKD_Q_TARGET": target,
		"SOAKD_Q_RATE": "20", "SOAKD_Q_DURATION": "2s", "SOAKD_Q_QUERIES": "lastpoint",
	}
	sum := runWorkloads(t, env)
	w := sum.Workload("q", "run")
	if w == nil || w.Units == 0 || len(w.Notes) != 1 || !strings.Contains(w.Notes[0], "no data found to query in table") {
		t.Fatalf("summary of queries over no data: %+v", w)
	}
	var text bytes.Buffer
	summary.WriteText(&text, sum)
	if !strings.Contains(text.String(), "\nnote: no data found to query in table") {
		t.Errorf("summary text lacks the note:\n%s", text.String())
	}
}

// runWorkloads loads and checks env (SOAKD_* settings, its own
// SOAKD_WORKLOADS) and runs it to its end, as soakd run does.
func runWorkloads(t *testing.T, env map[string]string) *report.Summary {
	t.Helper()
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	res := run(t.Context(), cfg, p, prometheus.NewRegistry())
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res.sum
}
