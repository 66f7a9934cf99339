// Package detserver is a Redis-protocol server of known capacity for
// tests of what soakd concludes about a target: every command, from every
// connection, goes through one serialized service queue, and completes at
// max(arrival, previous completion) + Service. Its capacity is therefore
// exactly 1/Service commands per second whatever the client does: below
// it a command takes Service; above it the queue, and the response time,
// grow without bound while each command still costs Service.
//
// Delay, when set, is added to every reply after its completion without
// occupying the queue (a network round trip): it lowers what one
// connection can do, 1/(Service+Delay), not the capacity.
//
// It keeps strings and hashes in memory (SET, GET, GETRANGE, SETRANGE,
// MGET, DEL, EXISTS, TYPE, HSET, HGET, HMGET, HGETALL), answers PING,
// INFO, SELECT, CLIENT and DBSIZE, accepts the other writes of the kv workload (SADD, ZADD, …)
// without keeping them, and refuses anything else (HELLO included, so
// clients fall back to RESP2). Pipelines work: commands are read and
// queued as they come, and replies leave in order.
package detserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running deterministic server.
type Server struct {
	// URL is redis://ADDR, Addr the listening address.
	URL, Addr string
	// Service is the queue's time per command; Delay what is added to
	// each reply outside the queue.
	Service, Delay time.Duration

	ln       net.Listener
	mu       sync.Mutex
	next     time.Time // when the queue is free again
	strs     map[string]string
	hashes   map[string]map[string]string
	commands atomic.Int64
	wg       sync.WaitGroup
	connsMu  sync.Mutex
	conns    map[net.Conn]struct{}
}

// Start starts a server on a free loopback port, stopped when t ends.
func Start(t testing.TB, service, delay time.Duration) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", service, delay)
	if err != nil {
		t.Fatalf("detserver: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen starts a server on addr.
func Listen(addr string, service, delay time.Duration) (*Server, error) {
	if service <= 0 || delay < 0 {
		return nil, fmt.Errorf("service %v must be positive and delay %v not negative", service, delay)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), Service: service, Delay: delay, ln: ln,
		strs: map[string]string{}, hashes: map[string]map[string]string{}, conns: map[net.Conn]struct{}{}}
	s.URL = "redis://" + s.Addr
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Capacity is the commands per second the queue completes at most.
func (s *Server) Capacity() float64 { return float64(time.Second) / float64(s.Service) }

// Commands is how many commands the server has answered or queued.
func (s *Server) Commands() int64 { return s.commands.Load() }

// Close stops the server and its connections, and waits for them.
func (s *Server) Close() {
	s.ln.Close()
	s.connsMu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.connsMu.Unlock()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.connsMu.Lock()
		s.conns[c] = struct{}{}
		s.connsMu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// reply is an answer and when it may leave.
type reply struct {
	b  []byte
	at time.Time
}

// serve reads commands and queues them; a second goroutine sends each
// reply at its time, so a pipeline's commands are all in the queue at
// once, as a real server's would be.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	out := make(chan reply, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := bufio.NewWriter(c)
		for r := range out {
			if d := time.Until(r.at); d > 0 {
				if w.Buffered() > 0 && w.Flush() != nil {
					break
				}
				time.Sleep(d)
			}
			_, _ = w.Write(r.b)
			if len(out) == 0 && w.Flush() != nil {
				break
			}
		}
		c.Close()
		for range out { // let the reader finish
		}
	}()
	rd := bufio.NewReader(c)
	for {
		args, err := readCommand(rd)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				out <- reply{b: []byte("-ERR " + strings.ReplaceAll(err.Error(), "\r\n", " ") + "\r\n")}
			}
			break
		}
		if len(args) == 0 {
			continue
		}
		s.commands.Add(1)
		out <- s.do(args)
	}
	close(out)
	<-done
	s.connsMu.Lock()
	delete(s.conns, c)
	s.connsMu.Unlock()
}

// do executes one command and takes its place in the queue.
func (s *Server) do(args []string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.next.Before(now) {
		s.next = now
	}
	s.next = s.next.Add(s.Service)
	return reply{b: s.exec(args), at: s.next.Add(s.Delay)}
}

