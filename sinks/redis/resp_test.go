package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/kv"
)

// replyConn is a connection whose reads are a fixed byte stream, read a
// few bytes at a time so replies cross read boundaries.
type replyConn struct {
	net.Conn
	r     *bytes.Reader
	chunk int
}

func (c *replyConn) Read(b []byte) (int, error) {
	return c.r.Read(b[:min(len(b), c.chunk)])
}

func readerOf(s string, chunk int) *respConn {
	rc := newRespConn(&replyConn{r: bytes.NewReader([]byte(s)), chunk: chunk})
	return rc
}

// The replies the sink reads, in RESP2 and RESP3, and what it makes of
// them.
func TestRESPReplies(t *testing.T) {
	for _, chunk := range []int{1, 3, 1 << 20} {
		scalars := []struct {
			in, want string
			err      string
		}{
			{"+OK\r\n", "OK", ""},
			{":12\r\n", "12", ""},
			{"$5\r\nhello\r\n", "hello", ""},
			{"$0\r\n\r\n", "", ""},
			{"$-1\r\n", "", "redis: nil"},
			{"*-1\r\n", "", "redis: nil"},
			{"_\r\n", "", "redis: nil"},
			{"|1\r\n+ttl\r\n:3\r\n$2\r\nab\r\n", "ab", ""},
			{"-WRONGTYPE Operation against a key\r\n", "", "WRONGTYPE Operation against a key"},
			{"!10\r\nLOADING xy\r\n", "", "LOADING xy"},
			{"$20\r\n01234567890123456789\r\n", "", "reply of 20 bytes is longer than the 8 expected"},
			{"*1\r\n$1\r\na\r\n", "", "invalid reply"},
			{"$3\r\nabcd\r\n", "", "invalid reply"},
			{"$x\r\n", "", "invalid reply"},
			{"\r\n", "", "invalid reply"},
			{"?\r\n", "", "invalid reply"},
			{"$5\r\nab", "", "EOF"},
		}
		for _, tc := range scalars {
			buf := make([]byte, 8)
			n, err := readerOf(tc.in, chunk).scalar(buf)
			if tc.err == "" && (err != nil || string(buf[:n]) != tc.want) {
				t.Errorf("scalar(%q) by %d = %q, %v; want %q", tc.in, chunk, buf[:n], err, tc.want)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("scalar(%q) by %d: error %v, want %q", tc.in, chunk, err, tc.err)
			}
		}
		arrays := []struct {
			in    string
			empty bool
			keys  []string
			err   string
		}{
			{"*0\r\n", true, nil, ""},
			{"*-1\r\n", true, nil, ""},
			{"_\r\n", true, nil, ""},
			{"*2\r\n$-1\r\n$-1\r\n", true, nil, ""},
			{"*2\r\n_\r\n_\r\n", true, nil, ""},
			{"*2\r\n$2\r\nk1\r\n+k2\r\n", false, []string{"k1", "k2"}, ""},
			{"~1\r\n$3\r\nabc\r\n", false, []string{"abc"}, ""},
			{"%1\r\n$1\r\nf\r\n$1\r\nv\r\n", false, []string{"f", "v"}, ""},
			{"-MOVED 3999 127.0.0.1:6381\r\n", false, nil, "MOVED 3999"},
			{"*1\r\n:5\r\n", false, nil, "where a key was expected"},
			{"*1\r\n$99999999\r\n", false, nil, "out of range"},
			{"+OK\r\n", false, nil, "where an array was expected"},
			{strings.Repeat("*1\r\n", 100) + ":1\r\n", false, nil, "nested deeper"},
		}
		for _, tc := range arrays {
			var keys keyList
			empty, err := readerOf(tc.in, chunk).aggregate(&keys)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("aggregate(%q) by %d: error %v, want %q", tc.in, chunk, err, tc.err)
				}
				continue
			}
			var got []string
			for i := range keys.ends {
				got = append(got, keys.key(i))
			}
			if err != nil || empty != tc.empty || strings.Join(got, ",") != strings.Join(tc.keys, ",") {
				t.Errorf("aggregate(%q) by %d = %v, %q, %v; want %v, %q", tc.in, chunk, empty, got, err, tc.empty, tc.keys)
			}
		}
	}
}

