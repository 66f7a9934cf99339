// Package daemon is soakd's engine: the open-loop scheduler (on rate
// profiles from package pace), workers, retry, accounting and latency
// recording, and the run's lifecycle. It runs a config.Config, fills what
// a run reports in package report's schemas, and opens each workload and
// waits for its target through package opener. What it waits with (the
// monotonic origin, the timerfd alarm, the eventfd bell, the re-armed
// write context, the waits between retries) are leaf packages under
// internal/ that know nothing of it.
//
// Features (serve, the thresholds' judge, readback, record, capacity, ...)
// use only its exported surface: Run and its Deps; the Observer interface
// and the optional ones an observer may also implement (observe.go); the
// Handle that shows and steers a workload (view.go); and what a phase
// did, read through a Window or a Snapshot (snapshot.go). README's Layout
// section says which feature uses what; package internal/layout's test
// holds imports to that.
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
