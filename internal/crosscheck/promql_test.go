package crosscheck

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/remotewrite"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

func promPlugins() *config.Plugins {
	p := plugins()
	p.Sinks.Add(sinks.Entry{Schemes: remotewrite.Schemes, Kinds: []sources.Kind{sources.Series, sources.Queries},
		Open: remotewrite.Open, Check: remotewrite.Check, CheckQueries: remotewrite.CheckQueries})
	return p
}

// TestSQLAndPromQLAgree writes the devops data set into PostgreSQL and
// Prometheus (remote write) and runs every query type with a PromQL form
// on both, with windows that start and end on bucket boundaries (where
// PromQL's whole buckets are SQL's window): every column of the PromQL
// answer is in the SQL one, row for row, value for value.
func TestSQLAndPromQLAgree(t *testing.T) {
	pg := testserver.Postgres(t)
	// Writes come in time order from one worker; the window only spares
	// the test a refusal should the engine ever reorder two batches.
	prom := testserver.PrometheusReceiver(t, 2*time.Hour)
	targets := map[string]string{
		"pg":   pg.CreateDatabase(t, "devops_promql"),
		"prom": "prom+http://" + prom.Addr + "/api/v1/write",
	}
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "pg,prom"}
	for w, target := range targets {
		p := config.Prefix(w)
		env[p+"SOURCE"], env[p+"TARGET"], env[p+"SEED"] = "devops", target, "3"
		env[p+"START"], env[p+"RATE"], env[p+"BATCH_SIZE"], env[p+"WORKERS"] = "2016-01-01T00:00:00Z", "max", "5000", "1"
		for k, v := range dataSet["devops"] {
			env[p+k] = v
		}
	}
	p := promPlugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatal(err)
	}
	sum, err := daemon.Run(t.Context(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range sum.Workloads {
		for c, n := range w.Errors {
			if n > 0 {
				t.Fatalf("loading devops into %s: %d %s errors: %v", w.Name, n, c, w.LastError)
			}
		}
	}
	sql := open(t, targets["pg"], "devops")
	pq := openProm(t, targets["prom"])
	if a, b := sql.DataRange(), pq.DataRange(); a != b || !a.Known {
		t.Fatalf("data ranges differ: SQL %+v, PromQL %+v", a, b)
	}
	var scale int
	fmt.Sscan(dataSet["devops"]["SCALE"], &scale)
	for _, typ := range remotewrite.PromQLTypes() {
		if typ.Info().UseCase != sources.UseDevops {
			continue
		}
		// Pos 0: the window starts with the data, on the hour, and ends
		// on a whole hour after it.
		q := variants(typ, scale)[0]
		q.Pos = 0
		name := fmt.Sprintf("%s devices=%v", typ, q.Devices[:q.NDevices])
		q1, q2 := q, q
		a, err := sql.QueryRows(t.Context(), &q1)
		if err != nil {
			t.Fatalf("%s: SQL: %v", name, err)
		}
		b, err := pq.QueryRows(t.Context(), &q2)
		if err != nil {
			text, _ := pq.QueryText(&q2)
			t.Fatalf("%s: PromQL: %v\n%s", name, err, text)
		}
		if q1.Rows != q2.Rows || q1.Rows == 0 {
			t.Errorf("%s: SQL %d rows, PromQL %d", name, q1.Rows, q2.Rows)
		}
		// The PromQL answer's columns are a subset of the SQL one's
		// (lastpoint's SQL has the tags' and rows' ids too).
		compare(t, name+" (PromQL answer as first, SQL as second)", b, a)
	}
}

func openProm(t *testing.T, raw string) querySink {
	t.Helper()
	c := iot.DefaultQueryConfig()
	fmt.Sscan(dataSet["devops"]["SCALE"], &c.Scale)
	src, err := iot.NewQueries("devops-queries", c, 3)
	if err != nil {
		t.Fatal(err)
	}
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s, err := remotewrite.Open(t.Context(), u, sinks.Options{Kind: sources.Queries, Workers: 1, Schemas: src.Schemas(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	qs := s.(querySink)
	if err := qs.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	return qs
}
