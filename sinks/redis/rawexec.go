package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// connect dials c's RESP connection, unless it has one, and sets it up
// as go-redis would: HELLO (with AUTH and SETNAME), AUTH alone when the
// server refuses HELLO (Redis < 6), then SELECT and CLIENT SETNAME.
func (s *Sink) connect(ctx context.Context, c *call) error {
	if c.rc == nil {
		c.rc = newRespConn(nil)
	}
	if c.rc.nc != nil {
		return nil
	}
	nc, err := s.dial(ctx, "tcp", s.own.Addr)
	if err != nil {
		return err
	}
	c.rc.nc, c.rc.r, c.rc.w = nc, 0, 0
	c.mu.Lock()
	c.nc = nc
	c.mu.Unlock()
	// A watch that fired before nc was known closed nothing.
	if err := ctx.Err(); err != nil {
		c.disconnect()
		return err
	}
	if err := s.handshake(ctx, c.rc); err != nil {
		c.disconnect()
		return err
	}
	return nil
}

func (s *Sink) handshake(ctx context.Context, rc *respConn) error {
	o := s.own
	if err := rc.deadline(ctx, s.rto, s.wto); err != nil {
		return err
	}
	user := o.Username
	if user == "" {
		user = "default"
	}
	hello := []any{"HELLO", strconv.Itoa(o.Protocol)}
	if o.Password != "" {
		hello = append(hello, "AUTH", user, o.Password)
	}
	if o.ClientName != "" {
		hello = append(hello, "SETNAME", o.ClientName)
	}
	// Its own buffer: rc.wbuf holds the batch to send once set up.
	b := appendArgs(nil, hello)
	if _, err := rc.nc.Write(b); err != nil {
		return err
	}
	if err := rc.skipReply(); err != nil {
		var rerr replyError
		if !errors.As(err, &rerr) {
			return err
		}
		if !helloUnsupported(string(rerr)) {
			// The server's reason to refuse the connection (max number
			// of clients reached, WRONGPASS, NOAUTH, LOADING): it may
			// have closed it already, and is the error to show.
			return err
		}
		if o.Password != "" {
			auth := []any{"AUTH", o.Password}
			if o.Username != "" {
				auth = []any{"AUTH", o.Username, o.Password}
			}
			if _, err := rc.nc.Write(appendArgs(b[:0], auth)); err != nil {
				return err
			}
			if err := rc.skipReply(); err != nil {
				return fmt.Errorf("failed to authenticate: %w", err)
			}
		}
	}
	n := 0
	b = b[:0]
	if o.DB > 0 {
		b = appendArgs(b, []any{"SELECT", o.DB})
		n++
	}
	if o.ClientName != "" {
		b = appendArgs(b, []any{"CLIENT", "SETNAME", o.ClientName})
		n++
	}
	if n == 0 {
		return nil
	}
	if _, err := rc.nc.Write(b); err != nil {
		return err
	}
	var first error
	for range n {
		err := rc.skipReply()
		var rerr replyError
		if err != nil && !errors.As(err, &rerr) {
			return fmt.Errorf("failed to initialize connection options: %w", err)
		}
		if first == nil && err != nil {
			first = fmt.Errorf("failed to initialize connection options: %w", err)
		}
	}
	return first
}

// helloUnsupported reports whether msg, an error reply to HELLO, says
// the server does not know HELLO (Redis before 6: "unknown command"; a
// server of another family: "unknown", "unsupported", "not support(ed)",
// its own syntax) or not the protocol version asked (NOPROTO): then the
// connection is set up without it, with AUTH alone.
func helloUnsupported(msg string) bool {
	if strings.HasPrefix(msg, "NOPROTO") {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"unknown", "unsupported", "not support", "wrong number of arguments", "syntax error"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// send connects c if needed and writes the commands of c.rc.wbuf, with
// the deadlines of one round trip.
func (s *Sink) send(ctx context.Context, c *call) error {
	if err := s.connect(ctx, c); err != nil {
		return err
	}
	if err := c.rc.deadline(ctx, s.rto, s.wto); err != nil {
		return err
	}
	return c.rc.flush()
}

// execRaw is exec on c's RESP connection: the batch's commands in one
// write, their replies read in order. Replies are checked as exec checks
// go-redis's: error replies classify alike, nil and empty replies of
// reads are misses, and a transport or protocol failure ends the batch
// and the connection.
func (s *Sink) execRaw(ctx context.Context, c *call) error {
	n := len(c.used)
	if c.rc == nil {
		c.rc = newRespConn(nil)
	}
	rc := c.rc
	rc.wbuf = rc.wbuf[:0]
	for _, sl := range c.used {
		rc.wbuf = appendArgs(rc.wbuf, sl.args)
	}
	s.watch(ctx, c)
	err := s.send(ctx, c)
	if err != nil {
		s.unwatch(c)
		c.broken = true
		return s.failed(ctx, n, err)
	}
	var first error
	misses := 0
	for i, sl := range c.used {
		sh := &shapes[sl.kind]
		var err error
		switch sh.reply {
		case scalar:
			var k int
			k, err = rc.scalar(sl.buf)
			sl.got = sl.buf[:k]
			if err == nil && sl.kind == kGetRange && k == 0 {
				// GETRANGE answers an empty string, not nil, for a
				// missing key; a stored field is never empty.
				err = goredis.Nil
			}
		case array:
			var empty bool
			empty, err = rc.aggregate(nil)
			if err == nil && empty && sh.read {
				err = goredis.Nil
			}
		case keys:
			sl.keyFrom = len(c.keys.ends)
			_, err = rc.aggregate(&c.keys)
			sl.keyTo = len(c.keys.ends)
		}
		if err == nil {
			continue
		}
		if err == goredis.Nil {
			if sh.read {
				misses++
				c.missed = append(c.missed, c.opOf[i])
			}
			continue
		}
		if first == nil {
			first = err
		}
		var rerr replyError
		if !errors.As(err, &rerr) {
			// The rest of the replies are lost or out of step.
			c.broken = true
			break
		}
	}
	s.unwatch(c)
	if misses > 0 {
		s.misses.Add(int64(misses))
	}
	if first != nil {
		return s.failed(ctx, n, first)
	}
	return nil
}

// ping sends PING on c's RESP connection.
func (s *Sink) ping(ctx context.Context, c *call) error {
	if c.rc == nil {
		c.rc = newRespConn(nil)
	}
	c.rc.wbuf = appendArgs(c.rc.wbuf[:0], []any{"PING"})
	if err := s.send(ctx, c); err != nil {
		return err
	}
	var buf [16]byte
	_, err := c.rc.scalar(buf[:])
	return err
}
