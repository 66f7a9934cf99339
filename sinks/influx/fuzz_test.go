package influx

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
)

// FuzzServerReply feeds arbitrary error answers (status, Retry-After,
// X-Influxdb-Error, body) through what the sink does with them: the
// classified error must stay within its bounds whatever the server says.
func FuzzServerReply(f *testing.F) {
	f.Add(400, "", "", []byte(`{"error":"partial write: unable to parse 'cpu x=': missing field value dropped=3"}`), 10)
	f.Add(422, "", "", []byte(`{"code":"unprocessable entity","message":"partial write error (5 written): field type conflict"}`), 10)
	f.Add(503, "120", "", []byte("overloaded"), 1)
	f.Add(429, "Wed, 21 Oct 2015 07:28:00 GMT", "", []byte{}, 1)
	f.Add(500, "-5", "timeout", []byte("\xff\xfe"), 0)
	f.Add(413, "99999999999999999999", "", bytes.Repeat([]byte("unable to parse 'x' "), 500), 7)
	f.Add(404, "", "database not found: \"db\"", []byte(`{"error":`), 3)
	f.Fuzz(func(t *testing.T, code int, retry, header string, body []byte, points int) {
		if code < 100 || code > 999 {
			code = 400 + (code%200+200)%200
		}
		points = max(0, points%100000)
		h := http.Header{}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		if header != "" {
			h.Set("X-Influxdb-Error", header)
		}
		resp := &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(bytes.NewReader(body))}
		err := classifyStatus(code, h, readError(resp), points, true)
		var se *sinks.Error
		if !errors.As(err, &se) {
			t.Fatalf("%d: %T is not a classified error", code, err)
		}
		if se.Class.Index() == len(sinks.Classes)-1 && se.Class != sinks.Other {
			t.Errorf("class %q is not a known class", se.Class)
		}
		if se.RetryAfter < 0 || se.RetryAfter > sinks.MaxRetryAfter {
			t.Errorf("Retry-After %q gave %v, want within [0, %v]", retry, se.RetryAfter, sinks.MaxRetryAfter)
		}
		var st *StatusError
		if !errors.As(err, &st) {
			t.Fatalf("%v does not carry the status", err)
		}
		if st.Dropped < 0 || st.Dropped > points || st.Stored() < 0 || st.Stored() > points {
			t.Errorf("dropped %d, stored %d of %d points", st.Dropped, st.Stored(), points)
		}
		if len(st.Message) > maxMessage+len("...") {
			t.Errorf("message of %d bytes, want at most %d", len(st.Message), maxMessage)
		}
		_ = err.Error()
	})
}

// retryAfter never waits longer than sinks.MaxRetryAfter nor less than zero,
// whatever the date or number.
func TestRetryAfterBounds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "-3": 0, "7": 7 * time.Second, "99999999999999999999": 0, "9999999": sinks.MaxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
		now.Add(48 * time.Hour).Format(http.TimeFormat):   sinks.MaxRetryAfter,
		"soon": 0,
	} {
		h := http.Header{}
		h.Set("Retry-After", v)
		if got := sinks.RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}
