// Package iot generates device time series like TSBS: devops (TSBS
// cpu-only), devops-full (TSBS devops, nine measurements), iot (TSBS
// trucks) and massive (many devices x many columns), with knobs for
// late (out-of-order) readings, offline devices that backfill in bursts,
// null fields and a simulated or wall clock.
//
// Every value is derived from (seed, device, timestamp), so the same
// settings give the same rows in any number of streams, shards and
// processes. Streams fill reused batches without allocating:
//
//	c := iot.DefaultConfig()
//	c.Scale = 100
//	c.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z"))
//	c.End.UnmarshalText([]byte("+24h"))
//	src, err := iot.New("devops", c, 1, sources.Shard{})
//	st, _ := src.Stream(0, 1)
//	b := sources.NewSeriesBatch(src.Schemas())
//	for {
//		b.Reset()
//		err := st.Fill(b, 5000, time.Now().UnixNano())
//		// write b ...
//		if errors.Is(err, sources.ErrDone) {
//			break
//		}
//	}
package iot
