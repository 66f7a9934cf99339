package redis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// client is what the sink needs from go-redis. *goredis.Client (one
// server, or the master found by sentinels) and *goredis.ClusterClient
// both satisfy it.
type client interface {
	Pipeline() goredis.Pipeliner
	Ping(ctx context.Context) *goredis.StatusCmd
	Close() error
}

var (
	_ client = (*goredis.Client)(nil)
	_ client = (*goredis.ClusterClient)(nil)
)

// Sink executes KV batches as Redis pipelines, one round trip per batch
// (two when the batch has scans: the index lookup, then the reads).
type Sink struct {
	cfg Config
	// answered: a ping was answered, so the server speaks the URL's
	// protocol, and a failed ping needs no probe (mismatched).
	answered atomic.Bool
	dt       sources.DataType
	c        client
	cluster  *goredis.ClusterClient
	single   *goredis.Client
	// own holds the connection options of single-server mode, where each
	// call owns a RESP connection (respConn) dialled with dial; nil in the
	// other modes. rto and wto are its read and write timeouts.
	own      *goredis.Options
	dial     sinks.DialFunc
	rto, wto time.Duration
	prefix   string
	index    string
	names    []string // field0..field1023
	log      *zap.Logger
	where    string // redacted target, for error messages
	workers  int    // the workload's WORKERS, for the maxclients hint
	// scans: the workload scans, through the index, so the load probe
	// asks the index for each record too (Present).
	scans bool
	// resolved: the URL's host names resolved (urlAddrs).
	resolveOnce sync.Once
	resolved    []string

	// free holds the call states not in use. In single-server mode each
	// owns a RESP connection; in sentinel mode a dedicated go-redis
	// connection (goredis.Conn), so a batch skips the pool's per-checkout
	// health probe (a recvfrom syscall) and goes straight to write and
	// read.
	mu     sync.Mutex
	free   []*call
	misses atomic.Int64
	closed atomic.Bool
	conns  sinks.Conns // single-server mode's connections
}

var (
	_ sinks.Sink   = (*Sink)(nil)
	_ sinks.Pinger = (*Sink)(nil)
	_ sinks.Prober = (*Sink)(nil)
)

// Open is the registry's OpenFunc. It builds the client and does no I/O
// (go-redis dials on first use).
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	s, err := New(cfg, o, sinks.RedactURL(u))
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Sink
	}
	return s, nil
}

// New builds a sink for a parsed URL. where names the target in error
// messages and must not hold secrets.
func New(cfg Config, o sinks.Options, where string) (*Sink, error) {
	dt := o.Shape.DataType
	switch dt {
	case "":
		dt = sources.DataTypeHash // DATA_TYPE's default
	case sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet:
	default:
		return nil, fmt.Errorf("BUG: redis sink: data type %q", dt)
	}
	prefix := o.Shape.KeyPrefix
	if err := checkIndex(cfg, o.Shape); err != nil {
		return nil, err
	}
	if cfg.Cleanup && prefix == "" {
		return nil, errors.New("cleanup=true needs a KEY_PREFIX, so it deletes only this workload's keys")
	}
	if cfg.Password == "" {
		cfg.Password = o.Password
	}
	log := o.Log()
	quietClient.Do(func() { goredis.SetLogger(clientLog{log.Named("go-redis")}) })
	s := &Sink{cfg: cfg, dt: dt, prefix: prefix, index: prefix + "_indices", log: log, where: where, workers: max(o.Workers, 1),
		scans: o.Shape.Scans && cfg.Index}
	s.names = make([]string, sources.MaxFields)
	for i := range s.names {
		s.names[i] = "field" + strconv.Itoa(i)
	}
	pool := cfg.PoolSize
	if pool == 0 {
		// One connection per worker plus a few for probes, pings and
		// cleanup, so a write never waits for a connection.
		pool = max(o.Workers, 1) + 4
	}
	// The engine retries (and counts) failed writes. go-redis would not
	// retry the sink's pipelines anyway: they hold NoRetry commands
	// (ZeroCopyStringCmd, RawWriteToCmd). -1 disables its retries.
	const retries = -1
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	switch cfg.Mode {
	case Single:
		s.own = &goredis.Options{
			Addr: cfg.Addrs[0], DB: cfg.DB, Username: cfg.Username, Password: cfg.Password,
			Protocol: cfg.Protocol, TLSConfig: tlsCfg, ClientName: cfg.ClientName,
			DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
			ContextTimeoutEnabled: true, PoolSize: pool, PipelinePoolSize: -1, MaxRetries: retries,
			DisableIdentity: true,
		}
		shared := *s.own // NewClient fills in defaults
		shared.Dialer = s.conns.Wrap(goredis.NewDialer(&shared))
		s.single = goredis.NewClient(&shared)
		s.c = s.single
		// The calls' own connections, with go-redis's defaults for a
		// Config made without ParseURL.
		if s.own.Protocol < 2 {
			s.own.Protocol = 3
		}
		o := *s.own
		if o.DialTimeout == 0 {
			o.DialTimeout = 5 * time.Second
		}
		s.dial = s.conns.Wrap(goredis.NewDialer(&o))
		s.rto, s.wto = cfg.ReadTimeout, cfg.WriteTimeout
		if s.rto == 0 {
			s.rto = 3 * time.Second
		}
		if s.wto == 0 {
			s.wto = s.rto
		}
	case Sentinel:
		s.single = goredis.NewFailoverClient(&goredis.FailoverOptions{
			MasterName: cfg.MasterName, SentinelAddrs: cfg.Addrs,
			SentinelUsername: cfg.SentinelUsername, SentinelPassword: cfg.SentinelPassword,
			DB: cfg.DB, Username: cfg.Username, Password: cfg.Password,
			Protocol: cfg.Protocol, TLSConfig: tlsCfg, ClientName: cfg.ClientName,
			DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
			ContextTimeoutEnabled: true, PoolSize: pool, MaxRetries: retries,
			DisableIdentity: true,
		})
		s.c = s.single
	case Cluster:
		s.cluster = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: cfg.Addrs, Username: cfg.Username, Password: cfg.Password,
			Protocol: cfg.Protocol, TLSConfig: tlsCfg, ClientName: cfg.ClientName,
			DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
			ContextTimeoutEnabled: true, PoolSize: pool, MaxRetries: retries,
			DisableIdentity: true,
		})
		s.c = s.cluster
	}
	return s, nil
}

