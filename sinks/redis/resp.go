package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// respConn is a single-server call's own RESP connection. go-redis builds
// a command object per command, runs hooks, checks a connection out of a
// pool and parses replies into new values; here a batch's commands are
// appended to one reused buffer and sent with one write, and replies are
// parsed in place from a reused read buffer, so a batch allocates
// nothing. Both RESP2 and RESP3 replies are read (?protocol=3).
type respConn struct {
	nc   net.Conn
	wbuf []byte
	rbuf []byte // rbuf[r:w] is read and not yet parsed
	r, w int
}

// rbufSize is the read buffer: a pipeline of 16 reads of 10 x 100-byte
// records fits in one read. Longer replies are read in several.
const rbufSize = 32 << 10

// maxDepth bounds the nesting of aggregate replies, so a server sending
// endless nested arrays fails the batch instead of the stack.
const maxDepth = 64

// maxBulk bounds a bulk string's announced length, as the server's own
// proto-max-bulk-len does by default.
const maxBulk = 512 << 20

// maxKey bounds a key in an index lookup's reply; soakd's keys are a
// KEY_PREFIX and a record number.
const maxKey = 64 << 10

func newRespConn(nc net.Conn) *respConn {
	return &respConn{nc: nc, rbuf: make([]byte, rbufSize)}
}

// errProtocol is a reply that is not RESP, or not one the command can
// have. The connection is out of step and is replaced.
type errProtocol struct{ msg string }

func (e *errProtocol) Error() string { return "redis: invalid reply: " + e.msg }

func protocolError(format string, a ...any) error {
	return &errProtocol{fmt.Sprintf(format, a...)}
}

