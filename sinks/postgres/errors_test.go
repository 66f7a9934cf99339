package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/soakd/soakd/sinks"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return fmt.Errorf("cannot copy 10 rows into cpu: %w", &pgconn.PgError{Severity: "ERROR", Code: code})
	}
	cases := []struct {
		name     string
		err      error
		connLost bool
		dedup    bool
		class    sinks.Class
		retry    bool
	}{
		{"unique violation", pg("23505"), false, false, sinks.Rejected, false},
		{"bad binary data", pg("22P03"), false, false, sinks.Rejected, false},
		{"undefined table", pg("42P01"), false, false, sinks.Rejected, false},
		{"bad password", pg("28P01"), false, false, sinks.Rejected, false},
		{"no database", pg("3D000"), false, false, sinks.Rejected, false},
		{"read only", pg("25006"), false, false, sinks.Rejected, false},
		{"admin shutdown", pg("57P01"), true, false, sinks.Connection, true},
		{"starting up", pg("57P03"), false, false, sinks.Connection, true},
		{"protocol violation", pg("08P01"), false, false, sinks.Connection, true},
		{"statement timeout", pg("57014"), false, false, sinks.Timeout, true},
		{"too many connections", pg("53300"), false, false, sinks.Server, true},
		{"disk full", pg("53100"), false, false, sinks.Server, true},
		{"deadlock", pg("40P01"), false, false, sinks.Server, true},
		{"internal", pg("XX000"), false, false, sinks.Server, true},
		{"lock not available", pg("55P03"), false, false, sinks.Server, true},
		{"unknown class", pg("ZZ999"), false, false, sinks.Other, false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false, false, sinks.Timeout, false},
		{"deadline with dedup", fmt.Errorf("x: %w", context.DeadlineExceeded), false, true, sinks.Timeout, true},
		{"eof mid-write", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), false, false, sinks.Connection, false},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, false, false, sinks.Connection, false},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), false, false, sinks.Connection, false},
		{"closed connection", errors.New("conn closed"), true, false, sinks.Connection, false},
		{"unknown", errors.New("something"), false, false, sinks.Other, false},
		{"already classified", sinks.NewError(sinks.Rejected, false, errors.New("x")), true, true, sinks.Rejected, false},
	}
	for _, c := range cases {
		err := classify(c.err, c.connLost, c.dedup)
		var se *sinks.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: %T is not a *sinks.Error", c.name, err)
			continue
		}
		if se.Class != c.class || se.Retry != c.retry {
			t.Errorf("%s: class %s retry %v, want %s %v", c.name, se.Class, se.Retry, c.class, c.retry)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: the original error is not wrapped", c.name)
		}
	}
	if classify(nil, true, true) != nil {
		t.Error("classify(nil) is not nil")
	}
}