// Misses returns how many reads so far found no record (nil or empty
// reply). Write reports them as failures of class Empty; Close logs the
// total.
func (s *Sink) Misses() int64 { return s.misses.Load() }

// call is the state of one Write: the pipeline and the prepared commands
// of one worker at a time, kept in s.free between writes.
type call struct {
	// raw marks single-server mode: the call runs its commands on rc, its
	// own RESP connection (dialled on first use and after a failure),
	// whose net.Conn is also nc, so that a cancelled operation can close
	// it (see watch). In the other modes it runs them through go-redis.
	raw  bool
	rc   *respConn
	keys keyList       // the keys of a batch's index lookups (raw)
	conn *goredis.Conn // dedicated connection (sentinel mode)
	pipe goredis.Pipeliner
	cmds []goredis.Cmder
	used []*slot
	// slots holds the prepared commands by kind and by whether they carry
	// one field or several, so a batch mixing one-field updates and
	// all-field inserts of the same command reuses both.
	slots [numKinds][2][]*slot
	next  [numKinds][2]int
	scans []scan
	// opOf is, for each command of cmds, the position in the batch of the
	// operation it serves; cur is the operation being queued.
	opOf []int
	cur  int
	// missed holds the positions of the operations whose reads found no
	// record, over both phases of a batch with scans.
	missed []int
	// broken marks a connection that failed; it is replaced before the
	// next batch.
	broken bool
	// stop ends the watch of the operation in progress (see watch).
	stop      func() bool
	interrupt func() // c.close, made once
	mu        sync.Mutex
	nc        net.Conn // rc's network connection, once dialled
}

// close closes c's network connection: the operation in progress fails
// at once, and the connection is replaced before the next one.
func (c *call) close() {
	c.mu.Lock()
	nc := c.nc
	c.mu.Unlock()
	if nc != nil {
		_ = nc.Close()
	}
}

// release closes c's connection.
func (c *call) release() error {
	if c.conn != nil {
		return ignoreClosed(c.conn.Close())
	}
	c.disconnect()
	return nil
}

// disconnect closes c's RESP connection, if any; the next operation
// dials a new one.
func (c *call) disconnect() {
	if c.rc == nil || c.rc.nc == nil {
		return
	}
	_ = c.rc.nc.Close()
	c.rc.nc = nil
	c.rc.r, c.rc.w = 0, 0
	c.mu.Lock()
	c.nc = nil
	c.mu.Unlock()
}

// watch arranges for the end of ctx to interrupt the operation c is about
// to run. go-redis turns a context's deadline into socket deadlines but
// not its cancellation (the engine's, at shutdown): without this, an
// operation cancelled while the server does not answer would wait for
// read_timeout. Only single-server calls know their connection; in
// sentinel and cluster modes such an operation still ends by
// read_timeout. unwatch ends the watch.
func (s *Sink) watch(ctx context.Context, c *call) {
	if !c.raw || ctx.Done() == nil {
		return
	}
	if af, ok := ctx.(afterFuncer); ok {
		c.stop = af.AfterFunc(c.interrupt)
		return
	}
	c.stop = context.AfterFunc(ctx, c.interrupt)
}

// afterFuncer is a context with its own AfterFunc, as the engine's write
// context is: cheaper than context.AfterFunc's wrapping of it.
type afterFuncer interface {
	AfterFunc(func()) (stop func() bool)
}

// unwatch ends the watch of watch. When the watch fired, the connection
// is closed (or about to be): it is replaced before the next operation.
func (s *Sink) unwatch(c *call) {
	if c.stop != nil && !c.stop() {
		c.broken = true
	}
	c.stop = nil
}

type scan struct {
	cmd   *goredis.StringSliceCmd // go-redis mode
	sl    *slot                   // raw mode
	field int16
	op    int // the scan's position in the batch
}

