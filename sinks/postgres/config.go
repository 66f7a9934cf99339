package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Method is how rows are sent.
type Method uint8

const (
	// Copy sends each table of a batch with COPY ... FROM STDIN BINARY.
	Copy Method = iota + 1
	// Insert sends multi-row INSERT ... VALUES statements, prepared once
	// per connection, all of a batch pipelined in one round trip.
	Insert
	// Unnest sends one INSERT ... SELECT FROM unnest($1::type[], ...) per
	// table, with each column as one binary array parameter.
	Unnest
)

var methodNames = [...]string{Copy: "copy", Insert: "insert", Unnest: "unnest"}

func (m Method) String() string {
	if int(m) < len(methodNames) && methodNames[m] != "" {
		return methodNames[m]
	}
	return "unknown"
}

// Dialect selects the DDL (and a few write details) for a server family.
type Dialect uint8

const (
	// Postgres is plain PostgreSQL (the default).
	Postgres Dialect = iota + 1
	// TimescaleDB makes each table a hypertable when the extension is
	// present (plain tables otherwise).
	TimescaleDB
	// KWDB creates a time-series database and tables with TAGS and
	// PRIMARY TAGS (KaiwuDB).
	KWDB
	// MatrixDB is MatrixDB: tables DISTRIBUTED BY the device tag.
	MatrixDB
	// Greenplum is Greenplum: tables DISTRIBUTED BY the device tag.
	Greenplum
	// Cockroach is CockroachDB.
	Cockroach
)

var dialectNames = [...]string{Postgres: "postgres", TimescaleDB: "timescaledb", KWDB: "kwdb",
	MatrixDB: "matrixdb", Greenplum: "greenplum", Cockroach: "cockroach"}

func (d Dialect) String() string {
	if int(d) < len(dialectNames) && dialectNames[d] != "" {
		return dialectNames[d]
	}
	return "unknown"
}

// distributed reports whether the dialect is a Greenplum-family MPP
// database (DISTRIBUTED BY).
func (d Dialect) distributed() bool { return d == MatrixDB || d == Greenplum }

// Config is the soakd part of a postgres:// URL. Everything else in the
// URL goes to pgx.
type Config struct {
	Method  Method
	Dialect Dialect
	// Create makes Prepare create missing tables (?create=, default true).
	Create bool
	// Dedup gives each table a primary key on (device, time) and skips
	// rows already stored (?dedup=).
	Dedup bool
	// ChunkInterval is the TimescaleDB chunk_time_interval (0 = the
	// extension's default).
	ChunkInterval time.Duration
	// Timeout bounds each Write on top of the caller's context (0 = the
	// caller's context only; the engine's SOAKD_<W>_TIMEOUT already bounds
	// every write, so this is for TIMEOUT=0 or use outside the engine).
	Timeout time.Duration
	// TSDatabase is the KWDB time-series database holding the tables.
	TSDatabase string
	// Schema is the PostgreSQL schema of soakd's tables (?schema=; ""
	// = the search_path's first, usually public). Prepare creates it
	// when missing (with create=true).
	Schema string
	// TablePrefix is prepended to every table name (?table_prefix=).
	TablePrefix string
}

// soakdParams are the URL parameters this package consumes itself.
var soakdParams = []string{"insert", "dialect", "create", "dedup", "chunk_interval", "timeout", "ts_database", "schema", "table_prefix"}

// pgxParams are the libpq / pgx / pgxpool parameters passed through to
// pgx unchanged.
var pgxParams = []string{
	"host", "port", "dbname", "database", "user", "password", "passfile", "connect_timeout",
	"sslmode", "ssl", "sslkey", "sslcert", "sslcertmode", "sslrootcert", "sslnegotiation", "sslpassword", "sslsni",
	"krbspn", "krbsrvname", "target_session_attrs", "service", "servicefile",
	"min_protocol_version", "max_protocol_version", "channel_binding", "require_auth",
	// startup parameters the server itself understands
	"application_name", "options", "client_encoding",
	// pgx
	"default_query_exec_mode", "statement_cache_capacity", "description_cache_capacity",
	// pgxpool
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_idle_time", "pool_health_check_period", "pool_max_conn_lifetime_jitter", "pool_ping_timeout",
}

// libpqOnly are libpq parameters pgx does not implement; pgx would send
// them to the server as settings, which the server refuses at connect
// time, so they are reported at config time instead.
var libpqOnly = []string{
	"hostaddr", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
	"tcp_user_timeout", "gssencmode", "gsslib", "gssdelegation", "requirepeer", "sslcompression",
	"sslcrl", "sslcrldir", "ssl_min_protocol_version", "ssl_max_protocol_version",
	"load_balance_hosts", "fallback_application_name", "replication", "sslkeylogfile", "scram_client_key",
	"scram_server_key", "oauth_issuer", "oauth_client_id", "oauth_client_secret", "oauth_scope",
}

