package postgres

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
)

// A postgres:// URL to a Redis, HTTP or HTTPS port (another service of
// the deployment) is a configuration error naming the protocol the server
// speaks, not a server to wait for: a Redis waits for the rest of what it
// takes for a command, a web server for the end of a request line, and
// each was retried as "cannot reach" until START_TIMEOUT. PostgreSQL
// itself, and a port where nothing listens, are not. Bug caught: each
// waited.
func TestProtocolOtherThanPostgreSQL(t *testing.T) {
	t.Parallel()
	redis := testserver.Redis(t)
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	https := httptest.NewTLSServer(http.NotFoundHandler())
	defer https.Close()
	cpu := cpuSchema("cpu", 3)
	pingURL := func(raw string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return openSink(t, raw, nil, cpu).Ping(ctx)
	}
	ping := func(addr string) error { return pingURL("postgres://u@" + addr + "/db?connect_timeout=1") }
	for _, tc := range []struct{ addr, speaks string }{
		{redis.Addr, "Redis"},
		{strings.TrimPrefix(web.URL, "http://"), "HTTP"},
		{strings.TrimPrefix(https.URL, "https://"), "HTTPS"},
	} {
		err := ping(tc.addr)
		want := "the server at " + tc.addr + " speaks " + tc.speaks + ", not PostgreSQL"
		if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("Ping(%s) = %v; want a rejected protocol mismatch saying %q", tc.addr, err, want)
		}
	}
	if err := pingURL(testserver.Postgres(t).URL); err != nil {
		t.Errorf("PostgreSQL: %v", err)
	}
	if err := ping(fmt.Sprintf("127.0.0.1:%d", testserver.ClosedPort(t))); err == nil || sinks.IsProtocolMismatch(err) || sinks.ClassOf(err) == sinks.Rejected {
		t.Errorf("a port where nothing listens: %v; want a connection error to wait out", err)
	}
}