func (s *Sink) getCall() *call {
	s.mu.Lock()
	var c *call
	if n := len(s.free); n > 0 {
		c = s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
	}
	s.mu.Unlock()
	if c == nil {
		c = &call{raw: s.own != nil}
		c.interrupt = c.close
	}
	if c.broken {
		c.disconnect()
		if c.conn != nil {
			_ = c.conn.Close()
			c.conn, c.pipe = nil, nil
		}
	}
	c.broken = false
	if c.pipe == nil && !c.raw {
		switch {
		case s.single != nil:
			c.conn = s.single.Conn()
			c.pipe = c.conn.Pipeline()
		default:
			c.pipe = s.c.Pipeline()
		}
	}
	return c
}

func (s *Sink) putCall(c *call) {
	c.cmds = c.cmds[:0]
	c.opOf, c.missed, c.cur = c.opOf[:0], c.missed[:0], 0
	clear(c.used)
	c.used = c.used[:0]
	c.next = [numKinds][2]int{}
	clear(c.scans)
	c.scans = c.scans[:0]
	c.keys.reset()
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		_ = c.release()
		return
	}
	s.free = append(s.free, c)
	s.mu.Unlock()
}

// add queues a command of kind k with n fields and returns its slot for
// the caller to fill. bufLen is the largest scalar reply expected.
func (s *Sink) add(c *call, k kind, n, bufLen int) *slot {
	v := 0
	if n > 1 {
		v = 1
	}
	slots := &c.slots[k][v]
	var sl *slot
	if i := c.next[k][v]; i < len(*slots) && (*slots)[i].n == n {
		sl = (*slots)[i]
	} else {
		sl = newSlot(k, n, s.names, &s.index)
		if i < len(*slots) {
			(*slots)[i] = sl
		} else {
			*slots = append(*slots, sl)
		}
	}
	c.next[k][v]++
	if c.raw {
		if len(sl.buf) < bufLen {
			sl.buf = make([]byte, bufLen)
		}
	} else {
		// A cluster client caches the key's slot on the command object.
		c.cmds = append(c.cmds, sl.prepare(bufLen, s.cluster != nil))
	}
	c.used = append(c.used, sl)
	c.opOf = append(c.opOf, c.cur)
	return sl
}

// Reply buffer sizes: status and integer replies are short; a read of a
// field or record gets room for twice the expected size, so a record
// written with other settings is still read, not refused.
const smallReply = 64

func valueBuf(n int) int { return 2*n + 64 }

// Write runs the operations of b as one pipeline and returns the key and
// value bytes sent. Every record a batch reads is one the run loaded or
// inserted (or, with LOAD=off, one assumed loaded), so a read or scan that
// finds nothing failed: when that is the only failure, Write returns a
// *sinks.UnitsError of class Empty naming those operations, and the
// engine counts the batch's other operations as acknowledged.
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, cancelled(err)
	}
	if len(b.Ops) == 0 {
		return 0, nil
	}
	if b.Fields < 1 || b.Fields > sources.MaxFields || b.FieldLength < 1 {
		return 0, fmt.Errorf("BUG: redis sink: batch with %d fields of %d bytes", b.Fields, b.FieldLength)
	}
	c := s.getCall()
	defer s.putCall(c)
	sent := 0
	for i := range b.Ops {
		op := &b.Ops[i]
		c.cur = i
		key := view(b.Key(op))
		val := b.Value(op)
		sent += len(key) + len(val)
		switch op.Op {
		case sources.OpRead:
			s.addRead(c, key, op.Field, b)
		case sources.OpUpdate:
			s.addWrite(c, key, op.Field, val, b, op.Record, false)
		case sources.OpInsert:
			s.addWrite(c, key, -1, val, b, op.Record, true)
		case sources.OpRMW:
			// The op's Field is the one it writes; the read is of the
			// whole record, as with YCSB's default readallfields=true.
			s.addRead(c, key, -1, b)
			s.addWrite(c, key, op.Field, val, b, op.Record, false)
		case sources.OpScan:
			// Phase one: the keys of ScanLen records from this one on.
			if c.raw {
				sl := s.add(c, kScan, 0, 0)
				sl.nums[0], sl.nums[1] = int64(op.Record), int64(op.ScanLen)
				c.scans = append(c.scans, scan{sl: sl, field: op.Field, op: i})
				continue
			}
			cmd := goredis.NewStringSliceCmd(ctx, "ZRANGEBYSCORE", s.index, op.Record, "+inf", "LIMIT", 0, op.ScanLen)
			c.cmds = append(c.cmds, cmd)
			c.used = append(c.used, nil)
			c.opOf = append(c.opOf, i)
			c.scans = append(c.scans, scan{cmd: cmd, field: op.Field, op: i})
		}
	}
	if err := s.exec(ctx, c); err != nil {
		return sent, err
	}
	if len(c.scans) == 0 {
		return sent, s.missing(c, b)
	}
	// Phase two: read the records the index lookups found.
	scans := c.scans
	c.cmds = c.cmds[:0]
	c.used = c.used[:0]
	c.opOf = c.opOf[:0]
	for _, sc := range scans {
		var keys []string
		if sc.cmd != nil {
			keys = sc.cmd.Val()
		}
		found := len(keys)
		if sc.sl != nil {
			found = sc.sl.keyTo - sc.sl.keyFrom
		}
		if found == 0 && s.cfg.Index {
			// The scan starts at a record the run loaded or inserted,
			// which the index holds; without the index scans find
			// nothing by design.
			c.missed = append(c.missed, sc.op)
			s.misses.Add(1)
		}
		if found > 0 && s.cfg.Index {
			// The first key found is the scan's own record's, the only
			// one of its score: another means the index lacks the record
			// (stored with index=false, or the index deleted or
			// evicted), and the scan would read the records after it as
			// if it were there.
			var first string
			if len(keys) > 0 {
				first = keys[0]
			} else {
				first = c.keys.key(sc.sl.keyFrom)
			}
			if first != view(b.Key(&b.Ops[sc.op])) {
				c.missed = append(c.missed, sc.op)
				s.misses.Add(1)
				continue
			}
		}
		c.cur = sc.op
		for _, k := range keys {
			s.addRead(c, k, sc.field, b)
		}
		if sc.sl != nil {
			for k := sc.sl.keyFrom; k < sc.sl.keyTo; k++ {
				s.addRead(c, c.keys.key(k), sc.field, b)
			}
		}
	}
	c.scans = c.scans[:0]
	if len(c.used) > 0 {
		if err := s.exec(ctx, c); err != nil {
			return sent, err
		}
	}
	return sent, s.missing(c, b)
}

