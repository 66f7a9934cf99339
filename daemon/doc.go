// Package daemon is soakd's engine: the open-loop scheduler (on rate
// profiles from package pace), workers, retry, accounting and latency
// recording, and the run's lifecycle. It runs a config.Config, which
// package config loads and validates, and fills what a run reports, whose
// schemas are package report's (the end-of-run summary Run returns, the
// /status document's types). Its metrics and HTTP endpoints are a feature
// on it: package serve. Parts of the engine that stand alone are packages
// under daemon/internal, which no feature imports: the clock (monotonic
// time, precise sleeps), the workers' write context and the record of
// what each stream wrote. It opens each workload,
// and waits for its target, through package opener, below it, which
// soakd verify and sweep share.
//
// Features outside it (a capacity search, a sweep) use only its exported
// surface: Run and its Deps, and the Observer interface, through which a
// feature sees each workload open and each phase begin and end, steers a
// workload through its Handle (rate, pause, resume), reads what a phase
// did through a Window, ends the run with Finish or Fail, adds to /status
// (StatusAdder), judges workloads (Checker: the thresholds' judge), and
// follows each batch written (BatchObserver) to read back what the target
// acknowledged (Verifier: VERIFY's checker, counting into a phase's
// ReadBack). The features that show a run as it goes (packages live,
// progress and history) follow the engine's clock (Ticker) and its end
// (Finisher) and read the workloads through view.go (Handle.Planned,
// Handle.Phases, the state and readiness /status shows). What a phase did so far is one
// Snapshot of it (snapshot.go: its counts, each op's counts and latency
// buckets, the dispatch delay, the read-back checks, read in one go),
// which package readmodel sums into a workload's totals for /metrics,
// /status and the history. Package internal/layout's test holds imports
// to that.
//
// Each workload runs a scheduler that emits tickets (a batch's intended
// start time) at the times its rate profile says, on one reused timer,
// into a small bounded queue. Workers take a ticket, fill a batch from one
// of the source's streams and write it to the sink. Response latency is
// measured from the intended start, service latency from the actual send,
// so a stalled target shows up in the response latency instead of hiding
// behind a slower send rate (no coordinated omission). A ticket that is
// later than MAX_LAG when a worker gets to it is dropped and counted.
// RATE=max runs closed loop: every worker writes batch after batch.
//
// Running a workload in-process (as the integration tests do):
//
//	p := &config.Plugins{Sources: ..., Sinks: reg, Builtin: ...}
//	cfg, err := config.Load(map[string]string{
//		"SOAKD_WORKLOADS":       "w",
//		"SOAKD_W_SOURCE":        "devops",
//		"SOAKD_W_TARGET":        pgURL,
//		"SOAKD_W_RATE":          "max",
//		"SOAKD_LISTEN":          "off",
//	}, p.Sources)
//	if err := cfg.Check(p, err); err != nil { ... }
//	sum, err := daemon.Run(ctx, cfg, daemon.Deps{
//		Logger: zap.NewNop(), Plugins: p,
//	})
//	// sum.Workloads[0].Units: rows (or ops) acknowledged (soakd_rows_total,
//	// with package serve's observer among Deps.Observers)
//
// Run returns when every workload has ended (finite data set, DURATION),
// or ctx is done; cancelling ctx is what SIGTERM does in soakd.
package daemon
