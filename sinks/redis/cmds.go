package redis

import (
	"context"
	"io"
	"unsafe"

	goredis "github.com/redis/go-redis/v9"
)

// Commands are prepared once per shape and reused from batch to batch:
// each slot owns its argument slice, whose entries point (*string,
// *int64) at the slot's own fields, so filling a command is a few
// assignments and writing it allocates nothing. Replies are read without
// allocating: scalar replies into a buffer (ZeroCopyStringCmd), arrays
// streamed into a counting writer (RawWriteToCmd).

type kind uint8

const (
	kSet      kind = iota // SET key value
	kGet                  // GET key
	kSetRange             // SETRANGE key offset value
	kGetRange             // GETRANGE key start end
	kHSet                 // HSET key (field value)...
	kHMGet                // HMGET key field...
	kHGet                 // HGET key field
	kDel                  // DEL key
	kSAdd                 // SADD key member...
	kSPop                 // SPOP key
	kSMembers             // SMEMBERS key
	kSRand                // SRANDMEMBER key
	kZAdd                 // ZADD key (score member)...
	kZRem                 // ZREMRANGEBYSCORE key min max
	kZRange               // ZRANGE key 0 -1
	kZRangeBy             // ZRANGEBYSCORE key min max
	kIdxAdd               // ZADD index record key
	kType                 // TYPE key
	kScan                 // ZRANGEBYSCORE index record +inf LIMIT 0 n
	kIdxScore             // ZSCORE index key
	numKinds
)

// replyKind says how a command's reply is read.
type replyKind uint8

const (
	scalar replyKind = iota // status, integer or bulk string into a buffer
	array                   // streamed through a replyWriter
	keys                    // an index lookup's keys (RESP connections only)
)

type shape struct {
	name  string
	reply replyKind
	read  bool // a nil or empty reply is a miss
}

var shapes = [numKinds]shape{
	kSet:      {"SET", scalar, false},
	kGet:      {"GET", scalar, true},
	kSetRange: {"SETRANGE", scalar, false},
	kGetRange: {"GETRANGE", scalar, true},
	kHSet:     {"HSET", scalar, false},
	kHMGet:    {"HMGET", array, true},
	kHGet:     {"HGET", scalar, true},
	kDel:      {"DEL", scalar, false},
	kSAdd:     {"SADD", scalar, false},
	kSPop:     {"SPOP", scalar, false},
	kSMembers: {"SMEMBERS", array, true},
	kSRand:    {"SRANDMEMBER", scalar, true},
	kZAdd:     {"ZADD", scalar, false},
	kZRem:     {"ZREMRANGEBYSCORE", scalar, false},
	kZRange:   {"ZRANGE", array, true},
	kZRangeBy: {"ZRANGEBYSCORE", array, true},
	kIdxAdd:   {"ZADD", scalar, false},
	kType:     {"TYPE", scalar, false},
	kScan:     {"ZRANGEBYSCORE", keys, false},
	kIdxScore: {"ZSCORE", scalar, false},
}

// slot is one prepared command.
type slot struct {
	kind kind
	n    int // fields (variable-arity kinds)
	args []any
	strs []string
	nums []int64
	buf  []byte
	zc   *goredis.ZeroCopyStringCmd
	raw  *goredis.RawWriteToCmd
	rw   *replyWriter // the go-redis path's array replies; made by prepare
	// got is the scalar reply of the last batch, in buf.
	got []byte
	// keyFrom and keyTo delimit a kScan's keys in its call's keyList.
	keyFrom, keyTo int
}

