package influx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// StatusError is a write the target answered with a non-2xx status. The
// sink returns it wrapped in a *sinks.Error that carries the class.
type StatusError struct {
	StatusCode int
	// Message is the server's error message (at most maxMessage bytes).
	Message string
	// Partial reports a partial write: the target stored some points of the
	// batch and dropped Dropped of Points (InfluxDB 1.x "partial write: ...
	// dropped=N", 2.x "partial write error (N written)").
	Partial bool
	Dropped int
	Points  int
}

func (e *StatusError) Error() string {
	if e.Partial {
		msg := fmt.Sprintf("partial write: %d of %d points not stored (HTTP %d): %s", e.Dropped, e.Points, e.StatusCode, e.Message)
		for _, h := range partialHints {
			if strings.Contains(e.Message, h.says) {
				msg += " (" + h.hint + ")"
				break
			}
		}
		return msg
	}
	if e.StatusCode == http.StatusRequestEntityTooLarge {
		// Every batch of that size will be refused: the setting to
		// change is soakd's.
		return fmt.Sprintf("HTTP %d: %s (%s, or compress it: gzip=)", e.StatusCode, e.Message, sinks.TooLarge)
	}
	if strings.Contains(e.Message, "cache-max-memory-size exceeded") {
		return fmt.Sprintf("HTTP %d: %s (%s)", e.StatusCode, e.Message, cacheFull)
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// cacheFull is added to InfluxDB 1.x's refusal of a write its in-memory
// cache has no room for ("cache-max-memory-size exceeded: (N/LIMIT)", N
// the cache with the write): the server takes writes faster than it
// snapshots them to disk, or one batch is larger than the whole cache,
// which resending never fits.
const cacheFull = "the server's write cache is full: it takes writes faster than it writes them to disk (a lower RATE), " +
	"and a batch larger than the cache never fits (a smaller BATCH_SIZE); or raise cache-max-memory-size ([data] in influxdb.conf)"

// Stored is the number of points of the batch the target stored despite
// the error (only partial writes store any).
func (e *StatusError) Stored() int {
	if e.Partial && e.Points > e.Dropped {
		return e.Points - e.Dropped
	}
	return 0
}

const maxMessage = 1024

// partialHints say what to change when InfluxDB refuses points for a
// reason resending cannot change: soakd's settings, or the server's.
var partialHints = []struct{ says, hint string }{
	// Points older than the retention policy keeps ("points beyond
	// retention policy dropped=N").
	{"points beyond retention policy", "the points are older than the retention policy keeps: " +
		"set START later (and OUT_OF_ORDER or OFFLINE lateness shorter), " +
		"or lengthen the retention policy (ALTER RETENTION POLICY ... DURATION; 2.x: the bucket's retention)"},
	// InfluxDB 1.8 counts every point of a write against the limit
	// before it finds which series exist: a write of more points than
	// the limit is refused whole, however few series it holds.
	{"max-series-per-database limit exceeded", "the server's max-series-per-database ([data] in influxdb.conf, 0 for none) " +
		"counts each point of a write, so BATCH_SIZE must be below it, and SCALE devices make SCALE series a table (more with CHURN): " +
		"lower them, or raise the limit"},
	// Each device has tag values of its own (hostname, name).
	{"max-values-per-tag limit exceeded", "each device has a tag value of its own: SCALE devices (more with CHURN) " +
		"must be within the server's max-values-per-tag ([data] in influxdb.conf, 0 for none): lower SCALE, or raise the limit"},
	// A field keeps the type it was first written with in a shard: an
	// earlier run of another COLUMN_TYPE (massive) or source wrote it.
	{"field type conflict", "the database holds the field with another type, written by an earlier run " +
		"(another COLUMN_TYPE, or another source of the same measurement): write to another database or bucket, " +
		"or drop the measurement (DROP MEASUREMENT) before the run"},
}

// classifyStatus turns a non-2xx answer into a classified error.
//
// Line-protocol writes are idempotent in InfluxDB (a point with the same
// measurement, tag set and timestamp overwrites the stored one with the
// same values), so a batch whose fate is unknown (5xx, timeouts, broken
// connections) may be resent when idempotent is true. 429 and 503 say the
// request was not processed, so they are always safe to resend.
//
// InfluxDB 1.x answers a write to a retention policy the database lacks
// (?rp=, or the bucket's DB/RP, named wrong or dropped mid-run) with 500
// "retention policy not found": a refusal that resending cannot change,
// so rejected and not retried.
//
// 401 is credentials refused (InfluxDB 1.x "authorization failed", 2.x
// "unauthorized access"): its message says authentication failed, so that
// soakd names where the password comes from. 403 is not: the credentials
// were taken, and the user may not do this (1.x "not authorized to write
// to database"), which its own message says.
func classifyStatus(code int, h http.Header, body errBody, points int, idempotent bool) error {
	se := &StatusError{StatusCode: code, Message: body.msg, Points: points}
	if code >= 400 && code < 500 {
		se.Partial, se.Dropped = parsePartial(body, points)
	}
	class, retry := sinks.ClassifyHTTPStatus(code, idempotent)
	if code == http.StatusInternalServerError && strings.HasPrefix(body.msg, "retention policy not found") {
		class, retry = sinks.Rejected, false
	}
	if code == http.StatusUnauthorized {
		se.Message = truncate(sinks.AuthFailed + ": " + se.Message) // still at most maxMessage
	}
	return &sinks.Error{Class: class, Retry: retry, RetryAfter: sinks.RetryAfter(h, time.Now()), Err: se}
}

// parsePartial recognises partial writes. InfluxDB 1.x lists every line it
// could not parse ("unable to parse '...'", counted in the whole body) and
// ends with "dropped=N" for points it parsed but refused.
func parsePartial(body errBody, points int) (bool, int) {
	msg := body.msg
	if i := strings.Index(msg, "partial write error ("); i >= 0 { // 2.x
		rest := msg[i+len("partial write error ("):]
		if j := strings.Index(rest, " written)"); j > 0 {
			if n, err := strconv.Atoi(rest[:j]); err == nil {
				return true, max(points-n, 0)
			}
		}
		return true, 0
	}
	if !strings.HasPrefix(msg, "partial write") { // 1.x
		return false, 0
	}
	dropped := body.unparsed
	// The message may be truncated; the count ends the body.
	if i := strings.LastIndex(body.tail, "dropped="); i >= 0 {
		rest := body.tail[i+len("dropped="):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(rest[:j]); err == nil {
			dropped += n
		}
	}
	return true, min(dropped, points)
}

// errBody is what readError keeps of an error response.
type errBody struct {
	msg      string // the server's message, at most maxMessage bytes
	tail     string // the last bytes of the body
	unparsed int    // "unable to parse" in the whole body
}

// readError reads an error response: its message, its tail and the number
// of "unable to parse" in the whole body, which InfluxDB 1.x repeats for
// every line it rejected. The body is read to the end, so the connection
// can be reused, in constant memory.
func readError(resp *http.Response) errBody {
	const pat = "unable to parse"
	var eb errBody
	head := make([]byte, 0, maxMessage)
	const tailSize = 64
	tail := make([]byte, 0, 2*tailSize)
	buf := make([]byte, 32<<10)
	carry := 0 // bytes kept from the previous chunk so matches across chunks count
	for {
		n, err := resp.Body.Read(buf[carry:])
		chunk := buf[:carry+n]
		if room := maxMessage - len(head); room > 0 {
			head = append(head, buf[carry:carry+min(n, room)]...)
		}
		eb.unparsed += bytes.Count(chunk, []byte(pat))
		fresh := chunk[carry:]
		if len(fresh) > tailSize {
			fresh = fresh[len(fresh)-tailSize:]
		}
		if tail = append(tail, fresh...); len(tail) > tailSize {
			tail = append(tail[:0], tail[len(tail)-tailSize:]...)
		}
		// keep the last len(pat)-1 bytes: too short to hold a whole match,
		// so nothing is counted twice
		keep := min(len(chunk), len(pat)-1)
		copy(buf, chunk[len(chunk)-keep:])
		carry = keep
		if err != nil {
			break
		}
	}
	eb.tail = string(tail)
	eb.msg = errorMessage(resp, head)
	return eb
}

func errorMessage(resp *http.Response, head []byte) string {
	// InfluxDB 1.x copies its message into a header, unescaped.
	if h := resp.Header.Get("X-Influxdb-Error"); h != "" {
		return truncate(h)
	}
	var j struct {
		Error   string `json:"error"`   // 1.x
		Message string `json:"message"` // 2.x
		Code    string `json:"code"`
	}
	if json.Unmarshal(head, &j) == nil {
		switch {
		case j.Error != "":
			return truncate(j.Error)
		case j.Message != "":
			return truncate(j.Message)
		}
	}
	if s := strings.TrimSpace(string(head)); s != "" {
		return truncate(s)
	}
	return http.StatusText(resp.StatusCode)
}

func truncate(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "..."
	}
	return s
}

// errorCuts end the part of a message that makes two "the same error"
// (sinks.ErrorLog): InfluxDB quotes the offending line, field or
// database.
const errorCuts = `'"`

// Answer is the status and message the server answered with.
func (e *StatusError) Answer() (int, string) { return e.StatusCode, e.Message }

// LogFields say whether the write was partial, and what it dropped.
func (e *StatusError) LogFields() []zap.Field {
	return []zap.Field{zap.Bool("partial", e.Partial), zap.Int("dropped", e.Dropped)}
}
