package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/sinks"
)

// replyError is an error reply read from a raw (array) reply, where
// go-redis does not parse it into a typed error.
type replyError string

func (e replyError) Error() string { return string(e) }

// RedisError marks it as a server reply, like go-redis's own errors.
func (replyError) RedisError() {}

// redirected reports whether err is a MOVED or ASK reply read from a raw
// (array) reply, which go-redis did not follow.
func redirected(err error) bool {
	var r replyError
	return errors.As(err, &r) && (strings.HasPrefix(string(r), "MOVED ") || strings.HasPrefix(string(r), "ASK "))
}

// classify maps a go-redis or network error to a class, and says whether
// sending the batch again is safe. Every operation soakd sends is safe to
// apply twice (SET, HSET, SADD, ZADD overwrite; a repeated SPOP+SADD
// still leaves FIELDS members), so only rejections are not retried.
// Timeouts and network errors are sinks.ClassOf's; this adds go-redis's
// own errors and the server's error replies.
func classify(err error) (sinks.Class, bool) {
	var rerr goredis.Error
	switch {
	case errors.Is(err, goredis.ErrPoolTimeout), errors.Is(err, context.Canceled):
		return sinks.Timeout, true
	case errors.Is(err, goredis.ErrClosed), errors.Is(err, goredis.ErrPoolExhausted):
		return sinks.Connection, true
	case errors.As(err, &rerr):
		// The reply itself: go-redis's checks of a reply wrapped in
		// another error find only its own reply type (proto.RedisError)
		// through the wrapping, not the RESP connection's replyError.
		return classifyReply(rerr, rerr.Error())
	}
	if c := sinks.ClassOf(err); c != sinks.Other {
		return c, true
	}
	return sinks.Other, false
}

// classifyReply classifies an error reply from the server. Busy or
// failing-over servers (LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN,
// too many clients, NOREPLICAS: a master whose min-replicas-to-write
// replicas lag or are away, a while as a replica syncs) are server
// errors worth retrying, as go-redis retries them; everything else
// (OOM, READONLY, NOAUTH, WRONGPASS, NOPERM, WRONGTYPE, a MOVED seen
// outside a cluster client, unknown commands) is a rejection.
func classifyReply(err error, msg string) (sinks.Class, bool) {
	switch {
	case goredis.IsLoadingError(err), goredis.IsTryAgainError(err), goredis.IsClusterDownError(err),
		goredis.IsMasterDownError(err), goredis.IsNoReplicasError(err), goredis.IsMaxClientsError(err):
		return sinks.Server, true
	case goredis.IsOOMError(err), goredis.IsReadOnlyError(err), goredis.IsAuthError(err),
		goredis.IsPermissionError(err), goredis.IsExecAbortError(err):
		return sinks.Rejected, false
	}
	if _, ok := goredis.IsMovedError(err); ok {
		return sinks.Rejected, false
	}
	// Raw array replies and codes go-redis has no helper for (BUSY,
	// WRONGTYPE, ...) by their first word, as the protocol defines them.
	code, _, _ := strings.Cut(strings.TrimPrefix(msg, "ERR "), " ")
	switch code {
	case "LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "NOREPLICAS":
		return sinks.Server, true
	}
	return sinks.Rejected, false
}

// isAuthError reports whether err is or wraps an authentication
// failure reply (NOAUTH, WRONGPASS), from go-redis or the RESP
// connection.
func isAuthError(err error) bool {
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		return goredis.IsAuthError(rerr)
	}
	return goredis.IsAuthError(err)
}

// cancelled is the error of an operation whose context was done before
// it started: nothing was sent.
func cancelled(err error) error {
	return sinks.NewError(sinks.Timeout, true, fmt.Errorf("nothing sent: %w", err))
}
