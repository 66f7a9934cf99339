// Package sources defines the batches that flow from generators to sinks and
// the interfaces generators implement.
//
// A Source describes a data set (its kind, its tables) and hands out Streams:
// independent, disjoint cursors over that data set, one per worker. A Stream
// appends the next units (rows or key-value operations) into a Batch that the
// caller owns and reuses, so steady-state generation does not allocate.
//
//	src, _ := iot.New("devops", cfg, seed, sources.Shard{}) // a Source
//	st, _ := src.Stream(0, 4)                               // worker 0 of 4
//	b := sources.NewSeriesBatch(src.Schemas())
//	for {
//		b.Reset()
//		err := st.Fill(&b, 1000, time.Now().UnixNano())
//		// ... write b ...
//		if errors.Is(err, sources.ErrDone) { break }
//	}
//
// Sources are registered, as sinks are, in a Registry that the
// composition root (cmd/soakd/plugins) fills: Register ties a source's
// names and kind to its own settings struct, so that each workload gets
// typed settings (Settings) and the source is built from them and the
// workload's Common settings, without depending on the daemon.
package sources