// newSlot builds the argument template of kind k with n fields. names are
// the field names field0..; the slot's args point at strs and nums, which
// the caller fills before each use.
func newSlot(k kind, n int, names []string, index *string) *slot {
	sl := &slot{kind: k, n: n}
	a := []any{shapes[k].name}
	str := func(i int) { a = append(a, &sl.strs[i]) }
	num := func(i int) { a = append(a, &sl.nums[i]) }
	switch k {
	case kSet, kSetRange:
		sl.strs = make([]string, 2)
		sl.nums = make([]int64, 1)
		str(0)
		if k == kSetRange {
			num(0)
		}
		str(1)
	case kGet, kSMembers, kSPop, kSRand, kDel, kType:
		sl.strs = make([]string, 1)
		str(0)
	case kGetRange, kZRem, kZRangeBy:
		sl.strs = make([]string, 1)
		sl.nums = make([]int64, 2)
		str(0)
		num(0)
		num(1)
	case kHSet: // key, then name/value pairs
		sl.strs = make([]string, 1+2*n)
		for i := range sl.strs {
			str(i)
		}
	case kHMGet, kHGet: // key, then names
		sl.strs = make([]string, 1+n)
		for i := range sl.strs {
			str(i)
		}
		if k == kHMGet {
			for i := range n {
				sl.strs[1+i] = names[i]
			}
		}
	case kSAdd:
		sl.strs = make([]string, 1+n)
		for i := range sl.strs {
			str(i)
		}
	case kZAdd: // key, then score/member pairs
		sl.strs = make([]string, 1+n)
		sl.nums = make([]int64, n)
		str(0)
		for i := range n {
			num(i)
			str(1 + i)
		}
	case kZRange:
		sl.strs = make([]string, 1)
		str(0)
		a = append(a, "0", "-1")
	case kIdxAdd:
		sl.strs = make([]string, 1)
		sl.nums = make([]int64, 1)
		a = append(a, index)
		num(0)
		str(0)
	case kIdxScore:
		sl.strs = make([]string, 1)
		a = append(a, index)
		str(0)
	case kScan: // nums: the first record, how many
		sl.nums = make([]int64, 2)
		a = append(a, index)
		num(0)
		a = append(a, "+inf", "LIMIT", "0")
		num(1)
	}
	sl.args = a
	return sl
}

// prepare makes sl's command object for a reply of up to bufLen bytes.
// With fresh set (cluster mode) it always makes a new one: the cluster
// client caches the slot of a key on the command object.
func (sl *slot) prepare(bufLen int, fresh bool) goredis.Cmder {
	ctx := context.Background()
	if shapes[sl.kind].reply == array {
		// Made here, not in newSlot: on the sink's own RESP connection no
		// slot needs one, and with its 512-byte scratch it was most of a
		// slot's size (the load probe makes a thousand slots).
		if sl.rw == nil {
			sl.rw = new(replyWriter)
		}
		sl.rw.reset()
		if sl.raw == nil || fresh {
			sl.raw = goredis.NewRawWriteToCmd(ctx, sl.rw, sl.args...)
		} else {
			sl.raw.SetErr(nil)
		}
		return sl.raw
	}
	if sl.zc == nil || fresh || len(sl.buf) < bufLen {
		if len(sl.buf) < bufLen {
			sl.buf = make([]byte, bufLen)
		}
		sl.zc = goredis.NewZeroCopyStringCmd(ctx, sl.buf, sl.args...)
	} else {
		sl.zc.SetErr(nil)
	}
	return sl.zc
}

// view returns b as a string without copying. The string is only used
// while the batch that owns b is being written.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// replyWriter receives an array reply as raw RESP and keeps what the sink
// needs: whether it is an error, empty or nil, and its size. It
// implements io.ReaderFrom so bulk payloads are drained through a
// scratch buffer instead of io.Copy allocating one.
type replyWriter struct {
	lines   int // header lines seen (CRLFs excluded)
	typ     byte
	empty   bool // *0, *-1, or a first element that is nil (HMGET of a missing key)
	errText []byte
	n       int64
	scratch [512]byte
}

func (w *replyWriter) reset() {
	w.lines, w.typ, w.empty, w.n = 0, 0, false, 0
	w.errText = w.errText[:0]
}

func (w *replyWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if len(p) == 2 && p[0] == '\r' && p[1] == '\n' {
		return 2, nil
	}
	switch w.lines {
	case 0:
		if len(p) > 0 {
			w.typ = p[0]
			switch p[0] {
			case '-', '!':
				w.errText = append(w.errText[:0], p[1:]...)
			case '*', '~', '%':
				w.empty = string(p[1:]) == "0" || string(p[1:]) == "-1"
			case '_':
				w.empty = true
			}
		}
	case 1:
		// The first element: HMGET of a missing key answers all nils.
		if len(p) > 0 && (p[0] == '_' || string(p) == "$-1") {
			w.empty = true
		}
	}
	w.lines++
	return len(p), nil
}

func (w *replyWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		n, err := r.Read(w.scratch[:])
		total += int64(n)
		if err == io.EOF {
			w.n += total
			return total, nil
		}
		if err != nil {
			w.n += total
			return total, err
		}
	}
}
