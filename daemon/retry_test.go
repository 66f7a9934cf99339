package daemon

import (
	"context"
	"io"
	"net/url"
	"testing"
	"testing/synctest"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// eofSink fails every write with a closed connection (io.EOF): at once,
// or, with afterDeadline, only once the write's context has ended, as a
// driver that drops its connection on the deadline reports it.
type eofSink struct{ afterDeadline bool }

func (s eofSink) Write(ctx context.Context, _ *sources.Batch) (int, error) {
	if s.afterDeadline {
		<-ctx.Done()
	}
	return 0, io.EOF
}

func (eofSink) Close(context.Context) error { return nil }

// A write that outlives TIMEOUT fails as a timeout, even when the driver
// reports the connection it closed on the deadline; a connection lost
// before the deadline stays a connection error.
func TestTimeoutClassWhateverTheDriverSays(t *testing.T) {
	for _, tc := range []struct {
		afterDeadline bool
		want, not     string
	}{
		{afterDeadline: true, want: "timeout", not: "connection"},
		{afterDeadline: false, want: "connection", not: "timeout"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := testPlugins(sinks.Entry{Schemes: []string{"eof"}, Kinds: []sources.Kind{sources.Series},
					Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
						return eofSink{afterDeadline: tc.afterDeadline}, nil
					}})
				cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "1",
					"SOAKD_SEQ_WORKERS", "2", "SOAKD_SEQ_DURATION", "2s", "SOAKD_SEQ_TIMEOUT", "100ms",
					"SOAKD_SEQ_RETRIES", "0", "SOAKD_SEQ_TARGET", "eof://x"), p)
				res := runTest(context.Background(), cfg, p)
				if res.sum == nil {
					t.Fatalf("no summary: %v", res.err)
				}
				w := res.sum.Workloads[0]
				if w.Errors[tc.want] == 0 || w.Errors[tc.not] != 0 {
					t.Errorf("errors %v: want %s errors and no %s", w.Errors, tc.want, tc.not)
				}
			})
		})
	}
}
