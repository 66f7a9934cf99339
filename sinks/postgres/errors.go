package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/soakd/soakd/sinks"
)

// classifyCode maps a SQLSTATE to a class, and says whether resending the
// statement may help. A server-reported error means the statement (and
// its implicit or explicit transaction) was not applied, so resending is
// always safe; Rejected errors are marked not to be retried because the
// same rows would fail the same way.
func classifyCode(code string) (sinks.Class, bool) {
	switch code {
	case "57014": // query_canceled (statement_timeout, cancel request)
		return sinks.Timeout, true
	case "57P01", "57P02", "57P03", "57P05": // admin/crash shutdown, cannot connect now, idle session timeout
		// The server is going away or not up yet: to a soak test that is
		// the connection being lost, not a failed write.
		return sinks.Connection, true
	case "25006": // read_only_sql_transaction (a standby, or default_transaction_read_only)
		return sinks.Rejected, false
	case "55P03", "55006": // lock_not_available, object_in_use
		return sinks.Server, true
	}
	if len(code) < 2 {
		return sinks.Other, false
	}
	switch code[:2] {
	case "08": // connection exception
		return sinks.Connection, true
	case "40": // transaction rollback: serialization failure, deadlock
		return sinks.Server, true
	case "53", "57", "58", "XX", "F0", "HV", "25", "55": // resources, operator intervention, system, internal
		return sinks.Server, true
	case "22", "23", "42", "0A", "28", "3D", "3F", "54", "44", "21", "2B", "2F", "38", "39", "0L", "0P", "P0":
		// data, constraint, syntax/access, unsupported, auth, missing
		// database/schema, limits, check option, privileges, routines
		return sinks.Rejected, false
	}
	return sinks.Other, false
}

// classify wraps err in a *sinks.Error. connLost tells that the
// connection the error came from is now closed. dedup says that a batch
// applied twice is harmless, so any failure may be retried.
func classify(err error, connLost, dedup bool) error {
	if err == nil {
		return nil
	}
	var se *sinks.Error
	if errors.As(err, &se) {
		return err
	}
	if refusedTLS(err) {
		// The server said it takes no TLS (sslmode=require or verify-*):
		// it will say so again.
		return sinks.NewError(sinks.Rejected, false, &sinks.ProtocolMismatch{Err: fmt.Errorf(
			"the server does not take TLS connections: use sslmode=disable or prefer in the target URL, or turn ssl on in the server: %w", err)})
	}
	if sinks.TLSRefused(err) {
		// A certificate that did not verify (or a client certificate the
		// server refused) will be refused again: a configuration error,
		// not a target that is down.
		return sinks.NewError(sinks.Rejected, false, sinks.ExplainTLS(err, "sslrootcert", "sslmode=verify-full", "sslcert and sslkey"))
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c, retry := classifyCode(pgErr.Code)
		return sinks.NewError(c, retry, err)
	}
	var ce *pgconn.ConnectError
	connect := errors.As(err, &ce)
	// Nothing reached the server when connecting failed or pgconn says so.
	safe := connect || pgconn.SafeToRetry(err) || dedup
	switch {
	case pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return sinks.NewError(sinks.Timeout, safe, err)
	case connect || connLost || isNetwork(err):
		return sinks.NewError(sinks.Connection, safe, err)
	}
	return sinks.NewError(sinks.Other, safe, err)
}

// isNetwork reports a failure of the connection itself: any net.Error
// (syscall errnos are ones too) and what sinks.ClassOf calls a connection
// error (a closed connection, EOF, ...).
func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || sinks.ClassOf(err) == sinks.Connection
}

// refusedTLS says whether every connection attempt err tells of was the
// server's refusal of TLS: with sslmode=prefer a refusal is followed by
// an attempt in plain text, whose own failure is what matters.
func refusedTLS(err error) bool {
	const refused = "server refused TLS connection"
	if !strings.Contains(err.Error(), refused) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		if j, ok := ce.Unwrap().(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !strings.Contains(e.Error(), refused) {
					return false
				}
			}
		}
	}
	return true
}

// explainWrite adds to a write's error what to change when the server's
// own message does not say it in soakd's terms.
//
// "out of shared memory" (53200) is PostgreSQL's lock table full
// (max_locks_per_transaction × max_connections locks). A write locks
// every table it inserts into until it commits, and into a TimescaleDB
// hypertable that is every chunk its rows fall in: a batch whose rows
// span more chunks than that fails each time it is sent, a hint that
// PostgreSQL gives but pgx does not print.
//
// "row is too big" (54000) is a row wider than a page: PostgreSQL stores
// a row of fixed-width fields (bigint, double precision) whole in one
// 8 KB page, at most 8160 bytes, and its NULL bitmap takes a bit a
// column once a row holds one NULL. 1000 fields of 8 bytes fit without
// NULLs only: the massive source's largest COLUMNS fails on every row
// that has a NULL (MISSING), and on every row with layout=tsbs (whose
// additional_tags column is NULL).
func (s *Sink) explainWrite(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "54000" && strings.Contains(pgErr.Message, "row is too big") {
		fields := 0
		for _, p := range *s.plans.Load() {
			fields = max(fields, len(p.schema.Fields))
		}
		return fmt.Errorf("%w: a row of %d fields of 8 bytes does not fit in a PostgreSQL page (8160 bytes at most), "+
			"which holds some 1000 only when the row has no NULL, unlike rows with a MISSING value or with layout=tsbs: "+
			"fewer fields (the massive source's COLUMNS; 990 fit), or MISSING=0 with the soakd layout", err, fields)
	}
	if !errors.As(err, &pgErr) || pgErr.Code != "53200" || !strings.Contains(pgErr.Message, "shared memory") {
		return err
	}
	if s.cfg.Dialect == TimescaleDB {
		ci := "TimescaleDB's default, 7 days"
		if s.cfg.ChunkInterval > 0 {
			ci = s.cfg.ChunkInterval.String()
		}
		return fmt.Errorf("%w: the server's lock table is full, and a write locks every chunk its rows fall in: "+
			"fewer chunks a batch, a longer chunk_interval= (now %s; an existing hypertable keeps its own) or a smaller BATCH_SIZE, "+
			"or raise the server's max_locks_per_transaction", err, ci)
	}
	return fmt.Errorf("%w: the server's lock table is full: a smaller BATCH_SIZE or fewer WORKERS, "+
		"or raise the server's max_locks_per_transaction", err)
}