// ParseURL splits a postgres:// URL into the soakd settings and the
// connection string for pgx (the URL without the soakd parameters). It
// does no I/O. Every problem is reported, each naming its parameter.
func ParseURL(u *url.URL) (Config, string, error) {
	c := Config{Method: 0, Dialect: Postgres, Create: true, TSDatabase: "soakd"}
	var errs []error
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		errs = append(errs, fmt.Errorf("scheme %q: want postgres:// or postgresql://", u.Scheme))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return c, "", fmt.Errorf("invalid query string: %w", err)
	}
	for k, vs := range q {
		switch {
		case slices.Contains(soakdParams, k):
			if len(vs) > 1 {
				errs = append(errs, fmt.Errorf("parameter %s given %d times", k, len(vs)))
			}
		case slices.Contains(pgxParams, k):
		case slices.Contains(libpqOnly, k):
			errs = append(errs, fmt.Errorf("parameter %s: libpq parameter not supported by pgx, the driver soakd uses", k))
		default:
			errs = append(errs, fmt.Errorf("unknown parameter %q: neither a soakd parameter (%s) nor a libpq/pgx one (sslmode, connect_timeout, application_name, pool_max_conns, ...); server settings go in options=-c name=value",
				k, strings.Join(soakdParams, ", ")))
		}
	}
	if s := q.Get("dialect"); s != "" {
		switch strings.ToLower(s) {
		case "postgres", "postgresql":
			c.Dialect = Postgres
		case "timescaledb", "timescale":
			c.Dialect = TimescaleDB
		case "kwdb", "kaiwudb":
			c.Dialect = KWDB
		case "matrixdb":
			c.Dialect = MatrixDB
		case "greenplum":
			c.Dialect = Greenplum
		case "cockroach", "cockroachdb", "crdb":
			c.Dialect = Cockroach
		default:
			errs = append(errs, fmt.Errorf("dialect %q: want postgres, timescaledb, kwdb, matrixdb, greenplum or cockroach", s))
		}
	}
	c.Create, err = boolParam(q, "create", true)
	if err != nil {
		errs = append(errs, err)
	}
	c.Dedup, err = boolParam(q, "dedup", false)
	if err != nil {
		errs = append(errs, err)
	}
	if s := q.Get("insert"); s != "" {
		switch strings.ToLower(s) {
		case "copy":
			c.Method = Copy
		case "insert", "values":
			c.Method = Insert
		case "unnest":
			c.Method = Unnest
		default:
			errs = append(errs, fmt.Errorf("insert %q: want copy, insert or unnest", s))
		}
	}
	if s := q.Get("chunk_interval"); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil || d <= 0:
			errs = append(errs, fmt.Errorf("chunk_interval %q: want a positive duration such as 12h", s))
		case c.Dialect != TimescaleDB:
			errs = append(errs, fmt.Errorf("chunk_interval is a timescaledb setting; add dialect=timescaledb or remove it"))
		case d%time.Microsecond != 0:
			errs = append(errs, fmt.Errorf("chunk_interval %q: want whole microseconds", s))
		default:
			c.ChunkInterval = d
		}
	}
	if s := q.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("timeout %q: want a duration such as 30s (0 = no limit)", s))
		} else {
			c.Timeout = d
		}
	}
	if q.Has("ts_database") {
		s := q.Get("ts_database")
		switch {
		case c.Dialect != KWDB:
			errs = append(errs, fmt.Errorf("ts_database is a kwdb setting; add dialect=kwdb or remove it"))
		case s == "" || len(s) > 63:
			errs = append(errs, fmt.Errorf("ts_database %q: want a name of 1 to 63 bytes", s))
		default:
			c.TSDatabase = s
		}
	}
	if q.Has("schema") {
		s := q.Get("schema")
		switch {
		case c.Dialect == KWDB:
			errs = append(errs, fmt.Errorf("schema: kwdb keeps its time-series tables in ts_database; use ts_database"))
		case s == "" || len(s) > 63:
			errs = append(errs, fmt.Errorf("schema %q: want a name of 1 to 63 bytes", s))
		case strings.HasPrefix(strings.ToLower(s), "pg_"):
			errs = append(errs, fmt.Errorf("schema %q: names starting with pg_ are reserved for the system", s))
		default:
			c.Schema = s
		}
	}
	if q.Has("table_prefix") {
		s := q.Get("table_prefix")
		if s == "" || len(s) > 32 {
			errs = append(errs, fmt.Errorf("table_prefix %q: want 1 to 32 bytes", s))
		} else {
			c.TablePrefix = s
		}
	}
	// Method defaults and the combinations a dialect cannot do.
	if c.Method == 0 {
		switch {
		case c.Dialect == KWDB:
			c.Method = Insert
		case c.Dialect == Cockroach && c.Dedup:
			c.Method = Unnest
		default:
			c.Method = Copy
		}
	}
	if c.Dedup && c.Method == Copy && c.Dialect == Cockroach {
		errs = append(errs, errors.New("dedup=true with insert=copy needs a temporary staging table, which CockroachDB does not offer by default; use insert=unnest (the default for cockroach with dedup)"))
	}
	if len(errs) > 0 {
		return c, "", errors.Join(errs...) // one error per problem: the engine prints each on its line
	}
	// Keep the other parameters exactly as written: libpq (and pgx)
	// decode only %XX escapes, not '+', so re-encoding would turn
	// options=-c%20x=1 into options=-c+x=1.
	var keep []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, _, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); part == "" || (err == nil && slices.Contains(soakdParams, uk)) {
			continue
		}
		keep = append(keep, part)
	}
	cu := *u
	cu.Scheme = "postgres"
	cu.RawQuery = strings.Join(keep, "&")
	cu.Fragment, cu.RawFragment = "", ""
	return c, cu.String(), nil
}

func boolParam(q url.Values, name string, def bool) (bool, error) {
	if !q.Has(name) {
		return def, nil
	}
	s := q.Get(name)
	v, err := strconv.ParseBool(s)
	if err != nil {
		return def, fmt.Errorf("%s %q: want true or false", name, s)
	}
	return v, nil
}

// Check is the registry's CheckFunc: it validates a postgres:// URL
// without I/O, including what pgx itself would reject (ports, sslmode,
// pool settings, unreadable certificate files). The registry entry
// accepts series workloads only.
func Check(u *url.URL, _ sources.Kind) error {
	_, _, err := parse(u, sinks.Options{Workers: 1})
	return err
}
