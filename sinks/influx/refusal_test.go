package influx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// refusedAtSetup runs the workload w writing to target through the
// engine and returns its error, which must be the configuration error
// (exit 2) naming SOAKD_W_TARGET that a target refusing a setup step is.
// SOAKD_DURATION bounds a run that starts writing instead.
func refusedAtSetup(t *testing.T, target string) error {
	t.Helper()
	_, done := runEngine(t, map[string]string{
		"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": target,
		"SOAKD_W_RATE": "1000", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "100",
		"SOAKD_W_DEVICES": "10", "SOAKD_DURATION": "3s",
	})
	res := <-done
	var ce *settings.Error
	if !errors.As(res.err, &ce) || ce.Key != "SOAKD_W_TARGET" || !strings.Contains(ce.Error(), `refused "prepare"`) {
		w := ""
		if res.sum != nil && len(res.sum.Workloads) > 0 {
			w = fmt.Sprintf(" (acknowledged %d, failed %d, errors %v)", res.sum.Workloads[0].Units, res.sum.Workloads[0].Failed, res.sum.Workloads[0].Errors)
		}
		t.Fatalf("run to %s ended with %v%s, want a configuration error naming SOAKD_W_TARGET at prepare", target, res.err, w)
	}
	return res.err
}

// A retention policy the database does not have (?rp=, or the bucket's
// DB/RP through 1.8's v2 API) is refused at prepare, naming the policy,
// the database and the policies it has: a configuration error (exit 2),
// not a run whose every write InfluxDB answers 500 "retention policy not
// found". A policy dropped mid-run makes the writes rejected, not
// retried.
func TestMissingRetentionPolicy(t *testing.T) {
	srv := testserver.Influx(t)
	srv.InfluxExec(t, "", "CREATE DATABASE soak3")
	ctx := context.Background()
	schemas := []*sources.Schema{cpuSchema("cpu")}

	for _, raw := range []string{
		"influx1://%s?db=soak3&rp=nosuchrp",
		"influx1://%s?db=soak3&rp=nosuchrp&create=false",
		"influx://%s?bucket=soak3/nosuchrp",
	} {
		target := fmt.Sprintf(raw, srv.Addr)
		s := openSink(t, target, sinks.Options{Schemas: schemas})
		err := s.Prepare(ctx)
		if sinks.ClassOf(err) != sinks.Rejected {
			t.Fatalf("Prepare(%s) = %v, want rejected", target, err)
		}
		for _, want := range []string{`retention policy "nosuchrp" not found on database "soak3"`, `"autogen"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Prepare(%s) = %q, want it to say %q", target, err, want)
			}
		}
	}
	err := refusedAtSetup(t, fmt.Sprintf("influx1://%s?db=soak3&rp=nosuchrp", srv.Addr))
	if !strings.Contains(err.Error(), `"nosuchrp"`) || !strings.Contains(err.Error(), `"soak3"`) {
		t.Errorf("the configuration error does not name the retention policy and the database: %v", err)
	}

	// The policy exists at prepare and is dropped mid-run.
	srv.InfluxExec(t, "", "CREATE RETENTION POLICY short ON soak3 DURATION 1h REPLICATION 1")
	s := openSink(t, fmt.Sprintf("influx1://%s?db=soak3&rp=short", srv.Addr), sinks.Options{Schemas: schemas})
	if err := s.Prepare(ctx); err != nil {
		t.Fatalf("Prepare with an existing retention policy: %v", err)
	}
	b := sources.NewSeriesBatch(schemas)
	g := &gen{devices: 3, start: time.Now().Add(-time.Minute), step: time.Second}
	g.fill(b, 10)
	if _, err := s.Write(ctx, b); err != nil {
		t.Fatalf("Write: %v", err)
	}
	srv.InfluxExec(t, "", "DROP RETENTION POLICY short ON soak3")
	g.fill(b, 10)
	_, err = s.Write(ctx, b)
	var se *StatusError
	if sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(se.Message, "retention policy not found") {
		t.Fatalf("Write after the retention policy was dropped = %v, want rejected with InfluxDB's 500 retention policy not found", err)
	}
	if retry, _ := sinks.Retryable(err); retry {
		t.Error("a write to a dropped retention policy is marked retryable")
	}
}

// With create=false a database that does not exist is refused at prepare,
// naming it, through both APIs (1.8's v2 API: bucket=DB or DB/RP): a
// configuration error (exit 2), not a run whose every write InfluxDB
// answers 404 "database not found". An existing database passes.
func TestMissingDatabase(t *testing.T) {
	srv := testserver.Influx(t)
	srv.InfluxExec(t, "", "CREATE DATABASE present")
	ctx := context.Background()
	schemas := []*sources.Schema{cpuSchema("cpu")}
	for _, raw := range []string{
		"influx1://%s?db=soak&create=false",
		"influx1://%s?db=soak&rp=autogen&create=false",
		"influx://%s?bucket=soak/autogen&create=false",
		"influx://%s?bucket=soak&create=false",
	} {
		target := fmt.Sprintf(raw, srv.Addr)
		s := openSink(t, target, sinks.Options{Schemas: schemas})
		err := s.Prepare(ctx)
		if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), `database "soak" not found`) || !strings.Contains(err.Error(), `"present"`) {
			t.Errorf("Prepare(%s) = %v, want rejected naming the database and those there are", target, err)
		}
	}
	for _, raw := range []string{"influx1://%s?db=present&create=false", "influx://%s?bucket=present/autogen&create=false"} {
		s := openSink(t, fmt.Sprintf(raw, srv.Addr), sinks.Options{Schemas: schemas})
		if err := s.Prepare(ctx); err != nil {
			t.Errorf("Prepare(%s) of an existing database: %v", raw, err)
		}
	}
	err := refusedAtSetup(t, fmt.Sprintf("influx://%s?bucket=soak/autogen&create=false", srv.Addr))
	if !strings.Contains(err.Error(), `database "soak" not found`) {
		t.Errorf("the configuration error does not name the database: %v", err)
	}
}

// A front end that takes InfluxDB 1.x writes but lists nothing (Telegraf's
// influxdb_listener answers /query with {"results":[]}; a relay serves no
// /query at all) cannot say whether the database or retention policy is
// there: Prepare lets the writes tell, and refuses nothing. Bug caught:
// "database not found … (none)" and "retention policy not found (it has
// none)" for a target that takes the writes.
func TestWriteOnlyFrontEndNotRefused(t *testing.T) {
	for name, query := range map[string]http.HandlerFunc{
		"empty results": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"results":[]}`) },
		"no /query":     http.NotFound,
	} {
		t.Run(name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Influxdb-Version", "1.8.10")
				w.WriteHeader(http.StatusNoContent)
			})
			mux.HandleFunc("/query", query)
			mux.HandleFunc("/write", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			srv := httptest.NewServer(mux)
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			for _, raw := range []string{"influx1://%s?db=soak&create=false", "influx1://%s?db=soak&rp=hour&create=false", "influx://%s?bucket=soak/hour&create=false"} {
				s := openSink(t, fmt.Sprintf(raw, host), sinks.Options{Schemas: []*sources.Schema{cpuSchema("cpu")}})
				if err := s.Prepare(context.Background()); err != nil {
					t.Errorf("Prepare(%s) against a front end that lists nothing: %v", raw, err)
				}
			}
		})
	}
}

