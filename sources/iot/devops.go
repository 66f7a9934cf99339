package iot

import (
	"strconv"

	"github.com/soakd/soakd/sources"
)

// Host tags as in TSBS devops (pkg/data/usecases/devops/host.go).

type region struct {
	name string
	dcs  []string
}

var (
	regions = []region{
		{"us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"}},
		{"us-west-1", []string{"us-west-1a", "us-west-1b"}},
		{"us-west-2", []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{"eu-west-1", []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
		{"eu-central-1", []string{"eu-central-1a", "eu-central-1b"}},
		{"ap-southeast-1", []string{"ap-southeast-1a", "ap-southeast-1b"}},
		{"ap-southeast-2", []string{"ap-southeast-2a", "ap-southeast-2b"}},
		{"ap-northeast-1", []string{"ap-northeast-1a", "ap-northeast-1c"}},
		{"sa-east-1", []string{"sa-east-1a", "sa-east-1b", "sa-east-1c"}},
	}
	teams    = []string{"SF", "NYC", "LON", "CHI"}
	oses     = []string{"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"}
	arches   = []string{"x64", "x86"}
	envs     = []string{"production", "staging", "test"}
	fstypes  = []string{"ext3", "ext4", "btrfs"}
	hostKeys = []string{"hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version", "service_environment"}
)

// hostTags computes a host's tags from (seed, device): no per-device
// memory, so any scale fits.
type hostTags struct{ seed uint64 }

func (h hostTags) draw(d uint32, tag int) uint64 {
	return mix(devKey(h.seed, d) ^ saltTags*kSalt ^ uint64(tag)*gamma)
}

func (h hostTags) AppendTag(dst []byte, d uint32, tag int) []byte {
	switch tag {
	case 0:
		dst = append(dst, "host_"...)
		return strconv.AppendUint(dst, uint64(d), 10)
	case 1:
		return append(dst, regions[below(h.draw(d, 1), uint64(len(regions)))].name...)
	case 2:
		r := &regions[below(h.draw(d, 1), uint64(len(regions)))]
		return append(dst, r.dcs[below(h.draw(d, 2), uint64(len(r.dcs)))]...)
	case 3:
		return strconv.AppendUint(dst, below(h.draw(d, 3), 100), 10)
	case 4:
		return append(dst, oses[below(h.draw(d, 4), uint64(len(oses)))]...)
	case 5:
		return append(dst, arches[below(h.draw(d, 5), uint64(len(arches)))]...)
	case 6:
		return append(dst, teams[below(h.draw(d, 6), uint64(len(teams)))]...)
	case 7:
		return strconv.AppendUint(dst, below(h.draw(d, 7), 20), 10)
	case 8:
		return strconv.AppendUint(dst, below(h.draw(d, 8), 2), 10)
	case 9:
		return append(dst, envs[below(h.draw(d, 9), uint64(len(envs)))]...)
	}
	return dst
}

// Measurement-specific tags of devops-full, after the ten host tags.
type extra uint8

const (
	extraNone extra = iota
	extraDiskIO
	extraDisk
	extraNet
	extraNginx
	extraRedis
)

var extraKeys = map[extra][]string{
	extraDiskIO: {"serial"},
	extraDisk:   {"path", "fstype"},
	extraNet:    {"interface"},
	extraNginx:  {"port", "server"},
	extraRedis:  {"port", "server"},
}

// measTags is a host's tags followed by its measurement's own.
type measTags struct {
	hostTags
	kind extra
}

func pad3(dst []byte, v uint64) []byte {
	return append(dst, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
}

func (m measTags) AppendTag(dst []byte, d uint32, tag int) []byte {
	if tag < len(hostKeys) {
		return m.hostTags.AppendTag(dst, d, tag)
	}
	x := mix(devKey(m.seed, d) ^ saltExtraTags*kSalt ^ uint64(m.kind)<<8 ^ uint64(tag)*gamma)
	switch m.kind {
	case extraDiskIO:
		dst = pad3(dst, below(x, 1000))
		dst = append(dst, '-')
		dst = pad3(dst, below32(x, 1000))
		dst = append(dst, '-')
		return pad3(dst, below(mix(x), 1000))
	case extraDisk:
		if tag == len(hostKeys) {
			dst = append(dst, "/dev/sda"...)
			return strconv.AppendUint(dst, below(x, 10), 10)
		}
		return append(dst, fstypes[below(x, uint64(len(fstypes)))]...)
	case extraNet:
		dst = append(dst, "eth"...)
		return strconv.AppendUint(dst, below(x, 4), 10)
	case extraNginx, extraRedis:
		if tag == len(hostKeys) {
			return strconv.AppendUint(dst, 1024+below(x, 20000), 10)
		}
		if m.kind == extraNginx {
			dst = append(dst, "nginx_"...)
		} else {
			dst = append(dst, "redis_"...)
		}
		return strconv.AppendUint(dst, below(x, 100000), 10)
	}
	return dst
}

func tagKeys(kind extra) []string {
	return append(append([]string(nil), hostKeys...), extraKeys[kind]...)
}

var cpuFields = []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
	"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}

// cpu is TSBS's cpu measurement: ten usage_* percentages in [0, 100],
// each a clamped random walk (TSBS: CWD(ND(0,1), 0, 100)) printed as an
// integer like TSBS does. The walks run in hundredths, four packed per
// state word, so a host costs 24 bytes.
type cpu struct{ sch *sources.Schema }

func newCPU(tags sources.Tagger) *cpu {
	s := &sources.Schema{Measurement: "cpu", TagKeys: hostKeys, Tags: tags}
	for _, f := range cpuFields {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Int})
	}
	return &cpu{sch: s}
}

