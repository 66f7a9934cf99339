package redis

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// plugins registers the kv source and this sink the way cmd/soakd does.
func plugins() *config.Plugins {
	r := sinks.NewRegistry()
	r.Add(sinks.Entry{Schemes: Schemes, Kinds: []sources.Kind{sources.KV}, Open: Open, Check: Check})
	return &config.Plugins{
		Sources: sources.NewRegistry(sources.Register(sources.Spec[kv.Config]{
			Names:    []string{"kv"},
			Kind:     sources.KV,
			Validate: func(c *kv.Config, _ sources.Common) error { return c.Validate() },
			New: func(c *kv.Config, w sources.Common) (sources.Source, error) {
				return kv.New(*c, w.Seed, w.Shard)
			},
		})),
		Sinks: r,
	}
}

// runDaemon runs the engine with SOAKD_KV_* settings kv (pairs, without
// the prefix) and returns the summary of the kv workload's run phase.
func runDaemon(t *testing.T, ctx context.Context, log *zap.Logger, kvs ...string) report.WorkloadSummary {
	t.Helper()
	return *runPhase(t, runDaemonSummary(t, ctx, log, kvs...), "run")
}

// runPhase returns the kv workload's summary of phase (run or load).
func runPhase(t *testing.T, sum *report.Summary, phase string) *report.WorkloadSummary {
	t.Helper()
	w := sum.Workload("kv", phase)
	if w == nil {
		t.Fatalf("no %s phase in the summary: %+v", phase, sum.Workloads)
	}
	return w
}

// runDaemonSummary is runDaemon returning the whole summary.
func runDaemonSummary(t *testing.T, ctx context.Context, log *zap.Logger, kvs ...string) *report.Summary {
	t.Helper()
	sum, err := newDaemon(t, log, kvs...).run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum
}

// testDaemon is a checked configuration, ready to run.
type testDaemon struct {
	cfg  *config.Config
	deps daemon.Deps
}

