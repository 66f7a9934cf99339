package config

import (
	"fmt"
	"strings"
)

// KeySpace is implemented by the settings of sources whose records live
// under a key prefix on their target (kv): the prefix, what makes two
// workloads' records alike (DATA_TYPE, FIELDS, FIELD_LENGTH), and whether
// the workload inserts records beyond those it loads.
type KeySpace interface {
	KeySpace() (prefix, records string, inserts bool)
}

// checkSharedKeys refuses two workloads that would write each other's
// keys: the same target and KEY_PREFIX, with records of another shape or
// SEED (each writes over the other's, or fails WRONGTYPE on them), or
// both inserting new records (both take the same next keys). Workloads
// that read and update one data set alike may share it.
func (c *Config) checkSharedKeys() []error {
	type space struct {
		w       *Workload
		records string
		inserts bool
	}
	seen := map[string]space{}
	var errs []error
	for _, w := range c.Workload {
		if w.SourceSettings == nil || w.Builtin || w.Sink.URL == nil {
			continue
		}
		ks, ok := w.SourceSettings.Fields().(KeySpace)
		if !ok {
			continue
		}
		prefix, records, inserts := ks.KeySpace()
		records = fmt.Sprintf("%s SEED=%d", records, w.Seed)
		u := w.Sink.URL
		key := strings.ToLower(u.Host) + u.Path + "?db=" + u.Query().Get("db") + "\x00" + prefix
		o, dup := seen[key]
		if !dup {
			seen[key] = space{w, records, inserts}
			continue
		}
		switch {
		case o.records != records:
			errs = append(errs, cfgErr(Prefix(w.Name)+"KEY_PREFIX", "%q on the target of %s (%s) holds that workload's records (%s); this one's (%s) would write over them under the same keys: give each workload a KEY_PREFIX of its own",
				prefix, Prefix(o.w.Name)+"TARGET", o.w.Sink.Redacted, o.records, records))
		case o.inserts && inserts:
			errs = append(errs, cfgErr(Prefix(w.Name)+"KEY_PREFIX", "%q on the target of %s (%s): both workloads insert new records, and would take the same keys: give each workload a KEY_PREFIX of its own",
				prefix, Prefix(o.w.Name)+"TARGET", o.w.Sink.Redacted))
		}
	}
	return errs
}