func (s *Server) exec(args []string) []byte {
	name := strings.ToUpper(args[0])
	a := args[1:]
	switch name {
	case "PING":
		if len(a) > 0 {
			return bulk(a[0])
		}
		return []byte("+PONG\r\n")
	case "SELECT", "CLIENT", "FLUSHDB", "FLUSHALL":
		return []byte("+OK\r\n")
	case "INFO":
		return bulk("# Server\r\nredis_version:detserver-1\r\n")
	case "DBSIZE":
		return integer(len(s.strs) + len(s.hashes))
	case "SET":
		if len(a) < 2 {
			return wrongArgs(name)
		}
		delete(s.hashes, a[0])
		s.strs[a[0]] = a[1]
		return []byte("+OK\r\n")
	case "GET":
		if len(a) != 1 {
			return wrongArgs(name)
		}
		v, ok := s.strs[a[0]]
		if !ok {
			return []byte("$-1\r\n")
		}
		return bulk(v)
	case "MGET":
		vals := make([]*string, len(a))
		for i, k := range a {
			if v, ok := s.strs[k]; ok {
				vals[i] = &v
			}
		}
		return array(vals)
	case "DEL", "UNLINK", "EXISTS":
		n := 0
		for _, k := range a {
			_, ok1 := s.strs[k]
			_, ok2 := s.hashes[k]
			if ok1 || ok2 {
				n++
				if name != "EXISTS" {
					delete(s.strs, k)
					delete(s.hashes, k)
				}
			}
		}
		return integer(n)
	case "HSET", "HMSET":
		if len(a) < 3 || len(a)%2 == 0 {
			return wrongArgs(name)
		}
		h := s.hashes[a[0]]
		if h == nil {
			delete(s.strs, a[0])
			h = map[string]string{}
			s.hashes[a[0]] = h
		}
		n := 0
		for i := 1; i+1 < len(a); i += 2 {
			if _, ok := h[a[i]]; !ok {
				n++
			}
			h[a[i]] = a[i+1]
		}
		if name == "HMSET" {
			return []byte("+OK\r\n")
		}
		return integer(n)
	case "HGET":
		if len(a) != 2 {
			return wrongArgs(name)
		}
		v, ok := s.hashes[a[0]][a[1]]
		if !ok {
			return []byte("$-1\r\n")
		}
		return bulk(v)
	case "HMGET":
		if len(a) < 2 {
			return wrongArgs(name)
		}
		vals := make([]*string, len(a)-1)
		for i, f := range a[1:] {
			if v, ok := s.hashes[a[0]][f]; ok {
				vals[i] = &v
			}
		}
		return array(vals)
	case "HGETALL":
		if len(a) != 1 {
			return wrongArgs(name)
		}
		var vals []*string
		for f, v := range s.hashes[a[0]] {
			vals = append(vals, &f, &v)
		}
		return array(vals)
	case "TYPE":
		if len(a) != 1 {
			return wrongArgs(name)
		}
		if _, ok := s.strs[a[0]]; ok {
			return []byte("+string\r\n")
		}
		if _, ok := s.hashes[a[0]]; ok {
			return []byte("+hash\r\n")
		}
		return []byte("+none\r\n")
	case "GETRANGE":
		if len(a) != 3 {
			return wrongArgs(name)
		}
		v := s.strs[a[0]]
		from, err1 := strconv.Atoi(a[1])
		to, err2 := strconv.Atoi(a[2])
		if err1 != nil || err2 != nil {
			return []byte("-ERR value is not an integer or out of range\r\n")
		}
		if from < 0 {
			from = max(len(v)+from, 0)
		}
		if to < 0 {
			to = len(v) + to
		}
		to = min(to, len(v)-1)
		if from > to {
			return bulk("")
		}
		return bulk(v[from : to+1])
	case "SETRANGE":
		if len(a) != 3 {
			return wrongArgs(name)
		}
		off, err := strconv.Atoi(a[1])
		if err != nil || off < 0 || off > 1<<20 {
			return []byte("-ERR offset is out of range\r\n")
		}
		v := []byte(s.strs[a[0]])
		if n := off + len(a[2]); n > len(v) {
			v = append(v, make([]byte, n-len(v))...)
		}
		copy(v[off:], a[2])
		delete(s.hashes, a[0])
		s.strs[a[0]] = string(v)
		return integer(len(v))
	case "SADD", "ZADD", "RPUSH", "LPUSH", "ZREMRANGEBYSCORE":
		// Kept by no read of these tests: acknowledged, not stored.
		return integer(max(len(a)-1, 0))
	case "SPOP", "SRANDMEMBER":
		return []byte("$-1\r\n")
	case "ZRANGEBYSCORE", "ZRANGE", "SMEMBERS", "SCAN":
		if name == "SCAN" {
			return []byte("*2\r\n$1\r\n0\r\n*0\r\n")
		}
		return []byte("*0\r\n")
	}
	return []byte("-ERR unknown command '" + args[0] + "'\r\n")
}

func bulk(s string) []byte { return []byte("$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n") }

func integer(n int) []byte { return []byte(":" + strconv.Itoa(n) + "\r\n") }

func wrongArgs(name string) []byte {
	return []byte("-ERR wrong number of arguments for '" + strings.ToLower(name) + "' command\r\n")
}

func array(vals []*string) []byte {
	b := []byte("*" + strconv.Itoa(len(vals)) + "\r\n")
	for _, v := range vals {
		if v == nil {
			b = append(b, "$-1\r\n"...)
		} else {
			b = append(b, bulk(*v)...)
		}
	}
	return b
}

// readCommand reads a RESP array of bulk strings, or an inline command.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("protocol error: bad array length %q", line)
	}
	args := make([]string, n)
	for i := range args {
		l, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if len(l) == 0 || l[0] != '$' {
			return nil, fmt.Errorf("protocol error: want a bulk string, got %q", l)
		}
		m, err := strconv.Atoi(l[1:])
		if err != nil || m < 0 || m > 512<<20 {
			return nil, fmt.Errorf("protocol error: bad bulk length %q", l)
		}
		b := make([]byte, m+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:m])
	}
	return args, nil
}

func readLine(r *bufio.Reader) (string, error) {
	s, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}
