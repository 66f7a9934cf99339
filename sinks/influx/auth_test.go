package influx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// startInfluxAuth starts InfluxDB 1.8 with authentication on, an admin
// "admin"/"s3cret" and a user "writer"/"w-pass" allowed to write to the
// database "shared" only.
func startInfluxAuth(t *testing.T) string {
	t.Helper()
	srv := testserver.Influx(t, testserver.InfluxAuth())
	addr := srv.Addr
	// With no user yet, InfluxDB accepts creating the first admin.
	for _, q := range []string{
		`CREATE USER admin WITH PASSWORD 's3cret' WITH ALL PRIVILEGES`,
		`CREATE DATABASE shared`,
		`CREATE USER writer WITH PASSWORD 'w-pass'`,
		`GRANT WRITE ON shared TO writer`,
	} {
		influxAdminQuery(t, addr, q)
	}
	return addr
}

// influxAdminQuery runs the InfluxQL statement q as startInfluxAuth's
// admin on the InfluxDB at addr; the test fails if it fails.
func influxAdminQuery(t *testing.T, addr, q string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/query", strings.NewReader(url.Values{"q": {q}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("admin", "s3cret")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	// InfluxDB sends the 200 before it runs the statement, and aborts
	// the statement when the client goes away: read the whole answer,
	// which also carries the statement's error.
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Error   string `json:"error"`
		Results []struct {
			Error string `json:"error"`
		} `json:"results"`
	}
	if err == nil {
		err = json.Unmarshal(body, &out)
	}
	if err != nil || resp.StatusCode != 200 || out.Error != "" || len(out.Results) != 1 || out.Results[0].Error != "" {
		t.Fatalf("%s: HTTP %d %s (%v)", q, resp.StatusCode, body, err)
	}
}

func TestAuth(t *testing.T) {
	addr := startInfluxAuth(t)
	schemas := []*sources.Schema{cpuSchema("cpu")}
	ctx := context.Background()
	write := func(raw string, o sinks.Options) error {
		t.Helper()
		o.Schemas = schemas
		s := openSink(t, fmt.Sprintf(raw, addr), o)
		if err := s.Prepare(ctx); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		b := sources.NewSeriesBatch(schemas)
		(&gen{devices: 3, start: time.Now().Add(-time.Hour), step: time.Second}).fill(b, 30)
		_, err := s.Write(ctx, b)
		return err
	}
	for _, tc := range []struct {
		name, url string
		o         sinks.Options
	}{
		{"v1 user info", "influx1://admin:s3cret@%s?db=a1", sinks.Options{}},
		{"v1 u and p", "influx1://%s?db=a2&u=admin&p=s3cret", sinks.Options{}},
		{"v1 password from options", "influx1://admin@%s?db=a3", sinks.Options{Password: "s3cret"}},
		{"v1 token user:password", "influx1://%s?db=a4&auth=token", sinks.Options{Token: "admin:s3cret"}},
		{"v2 token user:password", "influx://%s?bucket=a5/autogen", sinks.Options{Token: "admin:s3cret"}},
		{"v2 user info as token", "influx://admin:s3cret@%s?bucket=a6", sinks.Options{}},
		// Not an admin: CREATE DATABASE is refused, the database exists.
		{"v1 writer", "influx1://writer:w-pass@%s?db=shared", sinks.Options{}},
		// A writer may not read the retention policies: not checked.
		{"v1 writer rp", "influx1://writer:w-pass@%s?db=shared&rp=autogen", sinks.Options{}},
		{"v2 writer", "influx://%s?bucket=shared", sinks.Options{Token: "writer:w-pass"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := write(tc.url, tc.o); err != nil {
				t.Fatalf("write with valid credentials: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		name, url string
		o         sinks.Options
		status    int
	}{
		{"v1 wrong password", "influx1://admin:nope@%s?db=a1&create=false", sinks.Options{}, 401},
		{"v1 no credentials", "influx1://%s?db=a1&create=false", sinks.Options{}, 401},
		{"v2 wrong token", "influx://%s?bucket=a5&create=false", sinks.Options{Token: "admin:nope"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := write(tc.url, tc.o)
			var se *StatusError
			if sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || se.StatusCode != tc.status {
				t.Fatalf("write = %v, want rejected with HTTP %d", err, tc.status)
			}
			// What soakd adds the password's settings to.
			if !strings.Contains(err.Error(), sinks.AuthFailed) {
				t.Errorf("write = %v, want it to say %s", err, sinks.AuthFailed)
			}
			if strings.Contains(err.Error(), "nope") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows a password: %v", err)
			}
		})
	}
	// A database the user may neither read nor write, with create=false, is
	// not among those SHOW DATABASES lists to it: refused at prepare,
	// rather than every write answered 403.
	err := write("influx1://writer:w-pass@%s?db=a1&create=false", sinks.Options{})
	if sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), `database "a1" not found`) || !strings.Contains(err.Error(), `"shared"`) {
		t.Errorf("write as a writer elsewhere = %v, want refused at prepare naming the database", err)
	}
	// A user whose credentials are taken but who may only read the
	// database: every write is answered 403, the user's rights at fault,
	// not the password.
	for _, q := range []string{`CREATE DATABASE readonly`, `GRANT READ ON readonly TO writer`} {
		influxAdminQuery(t, addr, q)
	}
	err = write("influx1://writer:w-pass@%s?db=readonly&create=false", sinks.Options{})
	var se *StatusError
	if sinks.ClassOf(err) != sinks.Rejected || !errors.As(err, &se) || se.StatusCode != http.StatusForbidden ||
		strings.Contains(err.Error(), sinks.AuthFailed) {
		t.Errorf("write as a reader = %v, want rejected with HTTP 403, not an authentication failure", err)
	}
	// Creating a database the user may not create, and which does not
	// exist, fails Prepare as rejected with the server's reason.
	s := openSink(t, fmt.Sprintf("influx1://writer:w-pass@%s?db=forbidden", addr), sinks.Options{Schemas: schemas})
	if err := s.Prepare(ctx); sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "admin") {
		t.Errorf("Prepare without the right to create: %v, want rejected naming the admin privilege", err)
	}
}
