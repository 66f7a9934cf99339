package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
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
		{replyError("NOREPLICAS Not enough good replicas to write."), sinks.Server, true},
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

// A server that refuses writes for its own state says what to change:
// at its maxmemory with noeviction (OOM), raise it or hold fewer records;
// a master short of replicas (NOREPLICAS, retried), bring them back or
// lower min-replicas-to-write; a read-only replica (READONLY), write to
// its master. No reply names a setting.
func TestRefusalHints(t *testing.T) {
	srv := testserver.Redis(t)
	a := admin(t, srv)
	ctx := t.Context()
	_, b := insertBatch(t)
	s := open(t, srv.URL, sinks.Options{Shape: sources.KVShape{DataType: sources.DataTypeHash, KeyPrefix: "e:"}})
	for _, tc := range []struct {
		name       string
		make, lift [][]any
		want       string
	}{
		{"OOM", [][]any{{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "1"}},
			[][]any{{"CONFIG", "SET", "maxmemory", "0"}},
			"(the server is at its maxmemory and frees none for the write (its maxmemory-policy is noeviction, or volatile-* while soakd's keys have no TTL, or nothing is left to evict): raise its maxmemory, or hold fewer records (RECORDS, FIELDS, FIELD_LENGTH))"},
		{"NOREPLICAS", [][]any{{"CONFIG", "SET", "min-replicas-to-write", "1"}},
			[][]any{{"CONFIG", "SET", "min-replicas-to-write", "0"}},
			"(the server takes writes only while min-replicas-to-write replicas are connected with a lag under min-replicas-max-lag (INFO replication's connected_slaves and their lag): bring its replicas back, or lower min-replicas-to-write)"},
		{"READONLY", [][]any{{"REPLICAOF", "127.0.0.1", strconv.Itoa(testserver.ClosedPort(t))}},
			[][]any{{"REPLICAOF", "NO", "ONE"}},
			"(the server is a read-only replica: set TARGET to its master (INFO replication's master_host and master_port), or use redis-sentinel:// to follow its master through failovers)"},
	} {
		for _, cmd := range tc.make {
			if err := a.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		_, err := s.Write(ctx, b)
		// NOREPLICAS passes as the replicas catch up: retried, as go-redis
		// retries it; OOM and READONLY wait for an operator.
		class, retry := sinks.Rejected, false
		if tc.name == "NOREPLICAS" {
			class, retry = sinks.Server, true
		}
		if err == nil || errClass(t, err) != class || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: write = %v; want class %s saying %q", tc.name, err, class, tc.want)
		} else if ok, _ := sinks.Retryable(err); ok != retry {
			t.Errorf("%s: write = %v, retryable %v; want %v", tc.name, err, ok, retry)
		}
		for _, cmd := range tc.lift {
			if err := a.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		if _, err := s.Write(ctx, b); err != nil {
			t.Errorf("%s lifted: write = %v", tc.name, err)
		}
	}
}
