// Package kv is the YCSB core workload as a soakd source: operations
// (read, update, insert, scan, read-modify-write) in the proportions of a
// workload preset (load, a..f) or an explicit mix, on records chosen with
// a zipfian, uniform, latest or hotspot distribution, each record FIELDS
// values of FIELD_LENGTH bytes under the key KEY_PREFIX + "user" +
// FNV-hash(record number).
//
// The engine builds one Source per workload and shard and one Stream per
// worker; each Fill appends the next PIPELINE operations to the worker's
// batch without allocating:
//
//	c := kv.DefaultConfig() // or parsed from SOAKD_KV_* with caarlos0/env
//	c.Workload, _ = kv.ParseWorkload("read=0.9,update=0.1")
//	src, err := kv.New(c, 42, sources.Shard{Index: 0, Count: 1})
//	st, _ := src.Stream(0, 1)
//	b := src.(sources.Batcher).NewBatch()
//	_ = st.Fill(b, 16, time.Now().UnixNano()) // 16 ops in b.Ops
//
// With LOAD=auto the source is also a sources.Preloader: the engine probes
// a sample of the records and, when any is missing, runs the finite load
// source (every record of the shard, once) before the workload.
package kv
