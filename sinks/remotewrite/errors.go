package remotewrite

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
)

// StatusError is a write the target answered with a non-2xx status. The
// sink returns it wrapped in a *sinks.Error that carries the class.
type StatusError struct {
	StatusCode int
	// Message is the server's answer (at most maxMessage bytes).
	Message string
	// Samples is the number of samples of the refused request.
	Samples int
	// OutOfOrder: the target refused samples for their time (out of
	// order, a duplicate timestamp with another value, older than it
	// accepts).
	OutOfOrder bool
	// Written is the number of samples the target says it wrote (a 2.0
	// answer's X-Prometheus-Remote-Write-Samples-Written), -1 when it does
	// not say: Prometheus keeps the other samples of a 2.0 request of
	// which some are refused for their time.
	Written int
	// NotV2: the target does not take Remote-Write 2.0 (it answered a 2.0
	// request with 415, or with 2xx without saying what it wrote) and
	// wrote nothing.
	NotV2 bool
}

func (e *StatusError) Error() string {
	w := ""
	if e.Written >= 0 && e.Samples > 0 {
		w = fmt.Sprintf(" (%d of %d samples written)", e.Written, e.Samples)
	}
	if e.OutOfOrder {
		return fmt.Sprintf("HTTP %d, samples refused for their time%s: %s", e.StatusCode, w, e.Message)
	}
	if e.tooLarge() {
		// Every batch of that size will be refused: the setting to
		// change is soakd's.
		return fmt.Sprintf("HTTP %d%s: %s (%s)", e.StatusCode, w, e.Message, sinks.TooLarge)
	}
	return fmt.Sprintf("HTTP %d%s: %s", e.StatusCode, w, e.Message)
}

const maxMessage = 1024

// tooLarge reports whether the target refused the request for its size:
// 413, or VictoriaMetrics' 400 "too big data size exceeding
// -maxInsertRequestSize", which named only its own flag, not soakd's
// BATCH_SIZE.
func (e *StatusError) tooLarge() bool {
	return e.StatusCode == http.StatusRequestEntityTooLarge ||
		e.StatusCode == http.StatusBadRequest && strings.Contains(e.Message, "exceeding -maxInsertRequestSize")
}

// outOfOrderMessages are how targets say that they refuse samples for
// their time: Prometheus' TSDB errors (storage.ErrOutOfOrderSample,
// ErrDuplicateSampleForTimestamp, ErrOutOfBounds, ErrTooOldSample),
// which Mimir and Cortex pass on in their own words too.
var outOfOrderMessages = []string{
	"out of order sample", "duplicate sample for timestamp", "out of bounds", "too old sample",
	"sample-out-of-order", "sample-timestamp-too-old", "sample-duplicate-timestamp", // Mimir's error ids
}

// isOutOfOrder reports whether a 400 answer refuses samples for their
// time rather than the request itself.
func isOutOfOrder(msg string) bool {
	msg = strings.ToLower(msg)
	for _, m := range outOfOrderMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// isTooOld reports whether a 500 answer is Prometheus' "too old sample"
// (storage.ErrTooOldSample, which older write handlers answer with 500),
// the whole answer rather than a part of another message.
func isTooOld(msg string) bool {
	return strings.EqualFold(strings.TrimSpace(msg), "too old sample")
}

// classifyStatus turns a non-2xx answer into a classified error, as
// Remote-Write 1.0 tells senders to: 4xx is not retried (the same
// request would be refused again), except 429 (throttled: retried after
// Retry-After) and 408; 5xx is retried when resending is harmless
// (idempotent). Samples refused for their time are class out_of_order,
// not resent either.
func classifyStatus(code int, h http.Header, msg string, samples int, idempotent bool) error {
	se := &StatusError{StatusCode: code, Message: msg, Samples: samples, Written: -1}
	class, retry := sinks.ClassifyHTTPStatus(code, idempotent)
	// Prometheus releases with an out-of-order window but before their
	// write handler named storage.ErrTooOldSample (2.42, Debian's, among
	// them) answer a sample older than the window with 500, not 400:
	// the request was rolled back and would be refused again, so it is
	// out_of_order and not resent, as the 400s are.
	if se.OutOfOrder = (code == http.StatusBadRequest && isOutOfOrder(msg)) ||
		(code == http.StatusInternalServerError && isTooOld(msg)); se.OutOfOrder {
		class, retry = sinks.OutOfOrder, false
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		se.Message = sinks.AuthFailed + ": " + msg
	}
	return &sinks.Error{Class: class, Retry: retry, RetryAfter: sinks.RetryAfter(h, time.Now()), Err: se}
}

// readMessage reads an error answer's first maxMessage bytes as its
// message and discards the rest (bounded), so the connection can be
// reused.
func readMessage(resp *http.Response) string {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxMessage+1))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	n, more := len(head), len(head) > maxMessage
	if more {
		n = maxMessage
		for k := n; k > maxMessage-utf8.UTFMax && !utf8.RuneStart(head[k]); k-- {
			n = k - 1 // not within a character: the cut text stays text
		}
	}
	msg := textOnly(strings.TrimSpace(string(head[:n])))
	if more {
		msg += "..."
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return msg
}

// textOnly is msg with the binary left out: an answer that is not text
// becomes "(N bytes, not text)", and so does each quoted string in it
// whose content is not text (a server that quotes the protobuf it could
// not parse), so that no error or log line carries binary bytes,
// escaped or not.
func textOnly(msg string) string {
	if !isText(msg) {
		return fmt.Sprintf("(%d bytes, not text)", len(msg))
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		b.WriteString(msg[:i])
		lit, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			// Not a whole quoted string: cut at maxMessage (perhaps
			// within an escape), or a lone quote.
			rest := msg[i:]
			if v, ok := unquoteCut(rest); ok && !isText(v) {
				rest = fmt.Sprintf("(at least %d bytes, not text)", len(v))
			}
			b.WriteString(rest)
			return b.String()
		}
		if v, err := strconv.Unquote(lit); err == nil && !isText(v) {
			fmt.Fprintf(&b, "(%d bytes, not text)", len(v))
		} else {
			b.WriteString(lit)
		}
		msg = msg[i+len(lit):]
	}
	b.WriteString(msg)
	return b.String()
}

// unquoteCut unquotes s, a quoted string cut short, less what an escape
// cut in the middle left at its end.
func unquoteCut(s string) (string, bool) {
	for j := len(s); j > max(len(s)-10, 0); j-- {
		if v, err := strconv.Unquote(s[:j] + `"`); err == nil {
			return v, true
		}
	}
	return "", false
}

// isText reports whether s is UTF-8 of printable characters and
// whitespace.
func isText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// errorCuts end the part of a message that makes two "the same error"
// (sinks.ErrorLog): Prometheus quotes the series.
const errorCuts = `{'"`

// Answer is the status and message the server answered with.
func (e *StatusError) Answer() (int, string) { return e.StatusCode, e.Message }

// LogFields are none: the status and message say it all.
func (e *StatusError) LogFields() []zap.Field { return nil }