// missing is the failure of the operations of b whose reads found no
// record (nil when none did).
func (s *Sink) missing(c *call, b *sources.Batch) error {
	if len(c.missed) == 0 {
		return nil
	}
	// A scan's reads come after the first phase's: sort, and count an
	// operation that missed twice (a read-modify-write's read, a scan's
	// records) once.
	slices.Sort(c.missed)
	units := slices.Compact(c.missed)
	first := &b.Ops[units[0]]
	index := ""
	if first.Op == sources.OpScan {
		index = fmt.Sprintf("; a scan finds its records through the scan index %q, which may lack it", s.index)
	}
	return &sinks.UnitsError{Units: slices.Clone(units), Err: sinks.NewError(sinks.Empty, false,
		fmt.Errorf("%d of %d operations read no record on %s, though the run loaded or inserted them (first: %s of key %q%s)",
			len(units), len(b.Ops), s.where, first.Op, b.Key(first), index))}
}

func (s *Sink) addRead(c *call, key string, field int16, b *sources.Batch) {
	fl := b.FieldLength
	if field < 0 {
		switch s.dt {
		case sources.DataTypeString:
			s.add(c, kGet, 0, valueBuf(b.Fields*fl)).strs[0] = key
		case sources.DataTypeHash:
			s.add(c, kHMGet, b.Fields, 0).strs[0] = key
		case sources.DataTypeSet:
			s.add(c, kSMembers, 0, 0).strs[0] = key
		case sources.DataTypeZSet:
			s.add(c, kZRange, 0, 0).strs[0] = key
		}
		return
	}
	f := int64(field)
	switch s.dt {
	case sources.DataTypeString:
		sl := s.add(c, kGetRange, 0, valueBuf(fl))
		sl.strs[0] = key
		sl.nums[0], sl.nums[1] = f*int64(fl), (f+1)*int64(fl)-1
	case sources.DataTypeHash:
		sl := s.add(c, kHGet, 1, valueBuf(fl))
		sl.strs[0], sl.strs[1] = key, s.names[field]
	case sources.DataTypeSet:
		s.add(c, kSRand, 0, valueBuf(fl)).strs[0] = key
	case sources.DataTypeZSet:
		sl := s.add(c, kZRangeBy, 0, 0)
		sl.strs[0] = key
		sl.nums[0], sl.nums[1] = f, f
	}
}

// addWrite writes all fields (field < 0; val holds them back to back) or
// one field of a record.
func (s *Sink) addWrite(c *call, key string, field int16, val []byte, b *sources.Batch, record uint64, insert bool) {
	fl := b.FieldLength
	n := len(val) / fl
	switch s.dt {
	case sources.DataTypeString:
		if field < 0 {
			sl := s.add(c, kSet, 0, smallReply)
			sl.strs[0], sl.strs[1] = key, view(val)
		} else {
			sl := s.add(c, kSetRange, 0, smallReply)
			sl.strs[0], sl.strs[1] = key, view(val)
			sl.nums[0] = int64(field) * int64(fl)
		}
	case sources.DataTypeHash:
		sl := s.add(c, kHSet, n, smallReply)
		sl.strs[0] = key
		for i := range n {
			name := i
			if field >= 0 {
				name = int(field)
			}
			sl.strs[1+2*i] = s.names[name]
			sl.strs[2+2*i] = view(val[i*fl : (i+1)*fl])
		}
	case sources.DataTypeSet:
		if field < 0 {
			s.add(c, kDel, 0, smallReply).strs[0] = key
		} else {
			s.add(c, kSPop, 0, valueBuf(fl)).strs[0] = key
		}
		sl := s.add(c, kSAdd, n, smallReply)
		sl.strs[0] = key
		for i := range n {
			sl.strs[1+i] = view(val[i*fl : (i+1)*fl])
		}
	case sources.DataTypeZSet:
		if field < 0 {
			s.add(c, kDel, 0, smallReply).strs[0] = key
		} else {
			sl := s.add(c, kZRem, 0, smallReply)
			sl.strs[0] = key
			sl.nums[0], sl.nums[1] = int64(field), int64(field)
		}
		sl := s.add(c, kZAdd, n, smallReply)
		sl.strs[0] = key
		for i := range n {
			sl.nums[i] = int64(i)
			if field >= 0 {
				sl.nums[i] = int64(field)
			}
			sl.strs[1+i] = view(val[i*fl : (i+1)*fl])
		}
	}
	if insert && s.cfg.Index {
		sl := s.add(c, kIdxAdd, 0, smallReply)
		sl.strs[0] = key
		sl.nums[0] = int64(record)
	}
}