const cpuScale = 100 // state units per percent

func (c *cpu) schema() *sources.Schema { return c.sch }
func (c *cpu) words() int              { return 3 }

func (c *cpu) init(st []int64, r *rng, _ uint64) {
	for w := range 3 {
		var word uint64
		for j := range 4 {
			if w*4+j < len(cpuFields) {
				word |= below(r.next(), 100*cpuScale+1) << (16 * j)
			}
		}
		st[w] = int64(word)
	}
}

func (c *cpu) row(t *sources.Table, st []int64, r *rng, _ uint64, _ int64) {
	f := 0
	for w := range 3 {
		word, x := uint64(st[w]), r.next()
		var out uint64
		for j := 0; j < 4 && f < len(cpuFields); j++ {
			v := int64(word >> (16 * j) & 0xffff)
			// steps uniform in [-1.73, 1.73] percent: variance 1 like ND(0,1)
			v += int64((x>>(16*j))&0xffff)*347>>16 - 173
			v = min(max(v, 0), 100*cpuScale)
			t.Ints[f] = append(t.Ints[f], v/cpuScale)
			out |= uint64(v) << (16 * j)
			f++
		}
		st[w] = int64(out)
	}
}

// disk is TSBS's disk measurement: a 1 TiB disk whose free space walks.
type disk struct{ sch *sources.Schema }

const tib = 1 << 40

func newDisk(seed uint64) *disk {
	s := &sources.Schema{Measurement: "disk", TagKeys: tagKeys(extraDisk), Tags: measTags{hostTags{seed}, extraDisk}}
	for _, f := range []string{"total", "free", "used", "used_percent", "inodes_total", "inodes_free", "inodes_used"} {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Int})
	}
	return &disk{sch: s}
}

func (c *disk) schema() *sources.Schema { return c.sch }
func (c *disk) words() int              { return 1 }
func (c *disk) init(st []int64, r *rng, _ uint64) {
	st[0] = tib/4 + int64(below(r.next(), tib/2))
}

func (c *disk) row(t *sources.Table, st []int64, r *rng, _ uint64, _ int64) {
	free := st[0] + int64(below(r.next(), 1<<21+1)) - 1<<20 // ±1 MiB
	free = min(max(free, 0), tib)
	st[0] = free
	used := tib - free
	vals := [7]int64{tib, free, used, used * 100 / tib, tib / 4096, free / 4096, tib/4096 - free/4096}
	for i, v := range vals {
		t.Ints[i] = append(t.Ints[i], v)
	}
}

// mem is TSBS's mem measurement: used, cached and buffered bytes walk
// within the host's total (8, 12 or 16 GiB); percentages have 2 decimals.
type mem struct{ sch *sources.Schema }

func newMem(seed uint64) *mem {
	s := &sources.Schema{Measurement: "mem", TagKeys: hostKeys, Tags: hostTags{seed}}
	for _, f := range []string{"total", "available", "used", "free", "cached", "buffered"} {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Int})
	}
	for _, f := range []string{"used_percent", "available_percent", "buffered_percent"} {
		s.Fields = append(s.Fields, sources.Field{Name: f, Kind: sources.Float, Decimals: 2})
	}
	return &mem{sch: s}
}

func memTotal(dk uint64) int64 {
	return [...]int64{8 << 30, 12 << 30, 16 << 30}[below(mix(dk^saltInit), 3)]
}

func (c *mem) schema() *sources.Schema { return c.sch }
func (c *mem) words() int              { return 3 }
func (c *mem) init(st []int64, r *rng, dk uint64) {
	total := memTotal(dk)
	for i := range st {
		st[i] = int64(below(r.next(), uint64(total)+1))
	}
}

