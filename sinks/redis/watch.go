package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/sinks"
)

var _ sinks.TargetWatcher = (*Sink)(nil)

// The INFO fields TargetFigures reads, by the figure and kind they give.
// Only byte counts go to Memory and Storage; mem_fragmentation_ratio,
// evicted_keys and the keyspace's keys go to Stats.
var (
	memoryFields = []struct{ kind, field string }{
		{"used", "used_memory"},
		{"rss", "used_memory_rss"},
	}
	cpuFields = []string{"used_cpu_sys", "used_cpu_user"}
)

// infoSections are the sections TargetFigures asks for, one INFO each:
// INFO with several sections needs Redis 7, and servers that speak the
// protocol (KeeWiDB, older Redis) may not take it.
var infoSections = [...]string{"memory", "cpu", "persistence", "stats", "keyspace", "server", "commandstats"}

// TargetFigures reads INFO memory, cpu, persistence, stats, keyspace,
// server (its run_id: the Instance) and commandstats (the FLUSHALL and
// FLUSHDB calls) in one round trip on the sink's shared client (not a worker's
// connection), summed over the masters of a cluster (the fragmentation
// ratio aside: the highest master's). A server that refuses INFO (an ACL without
// +info, a managed service that hides it) leaves the figures it refused
// in Unavailable with its answer; only a failure to reach the server is
// an error.
func (s *Sink) TargetFigures(ctx context.Context) (sinks.TargetFigures, error) {
	if err := ctx.Err(); err != nil {
		return sinks.TargetFigures{}, cancelled(err)
	}
	if s.cluster == nil {
		infos, err := s.info(ctx, s.single)
		if err != nil {
			return sinks.TargetFigures{}, err
		}
		return figures(infos[:]...), nil
	}
	var (
		mu  sync.Mutex
		all []sectionInfo
	)
	err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		infos, err := s.info(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		all = append(all, infos[:]...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return sinks.TargetFigures{}, err
	}
	return figures(all...), nil
}

// sectionInfo is one INFO section's reply: its fields, or the server's
// refusal.
type sectionInfo struct {
	section string
	fields  map[string]string
	refused error
	titled  bool // the reply had its "# Section" title
}

// info sends one INFO per section of infoSections to c, pipelined. An
// error reply is the section's refusal; any other failure is returned,
// classified.
func (s *Sink) info(ctx context.Context, c *goredis.Client) ([len(infoSections)]sectionInfo, error) {
	var out [len(infoSections)]sectionInfo
	p := c.Pipeline()
	cmds := make([]*goredis.StringCmd, len(infoSections))
	for i, sec := range infoSections {
		cmds[i] = p.Info(ctx, sec)
	}
	_, _ = p.Exec(ctx) // each command's error is checked below
	for i, cmd := range cmds {
		out[i].section = infoSections[i]
		text, err := cmd.Result()
		var rerr goredis.Error
		switch {
		case errors.As(err, &rerr):
			out[i].refused = err
		case err != nil:
			return out, s.failed(ctx, len(infoSections), err)
		default:
			out[i].fields = parseInfo(text)
			out[i].titled = strings.HasPrefix(strings.TrimSpace(text), "#")
		}
	}
	return out, nil
}

// parseInfo reads INFO's "field:value" lines; comments ("# Memory") and
// blank lines are skipped.
func parseInfo(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// figures adds up the sections of one or more servers (a cluster's
// masters). A figure is reported only when every server gave it: a sum
// over some masters would pass for the whole target's.
func figures(infos ...sectionInfo) sinks.TargetFigures {
	f := sinks.TargetFigures{Memory: map[string]float64{}, Storage: map[string]float64{}, Stats: map[string]float64{},
		Unavailable: map[string]string{}}
	bySection := map[string][]sectionInfo{}
	for _, in := range infos {
		bySection[in.section] = append(bySection[in.section], in)
	}
	refused := func(sec string) error {
		for _, in := range bySection[sec] {
			if in.refused != nil {
				return in.refused
			}
		}
		return nil
	}
	// sum adds field over every server's sec section; ok is false when a
	// server lacks it or gives no number.
	var sum sumFunc = func(sec, field string) (float64, string) {
		total := 0.0
		for _, in := range bySection[sec] {
			v, ok := in.fields[field]
			if !ok {
				return 0, fmt.Sprintf("INFO %s has no %s", sec, field)
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 {
				return 0, fmt.Sprintf("INFO %s gives %s as %q, not a number of bytes or seconds", sec, field, v)
			}
			total += x
		}
		return total, ""
	}

	if err := refused("memory"); err != nil {
		f.Unavailable["memory"] = "the server refuses INFO memory: " + err.Error()
	} else {
		for _, m := range memoryFields {
			if v, why := sum("memory", m.field); why == "" {
				f.Memory[m.kind] = v
			} else {
				f.Unavailable["memory."+m.kind] = why
			}
		}
	}

	if err := refused("cpu"); err != nil {
		f.Unavailable["cpu"] = "the server refuses INFO cpu: " + err.Error()
	} else {
		f.HasCPU = true
		for _, field := range cpuFields {
			v, why := sum("cpu", field)
			if why != "" {
				f.HasCPU, f.CPUSeconds = false, 0
				f.Unavailable["cpu"] = why
				break
			}
			f.CPUSeconds += v
		}
	}

	stats(f, refused, sum, bySection)
	f.Instance = instance(bySection["server"])

	// Only the append-only file's size is bytes on disk that INFO
	// reports; the RDB snapshot's size is not reported at all.
	switch err := refused("persistence"); {
	case err != nil:
		f.Unavailable["storage"] = "the server refuses INFO persistence: " + err.Error()
	default:
		aof := true
		for _, in := range bySection["persistence"] {
			if in.fields["aof_enabled"] != "1" {
				aof = false
			}
		}
		if !aof {
			f.Unavailable["storage"] = "the server reports no on-disk size without AOF (appendonly no): INFO persistence gives the size of the append-only file only"
			break
		}
		if v, why := sum("persistence", "aof_current_size"); why == "" {
			f.Storage["aof"] = v
		} else {
			f.Unavailable["storage.aof"] = why
		}
	}
	return f
}

// sumFunc adds a field over every server's section; why says what is
// missing when one lacks it or gives no number.
type sumFunc func(sec, field string) (v float64, why string)

// stats adds the figures that are not bytes to f's Stats: the keys of every
// database (INFO keyspace's dbN:keys=...), the keys evicted (INFO stats'
// evicted_keys), each summed over the servers, and the memory
// fragmentation ratio (INFO memory's mem_fragmentation_ratio), which
// adds up over no servers: the highest of a cluster's masters.
func stats(f sinks.TargetFigures, refused func(string) error, sum sumFunc, bySection map[string][]sectionInfo) {
	if err := refused("memory"); err != nil {
		f.Unavailable[sinks.StatFragmentation] = "the server refuses INFO memory: " + err.Error()
	} else if v, why := highest(bySection["memory"], "mem_fragmentation_ratio"); why == "" {
		f.Stats[sinks.StatFragmentation] = v
	} else {
		f.Unavailable[sinks.StatFragmentation] = why
	}

	if err := refused("stats"); err != nil {
		f.Unavailable[sinks.StatEvictions] = "the server refuses INFO stats: " + err.Error()
	} else if v, why := sum("stats", "evicted_keys"); why == "" {
		f.Stats[sinks.StatEvictions] = v
	} else {
		f.Unavailable[sinks.StatEvictions] = why
	}

	if err := refused("commandstats"); err != nil {
		f.Unavailable[sinks.StatFlushes] = "the server refuses INFO commandstats: " + err.Error()
	} else if v, why := flushes(bySection["commandstats"]); why == "" {
		f.Stats[sinks.StatFlushes] = v
	} else {
		f.Unavailable[sinks.StatFlushes] = why
	}

	if err := refused("keyspace"); err != nil {
		f.Unavailable[sinks.StatKeys] = "the server refuses INFO keyspace: " + err.Error()
	} else if v, why := keyspaceKeys(bySection["keyspace"]); why == "" {
		f.Stats[sinks.StatKeys] = v
	} else {
		f.Unavailable[sinks.StatKeys] = why
	}
}

// instance is the run_ids of the servers' INFO server sections, sorted
// and joined: a server restarted (or a master replaced) gives another. ""
// when a server refused the section or gave no run_id.
func instance(infos []sectionInfo) string {
	ids := make([]string, 0, len(infos))
	for _, in := range infos {
		id := in.fields["run_id"]
		if in.refused != nil || id == "" {
			return ""
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// flushes adds up the calls of FLUSHALL and FLUSHDB of every server:
// INFO commandstats has a line "cmdstat_NAME:calls=N,..." per command
// called since the server started (or CONFIG RESETSTAT), none for one
// never called.
func flushes(infos []sectionInfo) (float64, string) {
	total := 0.0
	for _, in := range infos {
		if !in.titled && len(in.fields) == 0 {
			return 0, "INFO commandstats answered with nothing, not even its # Commandstats title"
		}
		for _, cmd := range []string{"cmdstat_flushall", "cmdstat_flushdb"} {
			v, ok := in.fields[cmd]
			if !ok {
				continue
			}
			calls, found := -1.0, false
			for kv := range strings.SplitSeq(v, ",") {
				if k, x, ok := strings.Cut(kv, "="); ok && k == "calls" {
					n, err := strconv.ParseFloat(x, 64)
					if err == nil && n >= 0 {
						calls = n
					}
					found = true
					break
				}
			}
			if !found || calls < 0 {
				return 0, fmt.Sprintf("INFO commandstats gives %s as %q, without a number of calls", cmd, v)
			}
			total += calls
		}
	}
	return total, ""
}

// highest is the highest of field over the servers' sections.
func highest(infos []sectionInfo, field string) (float64, string) {
	top := 0.0
	for _, in := range infos {
		v, ok := in.fields[field]
		if !ok {
			return 0, fmt.Sprintf("INFO %s has no %s", in.section, field)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) {
			return 0, fmt.Sprintf("INFO %s gives %s as %q, not a ratio", in.section, field, v)
		}
		top = max(top, x)
	}
	return top, ""
}

// keyspaceKeys adds up the keys of every database of every server: INFO
// keyspace has a line "dbN:keys=K,expires=E,..." per database that holds
// a key, and none for an empty one (an empty server: an empty section).
func keyspaceKeys(infos []sectionInfo) (float64, string) {
	total := 0.0
	for _, in := range infos {
		// An empty Redis answers "# Keyspace" and no line; a server that
		// answers nothing at all does not keep the section, and 0 keys
		// would be a figure it never gave.
		if !in.titled && len(in.fields) == 0 {
			return 0, "INFO keyspace answered with nothing, not even its # Keyspace title"
		}
		for db, v := range in.fields {
			if !strings.HasPrefix(db, "db") {
				continue
			}
			n, why := -1.0, fmt.Sprintf("INFO keyspace gives %s as %q, without keys=", db, v)
			for kv := range strings.SplitSeq(v, ",") {
				if k, x, ok := strings.Cut(kv, "="); ok && k == "keys" {
					var err error
					if n, err = strconv.ParseFloat(x, 64); err != nil || n < 0 {
						n, why = -1, fmt.Sprintf("INFO keyspace gives the keys of %s as %q, not a number", db, x)
					}
					break
				}
			}
			if n < 0 {
				return 0, why
			}
			total += n
		}
	}
	return total, ""
}
