package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
)

// probeTimeout bounds a probe of the server's protocol.
const probeTimeout = 2 * time.Second

// mismatched wraps err, a failed ping, in the configuration error of a
// protocol mismatch when the server at the URL's address speaks Redis,
// HTTP or HTTPS (sinks.Speaks): a wrong port, most often another service
// of the same deployment. A Redis takes PostgreSQL's startup message for
// the start of a command and waits for the rest, a web server for the
// end of a request line: each was waited for as a server that does not
// answer, "cannot reach", until START_TIMEOUT. Only before the server
// first answered, and only when a connection was made (a failed dial
// says what it is).
func (s *Sink) mismatched(ctx context.Context, err error) error {
	if s.answered.Load() || errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	if c := sinks.ClassOf(err); c != sinks.Timeout && c != sinks.Connection {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return err
	}
	cc := s.pool.Config().ConnConfig
	if cc.Host == "" || strings.HasPrefix(cc.Host, "/") {
		return err // a Unix socket
	}
	addr := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	switch p := sinks.Speaks(pctx, addr); p {
	case sinks.SpeaksRedis, sinks.SpeaksHTTP, sinks.SpeaksHTTPS:
		m := fmt.Errorf("the server at %s speaks %s, not PostgreSQL: check the target URL's host and port", addr, p)
		return sinks.NewError(sinks.Rejected, false, &sinks.ProtocolMismatch{Err: fmt.Errorf("%w (%v)", m, err)})
	}
	return err
}