// A source whose readings of one device are closer together than the
// times the target keeps (INTERVAL=500ms into precision=s) is refused
// before anything is written: a configuration error (exit 2) naming
// SOAKD_W_INTERVAL and the target's resolution. The same INTERVAL into
// precision=ms runs. Bug caught: InfluxDB overwrote same-second points,
// soakd verify found 960 of 2,000 acknowledged rows lost.
func TestIntervalFinerThanPrecision(t *testing.T) {
	srv := testserver.Influx(t)
	run := func(precision string) engineRun {
		_, done := runEngine(t, map[string]string{
			"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": "seq", "SOAKD_W_TARGET": fmt.Sprintf("influx1://%s?db=fine&precision=%s", srv.Addr, precision),
			"SOAKD_W_RATE": "1000", "SOAKD_W_WORKERS": "1", "SOAKD_W_BATCH_SIZE": "100",
			"SOAKD_W_DEVICES": "10", "SOAKD_W_INTERVAL": "500ms", "SOAKD_DURATION": "1s",
		})
		return <-done
	}
	res := run("s")
	var ce *settings.Error
	if !errors.As(res.err, &ce) || ce.Key != "SOAKD_W_INTERVAL" || !strings.Contains(ce.Error(), "(1s)") {
		t.Fatalf("INTERVAL=500ms into precision=s: %v, want a configuration error naming SOAKD_W_INTERVAL and 1s", res.err)
	}
	if res := run("ms"); res.err != nil || res.sum == nil || res.sum.Workloads[0].Units == 0 {
		t.Fatalf("INTERVAL=500ms into precision=ms: %v, want rows written", res.err)
	}
}