// An error reply read by the RESP connection classifies as go-redis's
// parsed error replies do.
func TestRESPErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		reply string
		class sinks.Class
		retry bool
	}{
		{"-LOADING Redis is loading the dataset in memory\r\n", sinks.Server, true},
		{"-BUSY Redis is busy running a script\r\n", sinks.Server, true},
		{"-TRYAGAIN Multiple keys request during rehashing\r\n", sinks.Server, true},
		{"-CLUSTERDOWN The cluster is down\r\n", sinks.Server, true},
		{"-MASTERDOWN Link with MASTER is down\r\n", sinks.Server, true},
		{"-ERR max number of clients reached\r\n", sinks.Server, true},
		{"-OOM command not allowed when used memory > 'maxmemory'.\r\n", sinks.Rejected, false},
		{"-READONLY You can't write against a read only replica.\r\n", sinks.Rejected, false},
		{"-NOAUTH Authentication required.\r\n", sinks.Rejected, false},
		{"-WRONGPASS invalid username-password pair\r\n", sinks.Rejected, false},
		{"-NOPERM this user has no permissions\r\n", sinks.Rejected, false},
		{"-MOVED 3999 127.0.0.1:6381\r\n", sinks.Rejected, false},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", sinks.Rejected, false},
		{"-ERR unknown command 'X'\r\n", sinks.Rejected, false},
	} {
		_, err := readerOf(tc.reply, 1<<20).scalar(make([]byte, 8))
		var rerr goredis.Error
		if !errors.As(err, &rerr) {
			t.Fatalf("%q: %v (%T) is not a server reply", tc.reply, err, err)
		}
		class, retry := classify(err)
		if class != tc.class || retry != tc.retry {
			t.Errorf("%q: %s retry=%v, want %s retry=%v", tc.reply, class, retry, tc.class, tc.retry)
		}
		// As a reply to the connection's setup, wrapped.
		class, retry = classify(fmt.Errorf("failed to authenticate: %w", err))
		if class != tc.class || retry != tc.retry {
			t.Errorf("%q in setup: %s retry=%v, want %s retry=%v", tc.reply, class, retry, tc.class, tc.retry)
		}
		auth := strings.HasPrefix(tc.reply, "-NOAUTH") || strings.HasPrefix(tc.reply, "-WRONGPASS")
		if got := isAuthError(fmt.Errorf("failed to authenticate: %w", err)); got != auth {
			t.Errorf("%q in setup: authentication failure %v, want %v", tc.reply, got, auth)
		}
	}
}

// FuzzRESPReply reads arbitrary bytes as replies of every kind the sink
// reads. Whatever they are, the reader does not panic, returns once the
// bytes run out, and reports a failure as a server reply, nil, a
// malformed reply or the end of the stream.
func FuzzRESPReply(f *testing.F) {
	for _, seed := range []string{
		"+OK\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n", "*2\r\n$1\r\na\r\n$-1\r\n", "_\r\n", "%1\r\n+a\r\n-b\r\n",
		"|1\r\n+a\r\n+b\r\n+OK\r\n", "!5\r\nERR x\r\n", "$99999999999\r\n", "*99999999\r\n", ">2\r\n:1\r\n:2\r\n",
		"=8\r\ntxt:abcd\r\n", "(123\r\n", "#t\r\n", ",1.5\r\n", "*3\r\n:1\r\n", "$5\r\nab", "\x00\xff garbage",
	} {
		f.Add([]byte(seed), byte(0), byte(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, kinds, chunk byte) {
		rc := newRespConn(&replyConn{r: bytes.NewReader(in), chunk: 1 + int(chunk%16)})
		var keys keyList
		buf := make([]byte, 64)
		for i := 0; ; i++ {
			var err error
			switch (int(kinds) + i) % 4 {
			case 0:
				var n int
				n, err = rc.scalar(buf)
				if n < 0 || n > len(buf) {
					t.Fatalf("scalar read %d bytes into %d", n, len(buf))
				}
			case 1:
				_, err = rc.aggregate(nil)
			case 2:
				_, err = rc.aggregate(&keys)
			case 3:
				err = rc.skipReply()
			}
			var rerr replyError
			var perr *errProtocol
			switch {
			case err == nil, errors.Is(err, goredis.Nil), errors.As(err, &rerr):
				// A whole reply was read: the next one follows.
				if i > len(in) {
					t.Fatalf("%d replies out of %d bytes", i, len(in))
				}
			case errors.As(err, &perr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				return
			case strings.Contains(err.Error(), "is longer than"):
			default:
				t.Fatalf("reply %d: %v (%T)", i, err, err)
			}
		}
	})
}

// The connection is set up as the URL says: password and user, database,
// client name, and RESP3 replies are read as RESP2 ones.
func TestConnectionSetup(t *testing.T) {
	const pw = "setup-pw"
	srv := testserver.Redis(t, "--requirepass", pw)
	a := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Password: pw, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	if err := a.Do(ctx, "ACL", "SETUSER", "soak", "on", ">soak-pw", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{"2", "3"} {
		t.Run("protocol "+proto, func(t *testing.T) {
			prefix := "setup" + proto + ":"
			c := kv.DefaultConfig()
			c.Records, c.Fields, c.FieldLength, c.KeyPrefix = 50, 3, 10, prefix
			c.Workload, _ = kv.ParseWorkload("read=0.5,update=0.5")
			src := source(t, c)
			s := open(t, "redis://soak:soak-pw@"+srv.Addr+"/3?client_name=soak-setup-"+proto+"&protocol="+proto,
				sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: prefix}})
			runLoad(t, src, s, 1)
			runOps(t, src, s, 200, 16)
			if m := s.Misses(); m != 0 {
				t.Errorf("%d reads found no record", m)
			}
			in3 := goredis.NewClient(&goredis.Options{Addr: srv.Addr, Password: pw, DB: 3, Protocol: 2, DisableIdentity: true})
			defer in3.Close()
			key := string(src.AppendKey(nil, 0))
			if n, err := in3.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Errorf("record 0 in db 3: %d, %v", n, err)
			}
			if n, err := a.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("record 0 in db 0: %d, %v", n, err)
			}
			list, err := a.ClientList(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(list, "name=soak-setup-"+proto+" ") || !strings.Contains(list, "user=soak ") {
				t.Errorf("no connection named soak-setup-%s of user soak in CLIENT LIST:\n%s", proto, list)
			}
			if !strings.Contains(list, "resp="+proto) {
				t.Errorf("no connection with resp=%s in CLIENT LIST:\n%s", proto, list)
			}
		})
	}
}