func (c *mem) row(t *sources.Table, st []int64, r *rng, dk uint64, _ int64) {
	total := memTotal(dk)
	step := total / 37 // uniform steps with the std. deviation of TSBS's ND(0, total/64)
	x := r.next()
	y := r.next()
	for i, u := range [3]uint64{x, x >> 32, y} {
		v := st[i] + int64(below32(u, uint64(2*step+1))) - step
		st[i] = min(max(v, 0), total)
	}
	used, cached, buffered := st[0], st[1], st[2]
	avail := total - used
	ints := [6]int64{total, avail, used, avail, cached, buffered}
	for i, v := range ints {
		t.Ints[i] = append(t.Ints[i], v)
	}
	for i, v := range [3]int64{used, avail, buffered} {
		t.Floats[6+i] = append(t.Floats[6+i], float64(v*10000/total)/100)
	}
}

func newDevopsFull(seed uint64, origin int64) *multi {
	h := hostTags{seed}
	mt := func(k extra) sources.Tagger { return measTags{h, k} }
	diskio := newGeneric("diskio", tagKeys(extraDiskIO), mt(extraDiskIO), []field{
		count("reads", 50), count("writes", 50), count("read_bytes", 100), count("write_bytes", 100),
		count("read_time", 5), count("write_time", 5), count("io_time", 5),
	})
	kernel := newGeneric("kernel", hostKeys, h, []field{
		{name: "boot_time", kind: sources.Int, gen: constant, lo: 0, hi: 239},
		count("interrupts", 5), count("context_switches", 5), count("processes_forked", 5),
		count("disk_pages_in", 5), count("disk_pages_out", 5),
	})
	net := newGeneric("net", tagKeys(extraNet), mt(extraNet), []field{
		count("bytes_sent", 50), count("bytes_recv", 50), count("packets_sent", 50), count("packets_recv", 50),
		count("err_in", 5), count("err_out", 5), count("drop_in", 5), count("drop_out", 5),
	})
	nginx := newGeneric("nginx", tagKeys(extraNginx), mt(extraNginx), []field{
		count("accepts", 5), gauge("active", 0, 100, 5), count("handled", 5), gauge("reading", 0, 100, 5),
		count("requests", 5), gauge("waiting", 0, 100, 5), gauge("writing", 0, 100, 5),
	})
	var pg []field
	for _, f := range []string{"numbackends", "xact_commit", "xact_rollback", "blks_read", "blks_hit",
		"tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "conflicts",
		"temp_files", "temp_bytes", "deadlocks", "blk_read_time", "blk_write_time"} {
		if f == "temp_bytes" {
			pg = append(pg, gauge(f, 0, 1<<30, 1<<20))
		} else {
			pg = append(pg, gauge(f, 0, 1000, 5))
		}
	}
	// TSBS spells the measurement "postgresl"; kept so TSBS queries work.
	postgres := newGeneric("postgresl", hostKeys, h, pg)
	rf := []field{
		{name: "uptime_in_seconds", kind: sources.Int, gen: uptime, lo: 0, hi: 30 * 86400},
		count("total_connections_received", 5), count("expired_keys", 50), count("evicted_keys", 50),
		count("keyspace_hits", 50), count("keyspace_misses", 50),
		gauge("instantaneous_ops_per_sec", 0, 10000, 2), gauge("instantaneous_input_kbps", 0, 10000, 2),
		gauge("instantaneous_output_kbps", 0, 10000, 2), gauge("connected_clients", 0, 10000, 50),
		gauge("used_memory", 0, 16<<30, 1<<20), gauge("used_memory_rss", 0, 16<<30, 1<<20),
		gauge("used_memory_peak", 0, 16<<30, 1<<20), gauge("used_memory_lua", 0, 16<<30, 1<<20),
		gauge("rdb_changes_since_last_save", 0, 10000, 50),
	}
	for _, f := range []string{"sync_full", "sync_partial_ok", "sync_partial_err", "pubsub_channels",
		"pubsub_patterns", "latest_fork_usec", "connected_slaves", "master_repl_offset",
		"repl_backlog_active", "repl_backlog_size", "repl_backlog_histlen"} {
		rf = append(rf, gauge(f, 0, 1000, 5))
	}
	rf = append(rf, gauge("mem_fragmentation_ratio", 0, 100, 5))
	for _, f := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		rf = append(rf, gauge(f, 0, 1000, 5))
	}
	redis := newGeneric("redis", tagKeys(extraRedis), mt(extraRedis), rf)
	redis.origin = origin
	return newMulti(newCPU(h), diskio, newDisk(seed), kernel, newMem(seed), net, nginx, postgres, redis)
}
