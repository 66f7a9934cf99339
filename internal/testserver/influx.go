package testserver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// InfluxQuery posts q to the /query endpoint of the InfluxDB s, in
// database db ("" for none), with any further form values (such as
// epoch), and returns the HTTP status and the body.
func (s *Server) InfluxQuery(t testing.TB, db, q string, more url.Values) (int, []byte) {
	t.Helper()
	form := url.Values{"q": {q}}
	if db != "" {
		form.Set("db", db)
	}
	for k, v := range more {
		form[k] = v
	}
	// A transport of its own: no idle connection outlives the call.
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.PostForm(s.URL+"/query", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// InfluxExec runs one InfluxQL statement on the InfluxDB s, in database
// db ("" for none); the test fails unless the answer is 200 with no error.
func (s *Server) InfluxExec(t testing.TB, db, q string) {
	t.Helper()
	code, body := s.InfluxQuery(t, db, q, nil)
	if code != http.StatusOK || strings.Contains(string(body), `"error"`) {
		t.Fatalf("%s: HTTP %d %s", q, code, body)
	}
}