// appendArgs appends a command of args (string, *string or *int64, as
// the slots hold them) to b.
func appendArgs(b []byte, args []any) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b = appendBulk(b, v)
		case *string:
			b = appendBulk(b, *v)
		case *int64:
			var num [20]byte
			b = appendBulkBytes(b, strconv.AppendInt(num[:0], *v, 10))
		case int:
			var num [20]byte
			b = appendBulkBytes(b, strconv.AppendInt(num[:0], int64(v), 10))
		default:
			panic(fmt.Sprintf("BUG: redis command argument of type %T", a))
		}
	}
	return b
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulkBytes(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// deadline sets the connection's deadlines for one round trip, as
// go-redis does with ContextTimeoutEnabled: the timeout from now, or the
// context's deadline when that is sooner. A timeout < 0 is none.
func (c *respConn) deadline(ctx context.Context, read, write time.Duration) error {
	var now time.Time
	if read > 0 || write > 0 {
		now = time.Now()
	}
	ctxDeadline, hasDeadline := ctx.Deadline()
	at := func(d time.Duration) time.Time {
		var t time.Time
		if d > 0 {
			t = now.Add(d)
		}
		if hasDeadline && (t.IsZero() || ctxDeadline.Before(t)) {
			t = ctxDeadline
		}
		return t
	}
	r, w := at(read), at(write)
	if r.Equal(w) {
		return c.nc.SetDeadline(r)
	}
	if err := c.nc.SetWriteDeadline(w); err != nil {
		return err
	}
	return c.nc.SetReadDeadline(r)
}

// flush writes the buffered commands.
func (c *respConn) flush() error {
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	return err
}

// fill reads more bytes into the buffer, moving the unparsed ones to its
// start first when the buffer is full.
func (c *respConn) fill() error {
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.w == len(c.rbuf) {
		if c.r == 0 {
			return protocolError("a line longer than %d bytes", len(c.rbuf))
		}
		c.w = copy(c.rbuf, c.rbuf[c.r:c.w])
		c.r = 0
	}
	n, err := c.nc.Read(c.rbuf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// line returns the next line without its CRLF. It is valid until the
// next read.
func (c *respConn) line() ([]byte, error) {
	from := c.r
	for {
		for i := from; i+1 < c.w; i++ {
			if c.rbuf[i] == '\r' && c.rbuf[i+1] == '\n' {
				l := c.rbuf[c.r:i]
				c.r = i + 2
				if len(l) == 0 {
					return nil, protocolError("an empty line")
				}
				return l, nil
			}
		}
		scanned := max(c.w-1, c.r) - c.r
		if err := c.fill(); err != nil {
			return nil, err
		}
		from = c.r + scanned
	}
}

// discard skips n bytes.
func (c *respConn) discard(n int) error {
	for n > 0 {
		if c.r == c.w {
			if err := c.fill(); err != nil {
				return err
			}
		}
		k := min(n, c.w-c.r)
		c.r += k
		n -= k
	}
	return nil
}

// readFull copies the next len(dst) bytes into dst.
func (c *respConn) readFull(dst []byte) error {
	for len(dst) > 0 {
		if c.r == c.w {
			if err := c.fill(); err != nil {
				return err
			}
		}
		k := copy(dst, c.rbuf[c.r:c.w])
		c.r += k
		dst = dst[k:]
	}
	return nil
}

// crlf reads the CRLF that ends a bulk string.
func (c *respConn) crlf() error {
	var b [2]byte
	if err := c.readFull(b[:]); err != nil {
		return err
	}
	if b != [2]byte{'\r', '\n'} {
		return protocolError("a bulk string not ended by CRLF")
	}
	return nil
}

// length parses the length or count of a header line such as $5 or *3:
// -1 (nil) or 0..max.
func length(l []byte, limit int) (int, error) {
	if len(l) < 2 {
		return 0, protocolError("%.64q has no length", l)
	}
	d := l[1:]
	if len(d) == 2 && d[0] == '-' && d[1] == '1' {
		return -1, nil
	}
	if len(d) > 10 {
		return 0, protocolError("length %.64q is out of range", d)
	}
	n := 0
	for _, ch := range d {
		if ch < '0' || ch > '9' {
			return 0, protocolError("length %.64q is not a number", d)
		}
		n = n*10 + int(ch-'0')
	}
	if n > limit {
		return 0, protocolError("length %d is out of range", n)
	}
	return n, nil
}

// bulkError reads the payload of a RESP3 blob error (!n).
func (c *respConn) bulkError(l []byte) error {
	n, err := length(l, 1<<20)
	if err != nil {
		return err
	}
	if n < 0 {
		return protocolError("a nil blob error")
	}
	b := make([]byte, n)
	if err := c.readFull(b); err != nil {
		return err
	}
	if err := c.crlf(); err != nil {
		return err
	}
	return replyError(b)
}

// header reads a reply's first line, past any RESP3 attributes. An
// error reply is returned as a replyError, which classifies as go-redis's
// own error replies do.
func (c *respConn) header() ([]byte, error) {
	for {
		l, err := c.line()
		if err != nil {
			return nil, err
		}
		switch l[0] {
		case '-':
			return nil, replyError(l[1:])
		case '!':
			return nil, c.bulkError(l)
		case '|':
			n, err := length(l, 1<<20)
			if err != nil {
				return nil, err
			}
			for range 2 * max(n, 0) {
				if err := c.skip(1); err != nil {
					return nil, err
				}
			}
			continue
		}
		return l, nil
	}
}

// skip reads and drops one reply element of any type, errors included.
func (c *respConn) skip(depth int) error {
	l, err := c.line()
	if err != nil {
		return err
	}
	return c.skipRest(l, depth)
}

// skipRest drops the rest of the element whose first line is l.
func (c *respConn) skipRest(l []byte, depth int) error {
	if depth > maxDepth {
		return protocolError("replies nested deeper than %d", maxDepth)
	}
	switch l[0] {
	case '+', '-', ':', ',', '(', '#', '_':
		return nil
	case '$', '=', '!':
		n, err := length(l, maxBulk)
		if err != nil || n < 0 {
			return err
		}
		return c.discard(n + 2)
	case '*', '~', '>', '%', '|':
		n, err := length(l, 1<<31-1)
		if err != nil || n < 0 {
			return err
		}
		if l[0] == '%' || l[0] == '|' {
			n *= 2
		}
		for range n {
			if err := c.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return protocolError("unknown reply type %q", l[0])
}

// skipReply reads and drops one reply, returning it if it is an error.
func (c *respConn) skipReply() error {
	l, err := c.header()
	if err != nil {
		return err
	}
	return c.skipRest(l, 0)
}

// errTooLong is a scalar reply longer than the buffer it is read into.
func errTooLong(n, room int) error {
	return fmt.Errorf("redis: reply of %d bytes is longer than the %d expected", n, room)
}

// scalar reads a status, integer or bulk string reply into buf and
// returns its length. A nil reply is goredis.Nil; an aggregate is a
// protocol error, as go-redis's ZeroCopyStringCmd refuses one.
func (c *respConn) scalar(buf []byte) (int, error) {
	l, err := c.header()
	if err != nil {
		return 0, err
	}
	switch l[0] {
	case '+', ':', ',':
		if len(l)-1 > len(buf) {
			return 0, errTooLong(len(l)-1, len(buf))
		}
		return copy(buf, l[1:]), nil
	case '_':
		return 0, goredis.Nil
	case '$':
		n, err := length(l, maxBulk)
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return 0, goredis.Nil
		}
		if n > len(buf) {
			if err := c.discard(n + 2); err != nil {
				return 0, err
			}
			return 0, errTooLong(n, len(buf))
		}
		if err := c.readFull(buf[:n]); err != nil {
			return 0, err
		}
		return n, c.crlf()
	case '*':
		if n, err := length(l, 1<<31-1); err == nil && n < 0 {
			return 0, goredis.Nil // RESP2's nil array
		}
	}
	if err := c.skipRest(l, 0); err != nil {
		return 0, err
	}
	return 0, protocolError("%.64q where a string was expected", l)
}

// aggregate reads an array (set, map) reply and reports whether it is
// empty: no elements, nil, or a first element that is nil (HMGET of a
// missing key answers all nils). With keys set, the elements, which must
// be strings, are appended to keys (a scan's index lookup).
func (c *respConn) aggregate(keys *keyList) (empty bool, err error) {
	l, err := c.header()
	if err != nil {
		return false, err
	}
	switch l[0] {
	case '_':
		return true, nil
	case '*', '~', '%', '>':
	default:
		if err := c.skipRest(l, 0); err != nil {
			return false, err
		}
		return false, protocolError("%.64q where an array was expected", l)
	}
	n, err := length(l, 1<<31-1)
	if err != nil {
		return false, err
	}
	if n <= 0 {
		return true, nil
	}
	if l[0] == '%' {
		n *= 2
	}
	for i := range n {
		e, err := c.line()
		if err != nil {
			return false, err
		}
		nilElem := e[0] == '_' || (e[0] == '$' && len(e) == 3 && e[1] == '-' && e[2] == '1')
		if i == 0 && nilElem {
			empty = true
		}
		if keys == nil || nilElem {
			if err := c.skipRest(e, 1); err != nil {
				return false, err
			}
			continue
		}
		if err := c.key(e, keys); err != nil {
			return false, err
		}
	}
	return empty, nil
}

// key appends the string element whose first line is e to keys.
func (c *respConn) key(e []byte, keys *keyList) error {
	switch e[0] {
	case '+':
		keys.add(e[1:])
		return nil
	case '$':
		// Bounded well below maxBulk: the keys are kept.
		n, err := length(e, maxKey)
		if err != nil {
			return err
		}
		at := len(keys.buf)
		keys.buf = append(keys.buf, make([]byte, n)...)
		if err := c.readFull(keys.buf[at:]); err != nil {
			return err
		}
		keys.ends = append(keys.ends, len(keys.buf))
		return c.crlf()
	}
	if err := c.skipRest(e, 1); err != nil {
		return err
	}
	return protocolError("%.64q where a key was expected", e)
}

// keyList holds the keys of a batch's index lookups back to back: ends
// are their end offsets in buf.
type keyList struct {
	buf  []byte
	ends []int
}

func (k *keyList) add(b []byte) {
	k.buf = append(k.buf, b...)
	k.ends = append(k.ends, len(k.buf))
}

func (k *keyList) reset() {
	k.buf, k.ends = k.buf[:0], k.ends[:0]
}

// key returns key i as a string viewing buf: valid until the next reset
// or add.
func (k *keyList) key(i int) string {
	from := 0
	if i > 0 {
		from = k.ends[i-1]
	}
	return view(k.buf[from:k.ends[i]])
}
