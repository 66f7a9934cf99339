package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	base := "postgres://u@db.example:5433/bench?sslmode=disable"
	cases := []struct {
		name string
		url  string
		want Config
		// errs are substrings the error must hold; nil = no error.
		errs []string
	}{
		{name: "defaults", url: base,
			want: Config{Method: Copy, Dialect: Postgres, Create: true, TSDatabase: "soakd"}},
		{name: "postgresql scheme", url: "postgresql://u@h/db",
			want: Config{Method: Copy, Dialect: Postgres, Create: true, TSDatabase: "soakd"}},
		{name: "every soakd param", url: base + "&insert=unnest&dialect=timescaledb&create=false&dedup=true&chunk_interval=12h&timeout=5s",
			want: Config{Method: Unnest, Dialect: TimescaleDB, Create: false, Dedup: true, ChunkInterval: 12 * time.Hour, Timeout: 5 * time.Second, TSDatabase: "soakd"}},
		{name: "kwdb defaults to insert", url: base + "&dialect=kwdb&ts_database=tsdb",
			want: Config{Method: Insert, Dialect: KWDB, Create: true, TSDatabase: "tsdb"}},
		{name: "cockroach dedup defaults to unnest", url: base + "&dialect=cockroachdb&dedup=1",
			want: Config{Method: Unnest, Dialect: Cockroach, Create: true, Dedup: true, TSDatabase: "soakd"}},
		{name: "greenplum insert", url: base + "&dialect=greenplum&insert=insert&timeout=0",
			want: Config{Method: Insert, Dialect: Greenplum, Create: true, Timeout: 0, TSDatabase: "soakd"}},
		{name: "libpq and pool params pass", url: base + "&connect_timeout=3&application_name=soak&options=-c%20work_mem%3D64MB&pool_max_conns=7&target_session_attrs=read-write&sslrootcert=/nonexistent-is-fine-with-disable",
			want: Config{Method: Copy, Dialect: Postgres, Create: true, TSDatabase: "soakd"}},

		{name: "tsbs layout", url: base + "&layout=tsbs",
			want: Config{Method: Copy, Dialect: Postgres, Layout: TSBSLayout, Create: true, TSDatabase: "soakd"}},
		{name: "tsbs layout takes TSBS's chunk interval", url: base + "&layout=TSBS&dialect=timescaledb",
			want: Config{Method: Copy, Dialect: TimescaleDB, Layout: TSBSLayout, Create: true, ChunkInterval: 12 * time.Hour, TSDatabase: "soakd"}},
		{name: "tsbs layout with a chunk interval", url: base + "&layout=tsbs&dialect=timescaledb&chunk_interval=1h&insert=copy",
			want: Config{Method: Copy, Dialect: TimescaleDB, Layout: TSBSLayout, Create: true, ChunkInterval: time.Hour, TSDatabase: "soakd"}},

		{name: "bad layout", url: base + "&layout=wide", errs: []string{`layout "wide": want soakd or tsbs`}},
		{name: "tsbs layout limits", url: base + "&layout=tsbs&dedup=true&insert=unnest",
			errs: []string{"dedup=true needs the soakd layout", "insert=unnest needs the soakd layout"}},
		{name: "tsbs layout dialect", url: base + "&layout=tsbs&dialect=kwdb", errs: []string{"for dialect postgres or timescaledb, not kwdb"}},
		{name: "bad insert", url: base + "&insert=bulk", errs: []string{`insert "bulk"`, "copy, insert or unnest"}},
		{name: "bad dialect", url: base + "&dialect=oracle", errs: []string{`dialect "oracle"`}},
		{name: "bad bools", url: base + "&create=maybe&dedup=yes", errs: []string{`create "maybe"`, `dedup "yes"`}},
		{name: "chunk interval without timescale", url: base + "&chunk_interval=1h", errs: []string{"chunk_interval is a timescaledb setting"}},
		{name: "bad chunk interval", url: base + "&dialect=timescaledb&chunk_interval=-1h", errs: []string{`chunk_interval "-1h"`}},
		{name: "bad timeout", url: base + "&timeout=soon", errs: []string{`timeout "soon"`}},
		{name: "ts_database without kwdb", url: base + "&ts_database=x", errs: []string{"ts_database is a kwdb setting"}},
		{name: "typo of a soakd param", url: base + "&inserts=copy", errs: []string{`unknown parameter "inserts"`, "insert, dialect"}},
		{name: "several unknown", url: base + "&foo=1&bar=2", errs: []string{`"foo"`, `"bar"`}},
		{name: "libpq only", url: base + "&keepalives=1&hostaddr=10.0.0.1", errs: []string{"keepalives: libpq parameter not supported by pgx", "hostaddr"}},
		{name: "repeated", url: base + "&insert=copy&insert=unnest", errs: []string{"insert given 2 times"}},
		{name: "cockroach copy dedup", url: base + "&dialect=cockroach&dedup=true&insert=copy", errs: []string{"use insert=unnest"}},
		{name: "wrong scheme", url: "mysql://h/db", errs: []string{`scheme "mysql"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, conn, err := ParseURL(mustURL(t, tc.url))
			if tc.errs == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.want.Layout == 0 {
					tc.want.Layout = SoakdLayout
				}
				if c != tc.want {
					t.Fatalf("config %+v, want %+v", c, tc.want)
				}
				cu, err := url.Parse(conn)
				if err != nil {
					t.Fatalf("pgx URL %q: %v", conn, err)
				}
				q := cu.Query()
				for _, k := range soakdParams {
					if q.Has(k) {
						t.Errorf("soakd parameter %s left in the pgx URL %q", k, conn)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one holding %q", tc.errs)
			}
			for _, want := range tc.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not hold %q", err, want)
				}
			}
		})
	}
}

func TestConnStringKeepsLibpqParams(t *testing.T) {
	t.Parallel()
	_, conn, err := ParseURL(mustURL(t, "postgres://u:pw@h:1/db?sslmode=require&insert=unnest&application_name=x&connect_timeout=2"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("sslmode") != "require" || q.Get("application_name") != "x" || q.Get("connect_timeout") != "2" || q.Has("insert") {
		t.Fatalf("pgx URL %q: want the libpq parameters and not insert", conn)
	}
	if pw, _ := u.User.Password(); pw != "pw" || u.Host != "h:1" || u.Path != "/db" {
		t.Fatalf("pgx URL %q lost user, host or database", conn)
	}
}

func TestPoolConfig(t *testing.T) {
	t.Parallel()
	u := mustURL(t, "postgres://u@h/db?sslmode=disable")
	_, pc, err := parse(u, sinks.Options{Workers: 6, Password: "from-env"})
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxConns != 7 {
		t.Errorf("MaxConns = %d, want workers+1 = 7", pc.MaxConns)
	}
	if pc.ConnConfig.Password != "from-env" {
		t.Errorf("password from Options not used")
	}
	if pc.ConnConfig.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("ConnectTimeout = %v, want %v", pc.ConnConfig.ConnectTimeout, DefaultConnectTimeout)
	}

	u = mustURL(t, "postgres://u:inurl@h/db?sslmode=disable&pool_max_conns=3&connect_timeout=2")
	_, pc, err = parse(u, sinks.Options{Workers: 6, Password: "from-env"})
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxConns != 3 || pc.ConnConfig.Password != "inurl" || pc.ConnConfig.ConnectTimeout != 2*time.Second {
		t.Errorf("MaxConns %d password %q timeout %v: want the URL's 3, inurl, 2s",
			pc.MaxConns, pc.ConnConfig.Password, pc.ConnConfig.ConnectTimeout)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if err := Check(mustURL(t, "postgres://u@h/db?sslmode=disable&dedup=true"), sources.Series); err != nil {
		t.Errorf("valid URL: %v", err)
	}
	// A KV workload is rejected by the registry entry, as cmd/soakd has it.
	if err := enginePlugins().Sinks.Check("postgres://u@h/db", sources.KV); err == nil || !strings.Contains(err.Error(), "kv workloads") {
		t.Errorf("KV workload: %v, want an error saying kv workloads are not accepted", err)
	}
	// pgx's own validation runs too, without I/O.
	err := Check(mustURL(t, "postgres://u:secret123@h/db?sslmode=bogus"), sources.Series)
	if err == nil || !strings.Contains(err.Error(), "sslmode") {
		t.Errorf("bad sslmode: %v, want an error naming sslmode", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret123") {
		t.Errorf("error leaks the password: %v", err)
	}
	err = Check(mustURL(t, "postgres://u:secret123@h/db?pool_max_conns=many"), sources.Series)
	if err == nil || !strings.Contains(err.Error(), "pool_max_conns") || strings.Contains(err.Error(), "secret123") {
		t.Errorf("bad pool_max_conns: %v, want an error naming it without the password", err)
	}
	// Query workloads and layout=tsbs use the data set's own table names.
	for raw, kind := range map[string]sources.Kind{
		"postgres://u@h/db?schema=soakd":                sources.Queries,
		"postgres://u@h/db?table_prefix=s_":             sources.Queries,
		"postgres://u@h/db?layout=tsbs&schema=soakd":    sources.Series,
		"postgres://u@h/db?layout=tsbs&table_prefix=s_": sources.Series,
	} {
		if err := Check(mustURL(t, raw), kind); err == nil || !strings.Contains(err.Error(), "schema= and table_prefix=") {
			t.Errorf("Check(%s, %s) = %v, want schema= and table_prefix= refused", raw, kind, err)
		}
	}
	if err := Check(mustURL(t, "postgres://u@h/db?schema=soakd&table_prefix=s_"), sources.Series); err != nil {
		t.Errorf("schema and table_prefix for a series workload: %v", err)
	}
}

func TestOpenDoesNoIO(t *testing.T) {
	t.Parallel()
	// Port 1 on a reserved address: any connection attempt would fail or
	// hang; Open and Close must do neither.
	s, err := New(mustURL(t, "postgres://u@192.0.2.1:1/db?sslmode=disable"), sinks.Options{Kind: sources.Series, Workers: 2,
		Schemas: []*sources.Schema{cpuSchema("cpu", 4)}})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.pool.Stat(); st.TotalConns() != 0 {
		t.Errorf("Open made %d connections", st.TotalConns())
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	u := mustURL(t, "postgres://u@h/db?sslmode=disable")
	if _, err := New(u, sinks.Options{Kind: sources.KV}); err == nil {
		t.Error("KV kind accepted")
	}
	bad := cpuSchema("cpu", 2)
	bad.Fields = append(bad.Fields, sources.Field{Name: "region", Kind: sources.Float})
	_, err := New(u, sinks.Options{Kind: sources.Series, Schemas: []*sources.Schema{bad}})
	if err == nil || !strings.Contains(err.Error(), `column "region" appears twice`) {
		t.Errorf("duplicate column: %v", err)
	}
	bad = cpuSchema("cpu", 2)
	bad.TagKeys = append(bad.TagKeys, "time")
	_, err = New(u, sinks.Options{Kind: sources.Series, Schemas: []*sources.Schema{bad}})
	if err == nil || !strings.Contains(err.Error(), `"time"`) {
		t.Errorf("tag named time: %v", err)
	}
}

func FuzzParseURL(f *testing.F) {
	sinktest.FuzzURL(f, Check, nil,
		"postgres://u:pw@h:5432/db?sslmode=disable",
		"postgres://u@h/db?insert=unnest&dedup=true&dialect=cockroach",
		"postgresql://h/db?dialect=timescaledb&chunk_interval=1h&timeout=3s",
		"postgres://h/db?dialect=kwdb&ts_database=t&create=0",
		"postgres://h/db?keepalives=1&foo=bar&insert=%zz",
		"postgres://[::1]:5432,h2:5433/db?target_session_attrs=any&pool_max_conns=4",
		"postgres://u:secretpw@h/db?sslmode=verify-full&sslrootcert=/nope",
	)
}
