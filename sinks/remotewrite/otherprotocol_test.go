package remotewrite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
)

// An prom+http:// URL to a Redis or PostgreSQL port (another service of the
// deployment) is a configuration error naming the protocol the server
// speaks: each closes the connection at an HTTP request, which was
// retried as a lost connection until START_TIMEOUT. Bug caught: each
// waited.
func TestPingOfARedisOrPostgreSQLPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, speaks string }{
		{testserver.Redis(t).Addr, "Redis"},
		{testserver.Postgres(t).Addr, "PostgreSQL"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := openSink(t, "prom+http://"+tc.addr+"/api/v1/write", sinks.Options{}).Ping(ctx)
		cancel()
		want := "the server at " + tc.addr + " speaks " + tc.speaks + ", not HTTP"
		if sinks.ClassOf(err) != sinks.Rejected || !sinks.IsProtocolMismatch(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("Ping of %s: %v; want a rejected protocol mismatch saying %q", tc.speaks, err, want)
		}
	}
}