// exec sends the queued commands and checks every reply. It returns the
// first failure, classified; nil and empty replies of reads are counted
// as misses.
func (s *Sink) exec(ctx context.Context, c *call) error {
	if c.raw {
		return s.execRaw(ctx, c)
	}
	// Both pipelines in use (Conn's and ClusterClient's) are a
	// *goredis.Pipeline, whose BatchProcess only queues and never fails.
	_ = c.pipe.BatchProcess(ctx, c.cmds...)
	// Exec's error is the first command's error (the redis.Nil of a
	// missing key included), checked reply by reply below, or a failure
	// before any command was sent that go-redis does not copy into the
	// commands: an error reply to AUTH or SELECT while setting up the
	// connection.
	s.watch(ctx, c)
	_, execErr := c.pipe.Exec(ctx)
	s.unwatch(c)
	var first error
	misses := 0
	for i, cmd := range c.cmds {
		err := cmd.Err()
		sl := c.used[i] // nil for the index lookup of a scan
		if sl != nil && err == nil && shapes[sl.kind].reply == array {
			if len(sl.rw.errText) > 0 {
				err = replyError(string(sl.rw.errText))
			} else if sl.rw.empty && shapes[sl.kind].read {
				misses++
				c.missed = append(c.missed, c.opOf[i])
			}
		}
		if sl != nil && shapes[sl.kind].reply == scalar {
			sl.got = sl.zc.Bytes()
		}
		if err == nil && sl != nil && sl.kind == kGetRange && len(sl.got) == 0 {
			// GETRANGE answers an empty string, not nil, for a missing
			// key; a stored field is never empty (FIELD_LENGTH >= 1).
			err = goredis.Nil
		}
		if errors.Is(err, goredis.Nil) {
			if sl != nil && shapes[sl.kind].read {
				misses++
				c.missed = append(c.missed, c.opOf[i])
			}
			continue
		}
		if err == nil {
			continue
		}
		var rerr goredis.Error
		if !errors.As(err, &rerr) {
			// A transport failure (or a deadline in the middle of the
			// replies) leaves the dedicated connection unusable, whichever
			// command saw it first.
			c.broken = true
		}
		if first == nil {
			first = err
		}
	}
	if misses > 0 {
		s.misses.Add(int64(misses))
	}
	if first == nil && execErr != nil && !errors.Is(execErr, goredis.Nil) {
		// Nothing was sent; the connection failed to set up.
		c.broken = true
		first = execErr
	}
	if first != nil {
		if s.cluster != nil && redirected(first) {
			// The cluster client follows MOVED and ASK only in the replies
			// it parses; the raw array replies hand them over as bytes.
			// Refresh the slot map and let the engine send the batch again.
			s.cluster.ReloadState(ctx)
			return sinks.NewError(sinks.Server, true, fmt.Errorf("cannot run a pipeline of %d commands on %s (a slot moved; reloading the slot map): %w",
				len(c.cmds), s.where, first))
		}
		return s.failed(ctx, len(c.cmds), first)
	}
	return nil
}

// failed wraps err, the failure of n commands run with ctx. When ctx
// ended and the server did not answer, the failure is ctx's: a timeout.
func (s *Sink) failed(ctx context.Context, n int, err error) error {
	var rerr goredis.Error
	if cerr := ctx.Err(); cerr != nil && !errors.As(err, &rerr) {
		if h := s.announceHint(err); h != "" {
			// The deadline passed while dialling a node the cluster
			// announces: the dial's failure is the reason.
			return sinks.NewError(sinks.Timeout, true, fmt.Errorf("cannot run a pipeline of %d commands on %s: %w (%w) (%s)", n, s.where, cerr, err, h))
		}
		return sinks.NewError(sinks.Timeout, true, fmt.Errorf("cannot run a pipeline of %d commands on %s: %w (%w)", n, s.where, cerr, err))
	}
	return s.wrap(n, err)
}

