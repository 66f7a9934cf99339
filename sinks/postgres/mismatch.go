package postgres

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/soakd/soakd/sinks"
)

// mismatched wraps err, a failed ping, in the configuration error of a
// protocol mismatch when the server at the URL's address speaks Redis,
// HTTP or HTTPS (sinks.SpeaksOther): PostgreSQL's startup message left a
// Redis waiting for the rest of a command, a web server for the end of a
// request line, each waited for as "cannot reach" until START_TIMEOUT.
// Only before the server first answered.
func (s *Sink) mismatched(ctx context.Context, err error) error {
	if s.answered.Load() || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	cc := s.pool.Config().ConnConfig
	if cc.Host == "" || strings.HasPrefix(cc.Host, "/") {
		return err // a Unix socket
	}
	return sinks.SpeaksOther(ctx, err, net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), sinks.SpeaksPostgreSQL)
}
