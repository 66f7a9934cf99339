package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/internal/lateproxy"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// waitStatus polls /status until ok holds for the named workload and
// returns it with the document's text; on every poll the text must not
// hold secret.
func (r *lateRun) waitStatus(t *testing.T, name, secret, what string, ok func(*report.StatusWorkload) bool) (*report.StatusWorkload, string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		select {
		case code := <-r.done:
			r.done <- code // for the cleanup
			t.Fatalf("soakd ended (exit %d) before /status showed %s; it said:\n%s\nstderr:\n%s", code, what, last, tail(r.stderr.String(), 3000))
		default:
		}
		code, body := r.get("/status")
		if code == http.StatusOK {
			last = body
			if strings.Contains(body, secret) {
				t.Fatalf("/status shows the password:\n%s", body)
			}
			var st report.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatalf("/status: %v\n%s", err, body)
			}
			for i := range st.Workloads {
				if w := &st.Workloads[i]; w.Name == name && ok(w) {
					return w, body
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("/status never showed %s; last:\n%s", what, last)
	return nil, ""
}

// While a workload waits for its target, /status shows what it waits
// for: the target (password redacted), the step, the failed attempts, the
// next retry and the last error with its class; once the target is up and
// the workload runs, no waiting object.
func TestStatusShowsWaiting(t *testing.T) {
	const secret = "status-Pass-7kw"
	pg := testserver.Postgres(t)
	p := lateproxy.New(t, pg.Addr)
	r := startLate(t, map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_SCALE": "10",
		"SOAKD_IOT_TARGET": fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", secret, p.Addr()),
		"SOAKD_IOT_RATE":   "200", "SOAKD_IOT_BATCH_SIZE": "20", "SOAKD_IOT_DURATION": "5s"})
	w, body := r.waitStatus(t, "iot", secret, "a waiting object with two failed connects", func(w *report.StatusWorkload) bool {
		return w.Waiting != nil && w.Waiting.Attempts >= 2
	})
	t.Logf("/status while the target is down:\n%s", body)
	wt := w.Waiting
	if w.State != "starting" || w.Ready {
		t.Errorf("state %q, ready %v: want starting, not ready", w.State, w.Ready)
	}
	if wt.Step != "connect" || wt.Class != "connection" || !strings.Contains(wt.LastError, "connection refused") ||
		!strings.Contains(wt.Target, p.Addr()) || !strings.Contains(wt.Target, "xxxxx") {
		t.Errorf("waiting %+v: want the connect step, a connection error saying connection refused, the target redacted", *wt)
	}
	if wt.NextRetrySeconds < 0 || wt.NextRetrySeconds > 10 || wt.Seconds <= 0 {
		t.Errorf("waiting %+v: want the next retry within the backoff's 5 s (+jitter), some seconds waited", *wt)
	}
	// The console's view says so too, in the workload's section.
	if code, view := r.get("/console/view"); code != http.StatusOK || !strings.Contains(view, "starting: waiting for the target (connect;") ||
		!strings.Contains(view, "connection refused") || strings.Contains(view, secret) {
		t.Errorf("/console/view %d while the target is down: want the workload waiting for its connect step, no password:\n%s", code, tail(view, 3000))
	}
	p.Up(t)
	_, body = r.waitStatus(t, "iot", secret, "the workload running", func(w *report.StatusWorkload) bool {
		return w.State == "running" || w.State == "done"
	})
	if strings.Contains(body, `"waiting"`) {
		t.Errorf("/status still shows a waiting object once the workload runs:\n%s", body)
	}
	code, sum := r.wait(t)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, tail(r.stderr.String(), 3000))
	}
	checkBooks(t, sum, "iot", "run")
	if strings.Contains(r.stderr.String()+r.stdout.String(), secret) {
		t.Error("the password appears in the log or the summary")
	}
}

// A target that goes down between setup steps: connect passed, prepare
// (its CREATE SCHEMA held up by another session's uncommitted one) loses
// its connection when the server goes away, and is retried while the
// target is down; /status says so (step prepare, a connection error).
// When the target is back the workload prepares and the run completes.
func TestTargetDownBetweenSteps(t *testing.T) {
	const secret = "between-Pass-2nv"
	pg := testserver.Postgres(t)
	ctx := t.Context()
	holder := testserver.PGConn(t, pg.URL)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// soakd's CREATE SCHEMA IF NOT EXISTS waits for this transaction.
	if _, err := tx.Exec(ctx, "CREATE SCHEMA soakd_between"); err != nil {
		t.Fatal(err)
	}
	p := lateproxy.New(t, pg.Addr)
	p.Up(t)
	r := startLate(t, map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_SOURCE": "devops", "SOAKD_IOT_SCALE": "10",
		"SOAKD_IOT_TARGET": fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable&schema=soakd_between", secret, p.Addr()),
		"SOAKD_IOT_RATE":   "200", "SOAKD_IOT_BATCH_SIZE": "20", "SOAKD_IOT_DURATION": "3s"})
	w, _ := r.waitStatus(t, "iot", secret, "the prepare step under way", func(w *report.StatusWorkload) bool {
		return w.Waiting != nil && w.Waiting.Step == "prepare"
	})
	if w.Waiting.Attempts != 0 || w.Waiting.NextRetrySeconds != 0 || w.Waiting.LastError != "" {
		t.Errorf("waiting %+v: want the first attempt of prepare running, no failed attempt yet", *w.Waiting)
	}
	p.Down() // the server goes away under prepare's statement
	w, body := r.waitStatus(t, "iot", secret, "prepare failing with a connection error", func(w *report.StatusWorkload) bool {
		return w.Waiting != nil && w.Waiting.Attempts >= 2
	})
	t.Logf("/status while the target is down during prepare:\n%s", body)
	if w.Waiting.Step != "prepare" || w.Waiting.Class != "connection" {
		t.Errorf("waiting %+v: want the prepare step failing with a connection error", *w.Waiting)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	p.Up(t)
	code, sum := r.wait(t)
	if code != cli.ExitOK {
		t.Fatalf("exit %d once the target came back\nstderr:\n%s", code, tail(r.stderr.String(), 3000))
	}
	checkBooks(t, sum, "iot", "run")
	var n int
	if err := holder.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'soakd_between'").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d schemas soakd_between (%v): want the one soakd created", n, err)
	}
	if strings.Contains(r.stderr.String()+r.stdout.String(), secret) {
		t.Error("the password appears in the log or the summary")
	}
}