func (s *Sink) wrap(n int, err error) error {
	class, retry := classify(err)
	if e := sinks.ExplainTLS(err, "ca", "", "cert and key"); e != err {
		// A certificate refused now will be refused again.
		class, retry, err = sinks.Rejected, false, e
	}
	if isAuthError(err) {
		// WRONGPASS, NOAUTH: the password's fault, not the pipeline's, so
		// the message says so first.
		return sinks.NewError(class, retry, fmt.Errorf("%s on %s: %w", sinks.AuthFailed, s.where, err))
	}
	if goredis.IsMaxClientsError(err) {
		// The server's limit, which the user raises or meets with fewer
		// workers: the reply alone names neither. One worker (soakd
		// verify's reads, WORKERS=1) leaves nothing to lower.
		fewer := " or lower WORKERS"
		if s.workers <= 1 {
			fewer = ""
		}
		return sinks.NewError(class, retry, fmt.Errorf("cannot run a pipeline of %d commands on %s: %w (the server's maxclients: soakd opens a connection per worker, WORKERS=%d, and a few for readiness and the target watch, beside other clients; raise maxclients%s)",
			n, s.where, err, s.workers, fewer))
	}
	if m := s.clusterMismatch(err); m != nil {
		return m
	}
	hint := s.noPermHint(err)
	if hint == "" {
		hint = s.clusterDownHint(err)
	}
	if hint == "" {
		hint = refusalHint(err)
	}
	if hint == "" {
		hint = s.unknownCommandHint(err)
	}
	if hint == "" {
		hint = s.announceHint(err)
	}
	if hint != "" {
		return sinks.NewError(class, retry, fmt.Errorf("cannot run a pipeline of %d commands on %s: %w (%s)", n, s.where, err, hint))
	}
	return sinks.NewError(class, retry, fmt.Errorf("cannot run a pipeline of %d commands on %s: %w", n, s.where, err))
}

// noPermHint says what to change when an ACL refused err's command
// (NOPERM): the reply names neither the keys nor the setting.
func (s *Sink) noPermHint(err error) string {
	msg := err.Error()
	i := strings.Index(msg, "NOPERM")
	if i < 0 {
		return ""
	}
	// Redis 7.0 says "this user has no permissions to access one of the
	// keys used as arguments", 7.2 and Valkey "User NAME has no
	// permissions to access the 'KEY' key": the words after "access",
	// not the user's name, tell keys from a command.
	if j := strings.Index(msg[i:], "permissions to access"); j >= 0 && strings.Contains(msg[i+j:], "key") {
		// The ACL's key pattern is a glob: a prefix's own *, ?, [ and \
		// escaped, as cleanup's SCAN pattern has them, or the pattern
		// would match other keys, or none of the workload's.
		return fmt.Sprintf("the URL's user may not use this workload's keys: allow them in its ACL (~%s*, which holds the scan index %s too), or set KEY_PREFIX to a prefix it may use",
			globEscape(s.prefix), s.index)
	}
	if !strings.Contains(msg[i:], "permissions to run") {
		return ""
	}
	return "the URL's user may not run a command soakd sends: allow it in its ACL, e.g. +@read +@write, or connect as another user"
}

// unknownCommandHint says what to change when the server does not know a
// command soakd sends ("ERR unknown command 'HMGET', with args ...";
// Redis 6 quotes it with backticks): one disabled or renamed with
// rename-command fails every operation that sends it, and the reply
// names neither the setting nor soakd's need of it. "" for other errors.
func (s *Sink) unknownCommandHint(err error) string {
	var rerr goredis.Error
	if !errors.As(err, &rerr) {
		return ""
	}
	msg := rerr.Error()
	i := strings.Index(msg, "unknown command")
	if i < 0 {
		return ""
	}
	name := "the command"
	rest := strings.TrimLeft(msg[i+len("unknown command"):], " ")
	if rest != "" && (rest[0] == '\'' || rest[0] == '`') {
		if j := strings.IndexByte(rest[1:], rest[0]); j > 0 {
			name = strings.ToUpper(rest[1 : 1+j])
		}
	}
	return fmt.Sprintf("the server does not know %s: it was renamed or disabled (rename-command in its configuration), or this server does not implement it; "+
		"soakd sends it for DATA_TYPE=%s (the commands of each data type and operation, the scan index's and the load probe's TYPE, are in sinks/redis/README.md): "+
		"restore it on the server, or choose a DATA_TYPE or WORKLOAD that does not send it", name, s.dt)
}

// refusalHint says what to change when the server refuses writes for
// its own state: a read-only replica (READONLY), one at its maxmemory
// that frees none for the write (OOM), a master short of the
// replicas it writes with (NOREPLICAS). Neither reply names the
// setting at fault. "" for other errors.
func refusalHint(err error) string {
	var rerr goredis.Error
	if !errors.As(err, &rerr) {
		return ""
	}
	switch code, _, _ := strings.Cut(rerr.Error(), " "); code {
	case "READONLY":
		return "the server is a read-only replica: set TARGET to its master (INFO replication's master_host and master_port), " +
			"or use redis-sentinel:// to follow its master through failovers"
	case "OOM":
		return "the server is at its maxmemory and frees none for the write (its maxmemory-policy is noeviction, or volatile-* while " +
			"soakd's keys have no TTL, or nothing is left to evict): raise its maxmemory, or hold fewer records (RECORDS, FIELDS, FIELD_LENGTH)"
	case "NOREPLICAS":
		return "the server takes writes only while min-replicas-to-write replicas are connected with a lag under min-replicas-max-lag " +
			"(INFO replication's connected_slaves and their lag): bring its replicas back, or lower min-replicas-to-write"
	}
	return ""
}

