package kv

import "github.com/soakd/soakd/sources"

// opOverhead is what one operation of a batch takes besides its field
// values: the key and the operation's own bookkeeping.
const opOverhead = 64

// UnitBytes estimates one operation of a batch in memory: its key and
// every field value (a write carries them, a read gets them back). The
// engine refuses WORKERS × PIPELINE that would not fit.
func (s *Source) UnitBytes() int64 {
	return opOverhead + int64(s.cfg.Fields)*int64(s.cfg.FieldLength)
}

// builtinMaxBytes bounds the records the built-in KV target may hold in
// soakd's own memory.
const builtinMaxBytes = 1 << 30

// Check is Validate, and, for a workload that writes to the built-in
// target, which keeps every record in soakd's own memory, refuses a data
// set too big for it: a real target takes any size.
func (c *Config) Check(w sources.Common) error {
	if err := c.Validate(); err != nil {
		return err
	}
	// A shard that owns no record fails at the start of the run; say so
	// before (config --check, exit 2). A bad SHARD is reported on its own.
	if sh, err := w.Shard.Checked(); err == nil && ownedCount(uint64(c.Records), sh) == 0 {
		return sources.Invalid("RECORDS", "%d records cannot be split into %d shards: shard %s owns none", c.Records, sh.Count, sh)
	}
	if !w.Builtin {
		return nil
	}
	per := int64(c.Fields)*int64(c.FieldLength+48) + 96 // values, field names and the server's own per-entry cost
	if c.Records > builtinMaxBytes/per {
		return sources.Invalid("RECORDS", "%d records of %d bytes would need about %.1f GiB in soakd's memory for the built-in target (at most %d records of this size): set TARGET to a real server, or lower RECORDS",
			c.Records, per, float64(c.Records)*float64(per)/(1<<30), builtinMaxBytes/per)
	}
	return nil
}
