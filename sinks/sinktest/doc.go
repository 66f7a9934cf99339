// Package sinktest is the conformance suite every sink runs: it checks
// what the Sink contract in package sinks promises, against the sink's
// real target.
//
//   - stored: what Write acknowledges is what the target holds, counted
//     after Close (which must flush), with Workers concurrent writers; a
//     sinks.TargetWatcher reads its figures (see TargetFigures) after
//     the writes;
//   - close: Close succeeds on a sink that never wrote, and a second Close
//     does nothing;
//   - cancelled: a Write whose context is already done sends nothing (the
//     target holds only what was acknowledged before) and fails with class
//     timeout (or connection);
//   - stalled: a Write (and a Ping) whose context is cancelled while the
//     server has stopped answering (the suite freezes a TCP proxy between
//     the sink and the server) returns within Prompt with class timeout or
//     connection, and Close still returns within Prompt; so does
//     TargetFigures, with a deadline;
//   - refused: a server that refuses connections gives class connection
//     from Write, Prepare, Ping and TargetFigures: a watcher's error
//     means the target is down, never that a figure is hidden.
//
// Every error the suite sees must classify (sinks.ClassOf) to one of
// sinks.Classes. A cancelled write must not fail with class other: the
// engine counts errors by class, and writes cut short at shutdown or by
// SOAKD_<W>_TIMEOUT are timeouts.
//
// A sink's test describes itself in a Harness and says there what it
// cannot do: Count nil (nothing to read back) leaves counts uncompared;
// Server "" (no network target) skips the stalled and refused subtests:
//
//	func TestConformance(t *testing.T) {
//		srv := testserver.Redis(t)
//		sinktest.Run(t, sinktest.Harness{
//			Kinds:  []sources.Kind{sources.KV},
//			Server: srv.Addr,
//			Open: func(t *testing.T, addr string, o sinks.Options) sinktest.Target {
//				... open the sink on addr (srv.Addr when "") and count what it stored
//			},
//		})
//	}
//
// Beside Run, one suite per optional capability (sinks/capabilities.go),
// which a sink's test calls with the target it set up:
//
//   - ReadSeries and ReadRecords (sinks.SeriesReader, sinks.KVReader):
//     what is read back is what was written;
//   - Probe and ProbeRefused (sinks.Prober): Present counts the keys that
//     exist and refuses records the settings cannot use;
//   - Reset (sinks.Resetter): the sink's own part of the target is empty
//     afterwards, and nothing else changed;
//   - Queries (sinks.Querier): every query type of a TSBS data set
//     answers rows of the shape it asks for;
//   - QueryWrite: query batches run in Write, and a batch that fails
//     part-way says how many of its queries were answered (sinks.Partial);
//   - TargetFigures (sinks.TargetWatcher): the target's figures are read,
//     non-negative, under snake_case kinds, and every figure not read is
//     named in Unavailable with why.
//
// FuzzURL is the shared body of every sink's URL fuzz target.
package sinktest