// Present counts how many of the keys read by b's operations hold a
// record of the sink's data type (one TYPE per key, pipelined; a cluster
// client sends each to its slot's node). A key that holds another type
// is not a missing record but a configuration problem: every operation
// on it would fail with WRONGTYPE, and a load would not replace it. Then
// Present returns a *sources.SettingError for DATA_TYPE that says what
// was found and how to fix it.
func (s *Sink) Present(ctx context.Context, b *sources.Batch) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, cancelled(err)
	}
	c := s.getCall()
	defer s.putCall(c)
	for i := range b.Ops {
		s.add(c, kType, 0, smallReply).strs[0] = view(b.Key(&b.Ops[i]))
	}
	if len(c.used) == 0 {
		return 0, nil
	}
	records := len(c.used)
	if s.cfg.Index {
		// Every insert also adds to the scan index: a key of another
		// type there would fail each, though its record was stored.
		s.add(c, kType, 0, smallReply).strs[0] = s.index
	}
	if err := s.exec(ctx, c); err != nil {
		return 0, err
	}
	if s.cfg.Index {
		if t := string(c.used[records].got); t != "none" && t != "zset" {
			return 0, sources.Invalid("KEY_PREFIX", "the scan index key %q on %s holds a %s, not a sorted set, so every insert would fail with WRONGTYPE on it "+
				"(its record stored all the same); use another KEY_PREFIX, delete the key, or give the TARGET URL index=false when the workload does not scan",
				s.index, s.where, t)
		}
	}
	n := 0
	var other map[string]int
	var stored []string // the keys that hold a record, for the index check
	for i, sl := range c.used[:records] {
		switch t := sl.got; string(t) {
		case string(s.dt):
			n++
			if s.scans {
				stored = append(stored, view(b.Key(&b.Ops[i])))
			}
		case "none":
		default:
			if other == nil {
				other = map[string]int{}
			}
			other[string(t)]++
		}
	}
	if other != nil {
		return 0, s.typeMismatch(other, records)
	}
	if len(stored) > 0 {
		return s.indexed(ctx, c, stored)
	}
	return n, nil
}

// indexed counts how many of keys, records stored, the scan index holds
// (ZSCORE, one per key, pipelined on c). A scan walks the index from its
// first record: records stored without it (by a run with index=false, an
// index deleted or evicted) are not there for scans, which read the next
// records the index holds instead, as found. Present counts them
// missing, so that LOAD=auto loads them, and the index with them.
func (s *Sink) indexed(ctx context.Context, c *call, keys []string) (int, error) {
	if string(c.used[len(c.used)-1].got) == "none" {
		return 0, nil // no index at all
	}
	c.cmds, c.used, c.opOf = c.cmds[:0], c.used[:0], c.opOf[:0]
	for _, k := range keys {
		s.add(c, kIdxScore, 0, smallReply).strs[0] = k
	}
	if err := s.exec(ctx, c); err != nil {
		return 0, err
	}
	n := 0
	for _, sl := range c.used {
		if len(sl.got) > 0 { // a score; nil when the index lacks the key
			n++
		}
	}
	return n, nil
}

// typeMismatch is Present's error for keys that hold other types than
// DATA_TYPE stores: found counts them by type, of probed keys.
func (s *Sink) typeMismatch(found map[string]int, probed int) error {
	types := slices.Sorted(maps.Keys(found))
	var what strings.Builder
	for i, t := range types {
		if i > 0 {
			what.WriteString(", ")
		}
		fmt.Fprintf(&what, "%d of the %d keys probed hold a %s", found[t], probed, t)
	}
	var fix []string
	if s.prefix == "" {
		fix = append(fix, "set a KEY_PREFIX of this workload's own")
	} else {
		fix = append(fix, "use another KEY_PREFIX")
	}
	if len(types) == 1 {
		if dt, err := sources.ParseDataType(types[0]); err == nil && string(dt) == types[0] {
			fix = append(fix, "set DATA_TYPE="+types[0])
		}
	}
	if s.prefix != "" {
		fix = append(fix, fmt.Sprintf("delete the keys (run once with ?cleanup=true in the TARGET URL, which deletes every key under KEY_PREFIX at exit, "+
			"or: redis-cli --scan --pattern %s | xargs redis-cli unlink, on every master of a cluster)", shellQuote(globEscape(s.prefix)+"*")))
	}
	if len(fix) > 1 {
		fix[len(fix)-1] = "or " + fix[len(fix)-1]
	}
	return sources.Invalid("DATA_TYPE", "KEY_PREFIX %q on %s holds records of another type: %s, but DATA_TYPE=%s stores a %s, "+
		"so every operation on them would fail with WRONGTYPE; %s",
		s.prefix, s.where, what.String(), s.dt, s.dt, strings.Join(fix, ", "))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ServerVersion is the server's redis_version from INFO server (on a
// cluster, of the node the client asks), for reports.
func (s *Sink) ServerVersion(ctx context.Context) (string, error) {
	var info string
	var err error
	if s.cluster != nil {
		info, err = s.cluster.Info(ctx, "server").Result()
	} else {
		info, err = s.single.Info(ctx, "server").Result()
	}
	if err != nil {
		return "", s.wrap(1, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "redis " + v, nil
		}
	}
	return "", nil
}

// Ping checks that the target answers, on a call's connection as a write
// does (so that a cancelled Ping ends as a cancelled write does).
func (s *Sink) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	c := s.getCall()
	defer s.putCall(c)
	var err error
	switch {
	case c.raw:
		s.watch(ctx, c)
		err = s.ping(ctx, c)
		s.unwatch(c)
	case c.conn != nil:
		s.watch(ctx, c)
		err = c.conn.Ping(ctx).Err()
		s.unwatch(c)
	default:
		err = s.c.Ping(ctx).Err()
	}
	if err != nil {
		if m := s.modeMismatch(err); m != nil {
			return m
		}
		var rerr goredis.Error
		if !errors.As(err, &rerr) {
			c.broken = true
			return s.mismatched(ctx, s.failed(ctx, 1, err))
		}
		return s.failed(ctx, 1, err)
	}
	s.answered.Store(true)
	return nil
}

