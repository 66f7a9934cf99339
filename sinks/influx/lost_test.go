package influx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// A database gone in the middle of a run (InfluxDB restarted on empty
// storage, or the database dropped) is created again by the sink that
// created it at prepare, and the refused batch is safe to resend: the
// resend is stored. Bug caught: every write answered 404 "database not
// found" until the run ended. With create=false, or a retention policy
// CREATE DATABASE does not make, the refusal stays final.
func TestDatabaseCreatedAgainWhenGone(t *testing.T) {
	srv := testserver.Influx(t)
	ctx := context.Background()
	schemas := []*sources.Schema{cpuSchema("cpu")}
	for i, tc := range []struct {
		url, db string
		again   bool
	}{
		{"influx1://%s?db=%s", "lost1", true},
		{"influx://%s?bucket=%s/autogen", "lost2", true},
		{"influx1://%s?db=%s&create=false", "lost3", false},
		{"influx1://%s?db=%s&rp=week", "lost4", false},
	} {
		target := fmt.Sprintf(tc.url, srv.Addr, tc.db)
		switch {
		case strings.Contains(tc.url, "rp=week"):
			srv.InfluxExec(t, "", fmt.Sprintf("CREATE DATABASE %s WITH DURATION 7d NAME week", tc.db))
		case strings.Contains(tc.url, "create=false"):
			srv.InfluxExec(t, "", "CREATE DATABASE "+tc.db)
		}
		s := openSink(t, target, sinks.Options{Schemas: schemas})
		if err := s.Prepare(ctx); err != nil {
			t.Fatalf("Prepare(%s): %v", target, err)
		}
		g := &gen{devices: 3, start: time.Now().Add(-time.Duration(i+1) * time.Hour), step: time.Second}
		b := sources.NewSeriesBatch(schemas)
		g.fill(b, 30)
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatalf("%s: first write: %v", target, err)
		}
		srv.InfluxExec(t, "", "DROP DATABASE "+tc.db)
		g.fill(b, 30)
		_, err := s.Write(ctx, b)
		var se *sinks.Error
		if !errors.As(err, &se) || se.Class != sinks.Rejected || !strings.Contains(err.Error(), "database not found") {
			t.Fatalf("%s: write to the dropped database = %v, want rejected, database not found", target, err)
		}
		if se.Retry != tc.again {
			t.Errorf("%s: the refused batch safe to resend = %v, want %v", target, se.Retry, tc.again)
		}
		_, err = s.Write(ctx, b) // the resend
		if !tc.again {
			if err == nil {
				t.Errorf("%s: the resend was stored: the database was created again", target)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: the resend: %v", target, err)
		}
		if n := countField(t, srv, tc.db, "cpu", "procs"); n != 30 {
			t.Errorf("%s: %d rows stored after the database was created again, want the resent batch's 30", target, n)
		}
	}
}
