package sinks

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Class is why a write failed; it is the class label of soakd_errors_total.
type Class string

const (
	// Timeout: the target did not answer in time.
	Timeout Class = "timeout"
	// Connection: the target could not be reached or the connection broke.
	Connection Class = "connection"
	// Rejected: the target refused the request (bad data, auth, quota,
	// read-only, out of memory): retrying the same request will not help.
	Rejected Class = "rejected"
	// Server: the target failed while handling the request (5xx, internal
	// error); a retry may succeed.
	Server Class = "server"
	// OutOfOrder: the target refused samples for their time: older than
	// what it holds for their series, a second value at a time it has, or
	// older than it accepts (Prometheus' out-of-order, duplicate and
	// out-of-bounds samples). Like Rejected, resending will not help; it
	// is its own class because ordering is what a time-series database
	// under late data and series churn gets wrong.
	OutOfOrder Class = "out_of_order"
	// Empty: a query answered no rows where the data it reads must exist
	// (e.g. lastpoint on a table that holds rows), or a KV read or scan
	// found no record of those the run loaded or inserted: the target lost
	// data or the request cannot see it.
	Empty Class = "empty"
	// Other: a failure the sink could not classify.
	Other Class = "other"
)

// Classes lists every class, in a fixed order. It is an array so that
// per-class counters can be arrays of len(Classes): a class outside this
// list (a sink's typo) is counted as Other, never indexed out of range.
// Other stays last: Index maps unknown classes to the last slot.
var Classes = [...]Class{Timeout, Connection, Rejected, Server, OutOfOrder, Empty, Other}

// Index returns c's position in Classes; a class not in the list is
// Other's position.
func (c Class) Index() int {
	for i, k := range Classes {
		if k == c {
			return i
		}
	}
	return len(Classes) - 1
}

// Error is a classified sink error. Sinks wrap what their client library
// returns so the engine can count it by class and decide on retries.
type Error struct {
	Class Class
	// Retry reports that resending the same batch is safe (it was not
	// applied, or applying it twice is harmless).
	Retry bool
	// RetryAfter is a server-requested wait before retrying (0 = none).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string { return string(e.Class) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf-style helpers keep sink code short.

// NewError wraps err with a class; retry says whether resending is safe.
func NewError(c Class, retry bool, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Retry: retry, Err: err}
}

// ClassOf classifies err: a *Error's class, else timeouts and network
// errors by type, else Other.
func ClassOf(err error) Class {
	if err == nil {
		return ""
	}
	var se *Error
	if errors.As(err, &se) {
		return se.Class
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Timeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	var oe *net.OpError
	// A connection closed under a request reads as EOF.
	if errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Connection
	}
	return Other
}

// Retryable reports whether the batch that failed with err may be sent
// again, and after how long at least.
func Retryable(err error) (ok bool, after time.Duration) {
	var se *Error
	if errors.As(err, &se) {
		return se.Retry, se.RetryAfter
	}
	return false, 0
}

// Stored returns how many units of a failed batch the target kept anyway
// (a partial write: the error has a Stored() int method, as InfluxDB's
// "partial write" answers do), or 0.
func Stored(err error) int {
	var p interface{ Stored() int }
	if errors.As(err, &p) {
		return max(p.Stored(), 0)
	}
	return 0
}

// FailedUnits returns the positions in the batch of the units that failed
// when err says so (the error has a FailedUnits() []int method, as the
// Redis sink's reads that find no record do): the batch's other units
// were acknowledged. It returns nil when err is about the whole batch.
func FailedUnits(err error) []int {
	var p interface{ FailedUnits() []int }
	if errors.As(err, &p) {
		return p.FailedUnits()
	}
	return nil
}

// UnitsError is a failure of some units of a batch only; the others were
// acknowledged. Units holds their positions in the batch, ascending.
type UnitsError struct {
	Units []int
	Err   error // a classified *Error
}

func (e *UnitsError) Error() string      { return e.Err.Error() }
func (e *UnitsError) Unwrap() error      { return e.Err }
func (e *UnitsError) FailedUnits() []int { return e.Units }

// AuthFailed starts the text of a sink's error when the target refused
// its credentials, so that soakd can add which settings hold them (the
// URL's password, PASSWORD, PASSWORD_FILE) wherever the error is shown.
const AuthFailed = "authentication failed"

// TooLarge is added to the message of a request the server refused as
// too large (HTTP 413): every batch of that size will be, and the
// setting to change is soakd's.
const TooLarge = "the request is larger than the server takes: lower BATCH_SIZE"
