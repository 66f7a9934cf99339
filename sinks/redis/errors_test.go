package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/sinks"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("pipeline: %w", err) }
	tests := []struct {
		err   error
		class sinks.Class
		retry bool
	}{
		{wrap(context.DeadlineExceeded), sinks.Timeout, true},
		{context.Canceled, sinks.Timeout, true},
		{goredis.ErrPoolTimeout, sinks.Timeout, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, sinks.Timeout, true},
		{goredis.ErrClosed, sinks.Connection, true},
		{goredis.ErrPoolExhausted, sinks.Connection, true},
		{wrap(io.EOF), sinks.Connection, true},
		{io.ErrUnexpectedEOF, sinks.Connection, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, sinks.Connection, true},
		{wrap(syscall.ECONNRESET), sinks.Connection, true},
		{replyError("LOADING Redis is loading the dataset in memory"), sinks.Server, true},
		{replyError("BUSY Redis is busy running a script"), sinks.Server, true},
		{replyError("ERR TRYAGAIN multiple keys request during rehashing"), sinks.Server, true},
		{replyError("CLUSTERDOWN The cluster is down"), sinks.Server, true},
		{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), sinks.Rejected, false},
		{replyError("MOVED 3999 127.0.0.1:6381"), sinks.Rejected, false},
		{errors.New("something else"), sinks.Other, false},
	}
	for _, tt := range tests {
		if class, retry := classify(tt.err); class != tt.class || retry != tt.retry {
			t.Errorf("classify(%v) = %s, %v; want %s, %v", tt.err, class, retry, tt.class, tt.retry)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// The NOPERM hint tells keys from a command by the reply's words, in
// Redis 7.0's and in 7.2's (and Valkey's), whose replies name the user:
// a user named apikey was told about keys for a command it may not run.
func TestNoPermHint(t *testing.T) {
	t.Parallel()
	s := &Sink{prefix: "p:", index: "p:_indices"}
	const keys, cmd = "may not use this workload's keys", "may not run a command"
	for msg, want := range map[string]string{
		"NOPERM this user has no permissions to access one of the keys used as arguments": keys,
		"NOPERM User apikey has no permissions to access the 'p:user1' key":               keys,
		"NOPERM this user has no permissions to run the 'hset' command":                   cmd,
		"NOPERM User apikey has no permissions to run the 'hset' command":                 cmd,
		"NOPERM User monkey has no permissions to run the 'hset' command":                 cmd,
		"NOPERM User keys-rw has no permissions to access the 'news' channel":             "",
		"WRONGTYPE Operation against a key holding the wrong kind of value":               "",
	} {
		got := s.noPermHint(replyError(msg))
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%q: hint %q, want one with %q", msg, got, want)
		}
	}
}
