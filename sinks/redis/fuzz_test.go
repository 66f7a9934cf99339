package redis

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// replyServer answers the connection handshake with +OK and the first
// other command with reply, whatever its bytes, then hangs up: a server
// whose answers are arbitrary.
type replyServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	reply []byte
}

func newReplyServer(t testing.TB) *replyServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replyServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *replyServer) set(reply []byte) {
	s.mu.Lock()
	s.reply = reply
	s.mu.Unlock()
}

func (s *replyServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	for {
		name, err := readCommand(r)
		if err != nil {
			return
		}
		switch name {
		case "HELLO", "CLIENT", "SELECT", "AUTH", "PING":
			if _, err := io.WriteString(c, "+OK\r\n"); err != nil {
				return
			}
			continue
		}
		s.mu.Lock()
		reply := s.reply
		s.mu.Unlock()
		_, _ = c.Write(reply)
		return
	}
}

// readCommand reads one RESP command (an array of bulk strings) and
// returns its name, upper case.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*") {
		return "", errors.New("not a command")
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return "", errors.New("bad array")
	}
	var name string
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "$") {
			return "", errors.New("not a bulk string")
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil || size < 0 {
			return "", errors.New("bad bulk length")
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		if i == 0 {
			name = strings.ToUpper(string(buf[:size]))
		}
	}
	return name, nil
}

// FuzzServerReply writes batches of every data type to a server that
// answers with arbitrary bytes. Whatever it says, Write returns
// before its deadline, and any error is one of the classes.
func FuzzServerReply(f *testing.F) {
	for _, seed := range []string{
		"+OK\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n", "*2\r\n$1\r\na\r\n$-1\r\n", "_\r\n",
		"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
		"-READONLY You can't write against a read only replica.\r\n",
		"-LOADING Redis is loading the dataset in memory\r\n", "-MOVED 3999 127.0.0.1:6381\r\n",
		"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
		"!21\r\nSYNTAX invalid syntax\r\n", "$99999999999\r\n", "*3\r\n:1\r\n", "%1\r\n+a\r\n-b\r\n",
		":-9223372036854775808\r\n", "\x00\xff garbage", "$5\r\nab",
	} {
		for dt := range byte(4) {
			f.Add([]byte(seed), dt, byte('a'))
		}
	}
	srv := newReplyServer(f)
	sinksByType := map[sources.DataType]*Sink{}
	sourcesByKey := map[string]*kv.Source{}
	f.Fuzz(func(t *testing.T, reply []byte, dtByte, workload byte) {
		dt := []sources.DataType{sources.DataTypeString, sources.DataTypeHash, sources.DataTypeSet, sources.DataTypeZSet}[dtByte%4]
		wl := string(rune('a' + workload%6))
		s := sinksByType[dt]
		if s == nil {
			s = open(t, "redis://"+srv.ln.Addr().String()+"?protocol=2&read_timeout=2s&dial_timeout=2s", sinks.Options{Workers: 1})
			sinksByType[dt] = s
		}
		src := sourcesByKey[string(dt)+wl]
		if src == nil {
			c := kv.DefaultConfig()
			c.Records, c.Fields, c.FieldLength, c.DataType, c.KeyPrefix = 50, 3, 16, dt, "f:"
			w, err := kv.ParseWorkload(wl)
			if err != nil {
				t.Fatal(err)
			}
			c.Workload = w
			src = source(t, c)
			sourcesByKey[string(dt)+wl] = src
		}
		st, err := src.Stream(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		b := src.NewBatch()
		_ = st.Fill(b, 4, 0)
		srv.set(reply)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := s.Write(ctx, b)
		if n < 0 {
			t.Fatalf("Write sent %d bytes", n)
		}
		if ctx.Err() != nil {
			t.Fatalf("Write did not return before its deadline: %v", err)
		}
		if err != nil {
			var se *sinks.Error
			if !errors.As(err, &se) {
				t.Fatalf("%v (%T) is not classified", err, err)
			}
			if se.Class.Index() == len(sinks.Classes)-1 && se.Class != sinks.Other {
				t.Errorf("class %q is not one of the classes", se.Class)
			}
		}
	})
}