// newDaemon loads and checks SOAKD_KV_* settings kvs (pairs, without the
// prefix). It fails the test on a bad configuration, so it belongs on the
// test goroutine.
func newDaemon(t *testing.T, log *zap.Logger, kvs ...string) testDaemon {
	t.Helper()
	env := map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_WORKLOADS": "kv"}
	for i := 0; i+1 < len(kvs); i += 2 {
		env["SOAKD_KV_"+kvs[i]] = kvs[i+1]
	}
	p := plugins()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Fatalf("config: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	api := serve.New(serve.Options{Config: cfg, Logger: log, Registry: prometheus.NewRegistry(), Listener: ln})
	return testDaemon{cfg, daemon.Deps{Logger: log, Plugins: p, Observers: []daemon.Observer{api}}}
}

// run runs the daemon to its end. It does not use the test, so it may run
// on a goroutine of its own.
func (d testDaemon) run(ctx context.Context) (*report.Summary, error) {
	return daemon.Run(ctx, d.cfg, d.deps)
}

func opSummary(t *testing.T, w report.WorkloadSummary, op string) report.OpSummary {
	t.Helper()
	for _, o := range w.Ops {
		if o.Op == op {
			return o
		}
	}
	t.Fatalf("no %s op in the summary: %+v", op, w.Ops)
	return report.OpSummary{}
}

// LOAD=auto inserts exactly RECORDS records, then runs the workload; a
// second run finds them and skips the load.
func TestDaemonLoadAuto(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	settings := []string{"TARGET", srv.URL + "?index=false", "RECORDS", "3000", "WORKLOAD", "c", "RATE", "max",
		"WORKERS", "4", "PIPELINE", "8", "DURATION", "1s", "DATA_TYPE", "hash", "KEY_PREFIX", "auto:"}
	sum := runDaemonSummary(t, context.Background(), zaptest.NewLogger(t), settings...)
	w, load := *runPhase(t, sum, "run"), *runPhase(t, sum, "load")
	if n, _ := a.DBSize(context.Background()).Result(); n != 3000 {
		t.Fatalf("DBSIZE = %d after LOAD=auto, want 3000", n)
	}
	if hset := serverCalls(t, a, "hset"); hset != 3000 {
		t.Fatalf("%d HSETs, want the 3000 of the load", hset)
	}
	read := opSummary(t, w, "read")
	var errs int64
	for _, n := range w.Errors {
		errs += n
	}
	if read.Count == 0 || errs != 0 || w.Failed != 0 {
		t.Fatalf("reads %d, failed %d, errors %v", read.Count, w.Failed, w.Errors)
	}
	if insert := opSummary(t, load, "insert"); insert.Count != 3000 || load.Units != 3000 || load.Scheduled != 3000 {
		t.Fatalf("the load phase inserted %d records, want 3000", insert.Count)
	}
	runDaemon(t, context.Background(), zaptest.NewLogger(t), settings...)
	if hset := serverCalls(t, a, "hset"); hset != 3000 {
		t.Fatalf("%d HSETs after a second run: the load ran again", hset)
	}
}

// A restart of redis-server in the middle of a run: the failures are
// counted as connection errors, and writing resumes. The daemon runs on a
// goroutine of its own; the test goroutine restarts the server, so a
// failed restart can fail the test.
func TestDaemonServerRestart(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	// One field per record: the restarted server holds nothing, and an
	// update makes its record whole again, so reads find records again
	// within a second or two of it, whenever the restart falls. With
	// several fields an update writes one of them, reads of the others
	// miss for the rest of the run, and how many units are acknowledged
	// would depend on how late the restart fell after the load phase (a
	// busy machine loads slower), not on the sink.
	d := newDaemon(t, zap.NewNop(), "TARGET", srv.URL, "RECORDS", "1000", "WORKLOAD", "a",
		"RATE", "2000", "WORKERS", "8", "PIPELINE", "4", "DURATION", "6s", "MAX_LAG", "10s", "RETRIES", "0",
		"DATA_TYPE", "hash", "FIELDS", "1", "KEY_PREFIX", "rs:")
	type result struct {
		sum *report.Summary
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		defer close(done)
		sum, err := d.run(ctx)
		done <- result{sum, err}
	}()
	// However the test ends (a failed restart ends it), the run ends
	// first: done is closed once it has returned.
	defer func() {
		cancel()
		for range done {
		}
	}()
	time.Sleep(2 * time.Second)
	srv.Restart(t)
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	w := *runPhase(t, r.sum, "run")
	t.Logf("units %d failed %d dropped %d errors %v", w.Units, w.Failed, w.Dropped, w.Errors)
	if w.Errors[string(sinks.Connection)] == 0 {
		t.Errorf("no connection errors counted across a restart: %v", w.Errors)
	}
	if other := w.Errors[string(sinks.Other)]; other != 0 {
		t.Errorf("%d unclassified errors", other)
	}
	// No persistence: the restarted server started empty, so every key
	// there was written after the restart.
	if n, _ := a.DBSize(context.Background()).Result(); n == 0 {
		t.Error("no writes after the restart")
	}
	if w.Units < 8000 {
		t.Errorf("only %d ops acknowledged in 6 s at 2000/s", w.Units)
	}
}

// SIGSTOP for 1 s at a constant rate: the response p99 (from the intended
// start) shows the stall, the service p99 (from the send) does not.
func TestDaemonStallShowsInResponseLatency(t *testing.T) {
	srv := testserver.Redis(t)
	go func() {
		time.Sleep(2500 * time.Millisecond)
		_ = srv.Signal(syscall.SIGSTOP)
		time.Sleep(time.Second)
		_ = srv.Signal(syscall.SIGCONT)
	}()
	w := runDaemon(t, context.Background(), zap.NewNop(), "TARGET", srv.URL, "RECORDS", "1000", "WORKLOAD", "c",
		"RATE", "1000", "WORKERS", "8", "PIPELINE", "1", "DURATION", "6s", "MAX_LAG", "10s",
		"DATA_TYPE", "string", "FIELDS", "1", "KEY_PREFIX", "st:")
	read := opSummary(t, w, "read")
	t.Logf("reads %d: response p50 %.4fs p99 %.4fs max %.4fs; service p50 %.4fs p99 %.4fs max %.4fs; errors %v dropped %d",
		read.Count, read.Response.P50, read.Response.P99, read.Response.Max,
		read.Service.P50, read.Service.P99, read.Service.Max, w.Errors, w.Dropped)
	if read.Response.P99 < 0.5 {
		t.Errorf("response p99 %.3fs, want >= 0.5s: the stall is hidden", read.Response.P99)
	}
	if read.Service.P99 >= 0.5 {
		t.Errorf("service p99 %.3fs, want < 0.5s: only the few reads in flight saw the stall", read.Service.P99)
	}
	if read.Service.Max < 0.8 {
		t.Errorf("service max %.3fs: the reads in flight during the stall should have waited ~1s", read.Service.Max)
	}
}

// A load phase whose every insert the target refuses (a user whose ACL
// lacks HSET) ends the workload there: no run phase reads records that
// are not there, and the summary's failure is the load's, with its
// reason. Bug caught: the run phase ran its whole DURATION and the
// summary's last error was a read's "empty", NOPERM nowhere in it.
func TestDaemonLoadRefusedEndsTheWorkload(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	if err := a.Do(context.Background(), "ACL", "SETUSER", "nohset", "on", ">pw", "~*", "&*", "+@all", "-hset").Err(); err != nil {
		t.Fatal(err)
	}
	target := strings.Replace(srv.URL, "redis://", "redis://nohset:pw@", 1)
	sum := runDaemonSummary(t, context.Background(), zaptest.NewLogger(t), "TARGET", target+"?index=false", "RECORDS", "500",
		"WORKLOAD", "c", "RATE", "1000", "DURATION", "5s", "DATA_TYPE", "hash", "KEY_PREFIX", "refused:", "RETRIES", "0")
	load := runPhase(t, sum, "load")
	if load.Units != 0 || load.Failed != 500 {
		t.Fatalf("load phase: acknowledged %d, failed %d; want 0 and 500", load.Units, load.Failed)
	}
	if w := sum.Workload("kv", "run"); w != nil {
		t.Errorf("a run phase ran after a load whose every insert was refused: %+v", *w)
	}
	f := sum.Workloads[len(sum.Workloads)-1].Failure
	if f == nil || !strings.Contains(f.LastError, "NOPERM") {
		t.Errorf("the workload's failure %+v does not give the load's reason (NOPERM)", f)
	}
}

// A command the server does not know (disabled with rename-command)
// fails every operation that sends it, and the error says so and what to
// change: the reply named neither. Bug caught: reads on a server with
// HMGET renamed away failed all run long as "ERR unknown command
// 'HMGET'" alone, and the load probe's TYPE refused said to check what
// the target holds and what the user may do.
func TestDaemonUnknownCommandSaysWhatToChange(t *testing.T) {
	srv := testserver.Redis(t, "--rename-command", "HMGET", "")
	w := runDaemon(t, context.Background(), zaptest.NewLogger(t), "TARGET", srv.URL+"?index=false", "RECORDS", "200",
		"WORKLOAD", "c", "RATE", "500", "DURATION", "1s", "DATA_TYPE", "hash", "KEY_PREFIX", "unknown:", "RETRIES", "0")
	if w.Units != 0 || w.Failed == 0 || w.LastError == nil {
		t.Fatalf("reads on a server without HMGET: acknowledged %d, failed %d, last error %+v", w.Units, w.Failed, w.LastError)
	}
	for _, want := range []string{"does not know HMGET", "rename-command", "DATA_TYPE=hash"} {
		if !strings.Contains(w.LastError.Text, want) {
			t.Errorf("the last error does not say %q: %s", want, w.LastError.Text)
		}
	}
}