// OpenConns is the number of connections open to the server now (in
// cluster and sentinel mode, those of go-redis's pools).
func (s *Sink) OpenConns() int64 {
	switch {
	case s.cluster != nil:
		return int64(s.cluster.PoolStats().TotalConns)
	case s.own == nil:
		return int64(s.single.PoolStats().TotalConns)
	}
	return s.conns.Open()
}

// Close logs the reads that found no record, deletes the workload's keys
// when ?cleanup=true, then closes the client. Safe to call more than once.
func (s *Sink) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	if m := s.misses.Load(); m > 0 {
		s.log.Info("redis reads found no record", zap.Int64("misses", m), zap.String("where", s.where),
			zap.String("hint", "the records were never loaded (LOAD=off) or were lost; misses that grow from run to run mean lost records"))
	}
	var err error
	if s.cfg.Cleanup {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, cleanupTimeout)
			defer cancel()
		}
		var n int64
		n, err = s.cleanup(ctx)
		s.log.Info("redis cleanup", zap.String("prefix", s.prefix), zap.Int64("deleted", n), zap.Error(err))
	}
	s.mu.Lock()
	free := s.free
	s.free = nil
	s.mu.Unlock()
	for _, c := range free {
		err = errors.Join(err, c.release())
	}
	return errors.Join(err, s.c.Close())
}

// cleanup deletes every key under the prefix (including the scan index)
// with SCAN + UNLINK, on every master of a cluster.
// Reset deletes every key under the workload's KEY_PREFIX, for soakd
// sweep's SOAKD_SWEEP_RESET=true; without a prefix it refuses, as a reset
// would delete keys soakd did not write.
func (s *Sink) Reset(ctx context.Context) error {
	if s.prefix == "" {
		return sinks.NewError(sinks.Rejected, false, errors.New("no KEY_PREFIX: resetting would delete keys soakd did not write"))
	}
	_, err := s.cleanup(ctx)
	return err
}

func (s *Sink) cleanup(ctx context.Context) (int64, error) {
	var deleted atomic.Int64
	del := func(ctx context.Context, c goredis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, globEscape(s.prefix)+"*", 1000).Result()
			if err != nil {
				return fmt.Errorf("cannot scan for keys under %q: %w", s.prefix, err)
			}
			if len(keys) > 0 {
				// One UNLINK per key: in a cluster the keys of one SCAN
				// page are in different slots.
				p := c.Pipeline()
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				if _, err := p.Exec(ctx); err != nil {
					return fmt.Errorf("cannot unlink %d keys under %q: %w", len(keys), s.prefix, err)
				}
				deleted.Add(int64(len(keys)))
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if s.cluster != nil {
		err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return del(ctx, c) })
		return deleted.Load(), err
	}
	err := del(ctx, s.single)
	return deleted.Load(), err
}

func ignoreClosed(err error) error {
	if errors.Is(err, goredis.ErrClosed) {
		return nil
	}
	return err
}

// globEscape escapes the glob characters of a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// go-redis logs every failed dial on its own global logger; during an
// outage that is a line per write attempt. The failures already reach the
// engine as classified errors, so the client's own lines go to the first
// sink's logger at debug level.
var quietClient sync.Once

type clientLog struct{ l *zap.Logger }

func (c clientLog) Printf(_ context.Context, format string, v ...any) {
	if ce := c.l.Check(zap.DebugLevel, "client"); ce != nil {
		ce.Write(zap.String("msg", fmt.Sprintf(format, v...)))
	}
}

// cleanupTimeout bounds the cleanup when Close gets a context without a
// deadline.
const cleanupTimeout = 5 * time.Minute
