package remotewrite

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/summary"
)

// A query workload beside ingest through the engine, into Prometheus:
// devops rows written as they come (START=now), and devops queries over
// what is written so far. The summary has each query type with its
// response and service latency and its rows; no query that must find rows
// comes back empty, and lastpoint finds every host. The queries start
// 2 s after the ingest (a stage at rate 0), so none runs before the
// first batch is stored, whatever the machine's load.
func TestEngineQueries(t *testing.T) {
	tg := prometheusTarget(t, 0)
	target := tg.write + "?label=run:mixed"
	types := []string{"lastpoint", "single-groupby-1-1-1", "double-groupby-5", "cpu-max-all-1", "groupby-orderby-limit"}
	sum := runEngine(t,
		"SOAKD_WORKLOADS", "ingest,q",
		"SOAKD_INGEST_SOURCE", "devops", "SOAKD_INGEST_SCALE", "20", "SOAKD_INGEST_TARGET", target,
		"SOAKD_INGEST_RATE", "200", "SOAKD_INGEST_BATCH_SIZE", "20", "SOAKD_INGEST_INTERVAL", "1s", "SOAKD_INGEST_DURATION", "6s",
		"SOAKD_Q_SOURCE", "devops-queries", "SOAKD_Q_SCALE", "20", "SOAKD_Q_TARGET", target,
		"SOAKD_Q_RATE", "2s:0,1ms:20,4s:20", "SOAKD_Q_WORKERS", "2", "SOAKD_Q_DURATION", "6s",
		"SOAKD_Q_QUERIES", strings.Join(types, ","))
	var text bytes.Buffer
	summary.WriteText(&text, sum)
	t.Log(text.String())
	ing, q := sum.Workload("ingest", "run"), sum.Workload("q", "run")
	if ing == nil || q == nil {
		t.Fatalf("summary lacks a workload: %+v", sum.Workloads)
	}
	if ing.Units < 500 || q.Units < 50 || q.Kind != "query" {
		t.Errorf("ingest %d rows, %d queries (%s); want about 1200 and 80", ing.Units, q.Units, q.Kind)
	}
	for _, name := range types {
		var found bool
		for _, o := range q.Ops {
			if o.Op != name {
				continue
			}
			found = true
			if o.Count == 0 || o.Response.Count == 0 || o.Service.Count == 0 || o.Rows == 0 {
				t.Errorf("%s: %d queries, %d response and %d service times, %d rows", name, o.Count, o.Response.Count, o.Service.Count, o.Rows)
			}
			if name == "lastpoint" && o.Rows < o.Count*15 {
				t.Errorf("lastpoint: %d rows for %d queries, want about 20 hosts each", o.Rows, o.Count)
			}
		}
		if !found {
			t.Errorf("no %s in the summary", name)
		}
	}
	for _, w := range []string{"ingest", "q"} {
		ws := sum.Workload(w, "run")
		for c, n := range ws.Errors {
			if n > 0 {
				t.Errorf("%s: %d %s errors (%v)", w, n, c, ws.LastError)
			}
		}
	}
}

// A query type without a PromQL form is a configuration error naming
// QUERIES and the type.
func TestEngineQueriesRefused(t *testing.T) {
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_WORKLOADS": "q", "SOAKD_Q_SOURCE": "devops-queries",
		"SOAKD_Q_TARGET": "prom+http://127.0.0.1:1/api/v1/write", "SOAKD_Q_QUERIES": "lastpoint,high-cpu-all"}
	p := enginePlugins()
	cfg, err := config.Load(env, p.Sources)
	err = cfg.Check(p, err)
	var se *settings.Error
	if !errors.As(err, &se) || se.Key != "SOAKD_Q_QUERIES" || !strings.Contains(err.Error(), "high-cpu-all have no PromQL form") {
		t.Errorf("high-cpu-all: %v", err)
	}
	env["SOAKD_Q_SOURCE"], env["SOAKD_Q_QUERIES"] = "iot-queries", "all"
	cfg, err = config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err == nil || !strings.Contains(err.Error(), "last-loc") {
		t.Errorf("iot-queries: %v", err)
	}
}

// A query workload over a data set with CHURN, on Prometheus: the sink
// follows the data's range past device 0's replacement, and every query
// naming hosts finds rows.
func TestChurnedQueries(t *testing.T) {
	tg := prometheusTarget(t, 0)
	target := tg.write + "?label=run:churn"
	start := time.Now().Add(-4 * time.Hour).UTC().Truncate(time.Hour)
	const span = 3 * time.Hour
	var kv []string
	for k, v := range sinktest.ChurnQueryData(target, start, span) {
		kv = append(kv, k, v)
	}
	sum := runEngine(t, kv...)
	if w := sum.Workload("w", "run"); w == nil || w.Units != sinktest.QueryScale*int64(span/sinktest.QueryInterval) {
		t.Fatalf("loading: %+v", w)
	}
	tg.flush(t)
	o := sinktest.ChurnQueryOptions(t)
	s := openSink(t, target, o)
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	sinktest.ChurnQueries(t, s, start, span, sinktest.QueryCase{})

	// Through the engine, which hands the query workload's CHURN to its
	// sink: no query comes back empty, and a 1-hour window of one host
	// has at least 30 minutes of it (its tenure of 50 minutes holds the
	// window's middle), which a sink stuck in device 0's first 10
	// minutes would not find.
	q := runEngine(t, "SOAKD_WORKLOADS", "q", "SOAKD_Q_SOURCE", "devops-queries", "SOAKD_Q_TARGET", target,
		"SOAKD_Q_SCALE", strconv.Itoa(sinktest.QueryScale), "SOAKD_Q_CHURN", sinktest.QueryChurn,
		"SOAKD_Q_QUERIES", "single-groupby-1-1-1,single-groupby-5-8-1,cpu-max-all-1",
		"SOAKD_Q_RATE", "40", "SOAKD_Q_DURATION", "2s").Workload("q", "run")
	if q == nil || q.Units < 40 {
		t.Fatalf("query workload: %+v", q)
	}
	for c, n := range q.Errors {
		if n > 0 {
			t.Errorf("query workload: %d %s errors (%v)", n, c, q.LastError)
		}
	}
	for _, o := range q.Ops {
		if o.Op == "single-groupby-1-1-1" && (o.Count == 0 || o.Rows < 30*o.Count) {
			t.Errorf("single-groupby-1-1-1: %d rows for %d queries, want at least 30 minutes each", o.Rows, o.Count)
		}
	}
}
