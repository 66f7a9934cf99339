package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/urlparam"
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

// Layout is how a source's tables are laid out.
type Layout uint8

const (
	// SoakdLayout is one table per measurement with its tags inline, as
	// text columns, and fields of their own type (the default).
	SoakdLayout Layout = iota + 1
	// TSBSLayout is tsbs_load_timescaledb's: one tags table (id serial, a
	// column per tag) shared by the measurements, and per measurement
	// (time, tags_id, double precision fields, additional_tags jsonb) with
	// TSBS's indexes, so that TSBS's query runner and soakd's queries run
	// on the same data.
	TSBSLayout
)

var layoutNames = [...]string{SoakdLayout: "soakd", TSBSLayout: "tsbs"}

func (l Layout) String() string {
	if int(l) < len(layoutNames) && layoutNames[l] != "" {
		return layoutNames[l]
	}
	return "unknown"
}

// tsbsChunkInterval is tsbs_load_timescaledb's default --chunk-time, the
// chunk interval of layout=tsbs hypertables unless chunk_interval is set.
const tsbsChunkInterval = 12 * time.Hour

// Config is the soakd part of a postgres:// URL. Everything else in the
// URL goes to pgx.
type Config struct {
	Method  Method
	Dialect Dialect
	// Layout is how tables are laid out (?layout=, default soakd).
	Layout Layout
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

// nameRange bounds PostgreSQL identifiers soakd creates (NAMEDATALEN-1).
var nameRange = urlparam.Within(1, 63)

// Params are the URL parameters this package consumes itself; the others
// go to pgx (pgxParams).
var Params = urlparam.Set{
	Params: []urlparam.Param{
		{Name: "insert", Type: urlparam.Enum, Choices: []string{"copy", "insert|values", "unnest"}, Fold: true,
			Help: "how rows are sent: binary COPY, prepared multi-row INSERT or unnest arrays; default copy (kwdb: insert; cockroach with dedup: unnest)"},
		{Name: "dialect", Type: urlparam.Enum, Fold: true, Default: "postgres",
			Choices: []string{"postgres|postgresql", "timescaledb|timescale", "kwdb|kaiwudb", "matrixdb", "greenplum", "cockroach|cockroachdb|crdb"},
			Help:    "server family: its DDL and write details"},
		{Name: "create", Type: urlparam.Bool, KeepEmpty: true, Default: "true", Help: "create missing tables (and the schema)"},
		{Name: "dedup", Type: urlparam.Bool, KeepEmpty: true, Default: "false", Help: "a primary key on (device, time); re-sent rows are stored once"},
		{Name: "chunk_interval", Type: urlparam.Duration, Range: urlparam.Above(0), Want: "a positive duration such as 12h",
			Help: "timescaledb: chunk_time_interval of new hypertables, whole microseconds; default the extension's (layout=tsbs: 12h)"},
		{Name: "timeout", Type: urlparam.Duration, Range: urlparam.AtLeast(0), Want: "a duration such as 30s (0 = no limit)",
			Help: "bound of each write on top of the engine's TIMEOUT (0 = none)"},
		{Name: "ts_database", Type: urlparam.String, KeepEmpty: true, Range: nameRange, Default: "soakd", Want: "a name of 1 to 63 bytes",
			Help: "kwdb: the time-series database holding the tables"},
		{Name: "layout", Type: urlparam.Enum, Choices: []string{"soakd", "tsbs"}, Fold: true, Default: "soakd",
			Help: "soakd (a table per measurement, tags inline) or tsbs (tsbs_load_timescaledb's tables)"},
		{Name: "schema", Type: urlparam.String, KeepEmpty: true, Range: nameRange, Want: "a name of 1 to 63 bytes",
			Help: "schema of soakd's tables, created when missing; default the search_path's first"},
		{Name: "table_prefix", Type: urlparam.String, KeepEmpty: true, Range: urlparam.Within(1, 32), Want: "1 to 32 bytes",
			Help: "prepended to every table name"},
	},
	Repeated: func(k string, n int) error { return fmt.Errorf("parameter %s given %d times", k, n) },
}

// soakdParams are the names of Params.
var soakdParams = Params.Names("")

// The error for an unknown parameter lists Params, so it is set once
// Params is.
func init() { Params.Unknown = unknownParam }

// unknownParam lets pgx's parameters through and names the others.
func unknownParam(k, _ string) error {
	switch {
	case slices.Contains(pgxParams, k):
		return nil
	case slices.Contains(libpqOnly, k):
		return fmt.Errorf("parameter %s: libpq parameter not supported by pgx, the driver soakd uses", k)
	}
	return fmt.Errorf("unknown parameter %q: neither a soakd parameter (%s) nor a libpq/pgx one (sslmode, connect_timeout, application_name, pool_max_conns, ...); server settings go in options=-c name=value",
		k, strings.Join(soakdParams, ", "))
}

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
	c := Config{Method: 0, Dialect: Postgres, Layout: SoakdLayout, Create: true, TSDatabase: "soakd"}
	var schemeErr error
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		schemeErr = fmt.Errorf("scheme %q: want postgres:// or postgresql://", u.Scheme)
	}
	q, err := urlparam.ParseQuery(u.RawQuery)
	if err != nil {
		return c, "", err
	}
	p := Params.Read(q)
	p.Add(schemeErr)
	p.CheckRepeated()
	p.CheckUnknown("")
	c.Dialect = Dialect(slices.Index(dialectNames[:], p.Enum("dialect")))
	c.Create = p.Bool("create")
	c.Dedup = p.Bool("dedup")
	c.Method = Method(slices.Index(methodNames[:], p.Enum("insert")))
	dialectParams(p, &c)
	c.Timeout = p.Duration("timeout")
	kwdbParams(p, &c)
	layoutParams(p, &c)
	nameParams(p, &c)
	defaultMethod(p, &c)
	if err := p.Err(); err != nil {
		return c, "", err // one error per problem: the engine prints each on its line
	}
	return c, connString(u), nil
}

// dialectParams reads chunk_interval, a timescaledb setting.
func dialectParams(p *urlparam.Query, c *Config) {
	if !p.Given("chunk_interval") {
		return
	}
	d := p.Duration("chunk_interval")
	switch {
	case c.Dialect != TimescaleDB:
		p.Addf("chunk_interval is a timescaledb setting; add dialect=timescaledb or remove it")
	case d%time.Microsecond != 0:
		p.Addf("chunk_interval %q: want whole microseconds", p.Raw("chunk_interval"))
	default:
		c.ChunkInterval = d
	}
}

// kwdbParams reads ts_database, a kwdb setting.
func kwdbParams(p *urlparam.Query, c *Config) {
	if !p.Has("ts_database") {
		return
	}
	if c.Dialect != KWDB {
		p.Addf("ts_database is a kwdb setting; add dialect=kwdb or remove it")
		return
	}
	c.TSDatabase = p.String("ts_database")
}

// layoutParams reads layout= and refuses what layout=tsbs cannot do.
func layoutParams(p *urlparam.Query, c *Config) {
	if p.Enum("layout") != "tsbs" {
		return
	}
	c.Layout = TSBSLayout
	if c.Dialect != Postgres && c.Dialect != TimescaleDB {
		p.Addf("layout=tsbs is tsbs_load_timescaledb's layout, for dialect postgres or timescaledb, not %s", c.Dialect)
	}
	if c.Dedup {
		p.Add(errors.New("layout=tsbs has no unique key (TSBS's tables have none): dedup=true needs the soakd layout"))
	}
	if c.Method != 0 && c.Method != Copy {
		p.Addf("layout=tsbs writes with COPY, as tsbs_load_timescaledb does; insert=%s needs the soakd layout", c.Method)
	}
	if p.Has("schema") || p.Has("table_prefix") {
		p.Add(errors.New("layout=tsbs writes TSBS's own table names (tags, cpu, ...) where TSBS's tools look for them: schema= and table_prefix= need the soakd layout"))
	}
	if c.Dialect == TimescaleDB && c.ChunkInterval == 0 && !p.Has("chunk_interval") {
		c.ChunkInterval = tsbsChunkInterval
	}
}

// nameParams reads schema= and table_prefix=.
func nameParams(p *urlparam.Query, c *Config) {
	if p.Has("schema") {
		s := p.Raw("schema")
		switch {
		case c.Dialect == KWDB:
			p.Addf("schema: kwdb keeps its time-series tables in ts_database; use ts_database")
		case !p.Given("schema"):
		case strings.ContainsFunc(s, unicode.IsControl):
			// PostgreSQL takes no NUL in a name, and the error it gave at
			// prepare showed the name without the character unseen.
			p.Addf("schema %q: holds a control character; give a name of printable characters", s)
		case strings.HasPrefix(strings.ToLower(s), "pg_"):
			p.Addf("schema %q: names starting with pg_ are reserved for the system", s)
		case s == "information_schema":
			// A superuser may create tables there, among the SQL standard's
			// views of the catalog. Quoted, as soakd writes it, another case
			// ("Information_Schema") is another schema.
			p.Addf("schema %q: the system's schema of catalog views; give a schema of your own", s)
		case strings.HasPrefix(s, "_timescaledb_") || s == "timescaledb_information" || s == "timescaledb_experimental":
			// TimescaleDB's own: its chunks, catalog and functions live
			// there, and soakd's tables (and their cleanup) would mix in.
			p.Addf("schema %q: TimescaleDB's own schema (its chunks, catalog or views); give a schema of your own", s)
		default:
			c.Schema = s
		}
	}
	c.TablePrefix = p.String("table_prefix")
	if strings.ContainsFunc(c.TablePrefix, unicode.IsControl) {
		p.Addf("table_prefix %q: holds a control character; give printable characters", c.TablePrefix)
	}
}

// defaultMethod picks the insert method the dialect does best when
// insert= is not given, and refuses the combinations a dialect cannot do.
func defaultMethod(p *urlparam.Query, c *Config) {
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
		p.Add(errors.New("dedup=true with insert=copy needs a temporary staging table, which CockroachDB does not offer by default; use insert=unnest (the default for cockroach with dedup)"))
	}
}

// connString is u without the soakd parameters, for pgx.
func connString(u *url.URL) string {
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
	return cu.String()
}

// Check is the registry's CheckFunc: it validates a postgres:// URL
// without I/O, including what pgx itself would reject (ports, sslmode,
// pool settings, unreadable certificate files). Query workloads need the
// postgres or timescaledb dialect.
func Check(u *url.URL, kind sources.Kind) error {
	c, _, err := parse(u, sinks.Options{Workers: 1})
	if err == nil && kind == sources.Queries {
		err = checkQueryConfig(c)
	}
	return err
}

// checkQueryConfig refuses what query workloads cannot read: other
// dialects, and tables renamed by schema= or table_prefix= (the queries
// name the data set's tables as they are).
func checkQueryConfig(c Config) error {
	if c.Dialect != Postgres && c.Dialect != TimescaleDB {
		return fmt.Errorf("query workloads are written for PostgreSQL and TimescaleDB, not dialect %s", c.Dialect)
	}
	if c.Schema != "" || c.TablePrefix != "" {
		return errors.New("query workloads read the data set's tables by their own names: schema= and table_prefix= are for series workloads")
	}
	return nil
}
