package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/soakd/soakd/sources"
)

// PostgreSQL type OIDs of the parameters sent (binary format).
const (
	oidText             = 25
	oidInt8             = 20
	oidFloat8           = 701
	oidTimestamptz      = 1184
	oidTextArray        = 1009
	oidInt8Array        = 1016
	oidFloat8Array      = 1022
	oidTimestamptzArray = 1185
)

// maxParams is the most parameters one statement may have (the protocol
// counts them in an int16).
const maxParams = 65535

// maxInsertRows caps the rows of one multi-row INSERT: larger statements
// gain nothing and cost the server more to parse and plan.
const maxInsertRows = 4096

// timeColumn is the name of the timestamp column of every table.
const timeColumn = "time"

// plan is everything prebuilt for writing one schema's table: quoted
// names and the SQL of every write path. Built once per schema, then read
// concurrently.
type plan struct {
	id     int // position among the sink's plans, names statements
	schema *sources.Schema
	table  string   // quoted, qualified for KWDB
	cols   []string // quoted: time, tags..., fields... (layout=tsbs: time, tags_id, fields...)
	names  []string // cols unquoted
	device string   // quoted device tag column
	nCols  int

	copySQL   string
	unnestSQL string
	// insert statements: chunkRows is the largest power of two of rows
	// whose parameters fit in one statement; a batch is split into
	// chunks of decreasing powers of two, so at most log2(chunkRows)+1
	// distinct statements exist per table.
	chunkRows  int
	insertOIDs []uint32
	unnestOIDs []uint32

	// dedup with COPY: rows go to a per-session temporary table first.
	stage       string
	stageCreate string
	stageCopy   string
	stageMerge  string

	unnestName string // prepared statement name

	mu       sync.Mutex
	inserts  map[int]stmt // rows -> statement
	onConfli string       // " ON CONFLICT (device, time) DO NOTHING" or ""
}

// stmt is a named prepared statement.
type stmt struct{ name, sql string }

func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// checkSchema reports schemas whose names cannot become a table.
func checkSchema(c Config, s *sources.Schema) error {
	var errs []error
	if s.Measurement == "" {
		errs = append(errs, errors.New("empty measurement name"))
	}
	if n := c.TablePrefix + s.Measurement; len(n) > 63 {
		errs = append(errs, fmt.Errorf("table name %q is longer than PostgreSQL's 63-byte limit", n))
	}
	seen := map[string]bool{timeColumn: true}
	add := func(kind, n string) {
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("empty %s name", kind))
		case len(n) > 63:
			errs = append(errs, fmt.Errorf("%s name %q is longer than PostgreSQL's 63-byte limit", kind, n))
		case seen[n]:
			errs = append(errs, fmt.Errorf("column %q appears twice (tags, fields and %q share one namespace)", n, timeColumn))
		}
		seen[n] = true
	}
	for _, k := range s.TagKeys {
		add("tag", k)
	}
	for _, f := range s.Fields {
		add("field", f.Name)
		if f.Kind != sources.Float && f.Kind != sources.Int {
			errs = append(errs, fmt.Errorf("field %q has unknown kind %d", f.Name, f.Kind))
		}
	}
	if s.DeviceTag < 0 || s.DeviceTag >= len(s.TagKeys) {
		errs = append(errs, fmt.Errorf("device tag index %d is not one of the %d tags", s.DeviceTag, len(s.TagKeys)))
	}
	if s.Tags == nil && len(s.TagKeys) > 0 {
		errs = append(errs, errors.New("schema has tag keys but no Tagger"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("measurement %q: %w", s.Measurement, err)
	}
	return nil
}

func newPlan(id int, c Config, s *sources.Schema) (*plan, error) {
	if err := checkSchema(c, s); err != nil {
		return nil, err
	}
	p := &plan{id: id, schema: s, inserts: map[int]stmt{}}
	p.unnestName = "soakd_" + strconv.Itoa(id) + "_unnest"
	p.table = quote(c.TablePrefix + s.Measurement)
	switch {
	case c.Dialect == KWDB:
		p.table = quote(c.TSDatabase) + "." + p.table
	case c.Schema != "":
		p.table = quote(c.Schema) + "." + p.table
	}
	p.cols = append(p.cols, quote(timeColumn))
	p.insertOIDs = append(p.insertOIDs, oidTimestamptz)
	p.unnestOIDs = append(p.unnestOIDs, oidTimestamptzArray)
	casts := []string{"timestamptz[]"}
	for _, k := range s.TagKeys {
		p.cols = append(p.cols, quote(k))
		p.insertOIDs = append(p.insertOIDs, oidText)
		p.unnestOIDs = append(p.unnestOIDs, oidTextArray)
		casts = append(casts, "text[]")
	}
	for _, f := range s.Fields {
		p.cols = append(p.cols, quote(f.Name))
		if f.Kind == sources.Int {
			p.insertOIDs = append(p.insertOIDs, oidInt8)
			p.unnestOIDs = append(p.unnestOIDs, oidInt8Array)
			casts = append(casts, "int8[]")
		} else {
			p.insertOIDs = append(p.insertOIDs, oidFloat8)
			p.unnestOIDs = append(p.unnestOIDs, oidFloat8Array)
			casts = append(casts, "float8[]")
		}
	}
	p.names = append(append([]string{timeColumn}, s.TagKeys...), fieldNames(s)...)
	if c.Layout == TSBSLayout {
		// time, tags_id, then every field as double precision.
		p.names = append([]string{timeColumn, tsbsTagsID}, fieldNames(s)...)
		p.cols = p.cols[:0]
		for _, n := range p.names {
			p.cols = append(p.cols, quote(n))
		}
	}
	p.nCols = len(p.cols)
	p.device = quote(s.TagKeys[s.DeviceTag])
	colList := strings.Join(p.cols, ", ")

	// KWDB deduplicates by (primary tags, timestamp) on its own and has
	// no ON CONFLICT for time-series tables. The conflict is named: a bare
	// ON CONFLICT DO NOTHING would also skip, without a word, rows that
	// another unique index or exclusion constraint refuses, and the
	// batch would count them as stored.
	if c.Dedup && c.Dialect != KWDB {
		p.onConfli = " ON CONFLICT (" + p.device + ", " + quote(timeColumn) + ") DO NOTHING"
	}
	p.copySQL = "COPY " + p.table + " (" + colList + ") FROM STDIN BINARY"

	var b strings.Builder
	b.WriteString("INSERT INTO " + p.table + " (" + colList + ") SELECT * FROM unnest(")
	for i, cast := range casts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1) + "::" + cast)
	}
	b.WriteString(")" + p.onConfli)
	p.unnestSQL = b.String()

	p.chunkRows = 1
	for p.chunkRows*2*p.nCols <= maxParams && p.chunkRows*2 <= maxInsertRows {
		p.chunkRows *= 2
	}
	if p.nCols > maxParams {
		return nil, fmt.Errorf("measurement %q: %d columns exceed the %d parameters of one statement", s.Measurement, p.nCols, maxParams)
	}

	if c.Dedup && c.Method == Copy {
		p.stage = quote("soakd_stage_" + strconv.Itoa(id))
		// ON COMMIT DELETE ROWS empties the table in place at each
		// commit, without the catalog churn of TRUNCATE or the dead rows
		// of DELETE (autovacuum never visits temporary tables).
		p.stageCreate = "CREATE TEMPORARY TABLE IF NOT EXISTS " + p.stage + " (LIKE " + p.table + " INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
		p.stageCopy = "COPY " + p.stage + " (" + colList + ") FROM STDIN BINARY"
		p.stageMerge = "INSERT INTO " + p.table + " (" + colList + ") SELECT " + colList + " FROM " + p.stage + p.onConfli
	}
	return p, nil
}

func fieldNames(s *sources.Schema) []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// insertStmt returns the multi-row INSERT for rows rows (a power of two no
// larger than chunkRows), building it once.
func (p *plan) insertStmt(rows int) stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.inserts[rows]; ok {
		return st
	}
	var b strings.Builder
	b.Grow(32 + len(p.table) + rows*p.nCols*8)
	b.WriteString("INSERT INTO " + p.table + " (" + strings.Join(p.cols, ", ") + ") VALUES ")
	n := 1
	var num [20]byte
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < p.nCols; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.Write(strconv.AppendInt(num[:0], int64(n), 10))
			n++
		}
		b.WriteByte(')')
	}
	b.WriteString(p.onConfli)
	st := stmt{name: "soakd_" + strconv.Itoa(p.id) + "_v" + strconv.Itoa(rows), sql: b.String()}
	p.inserts[rows] = st
	return st
}

// chunks calls f with the row ranges of the INSERT statements that carry
// n rows: chunkRows-sized ones, then the rest in decreasing powers of two.
func (p *plan) chunks(n int, f func(start, rows int)) {
	start := 0
	for ; n-start >= p.chunkRows; start += p.chunkRows {
		f(start, p.chunkRows)
	}
	for size := p.chunkRows / 2; size >= 1; size /= 2 {
		if n-start >= size {
			f(start, size)
			start += size
		}
	}
}

// preamble is the DDL run once before any table is created.
func preamble(c Config) []string {
	switch {
	case c.Dialect == KWDB:
		return []string{"CREATE TS DATABASE IF NOT EXISTS " + quote(c.TSDatabase)}
	case c.Schema != "":
		return []string{"CREATE SCHEMA IF NOT EXISTS " + quote(c.Schema)}
	}
	return nil
}

// createTable is the DDL that creates p's table and its index, in order.
// For TimescaleDB the hypertable is separate (hypertable) because it
// depends on the extension being present.
func createTable(c Config, p *plan) []string {
	if c.Layout == TSBSLayout {
		return tsbsCreateTable(p)
	}
	s := p.schema
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + p.table + " (\n")
	if c.Dialect == KWDB {
		// Data columns first (the timestamp must be the first), then tags.
		b.WriteString("  " + p.cols[0] + " TIMESTAMPTZ NOT NULL")
		for i, f := range s.Fields {
			b.WriteString(",\n  " + p.cols[1+len(s.TagKeys)+i] + " " + fieldType(c.Dialect, f.Kind))
		}
		b.WriteString("\n) TAGS (\n")
		for i := range s.TagKeys {
			if i > 0 {
				b.WriteString(",\n")
			}
			if i == s.DeviceTag {
				b.WriteString("  " + p.cols[1+i] + " VARCHAR(64) NOT NULL")
			} else {
				b.WriteString("  " + p.cols[1+i] + " VARCHAR(128)")
			}
		}
		b.WriteString("\n) PRIMARY TAGS (" + p.device + ")")
		// KWDB orders storage by (primary tags, timestamp) and allows no
		// secondary index on a time-series table: no CREATE INDEX.
		return []string{b.String()}
	}
	b.WriteString("  " + p.cols[0] + " timestamptz NOT NULL")
	for i := range s.TagKeys {
		b.WriteString(",\n  " + p.cols[1+i] + " " + textType(c.Dialect))
		if i == s.DeviceTag {
			b.WriteString(" NOT NULL")
		}
	}
	for i, f := range s.Fields {
		b.WriteString(",\n  " + p.cols[1+len(s.TagKeys)+i] + " " + fieldType(c.Dialect, f.Kind))
	}
	if c.Dedup {
		b.WriteString(",\n  PRIMARY KEY (" + p.device + ", " + p.cols[0] + ")")
	}
	b.WriteString("\n)")
	if c.Dialect.distributed() {
		b.WriteString(" DISTRIBUTED BY (" + p.device + ")")
	}
	stmts := []string{b.String()}
	if !c.Dedup {
		// With dedup the primary key is this index.
		stmts = append(stmts, "CREATE INDEX IF NOT EXISTS "+quote(indexName(c, s))+" ON "+p.table+
			" ("+p.device+", "+p.cols[0]+" DESC)")
	}
	return stmts
}

// indexName is <table>_<device>_time_idx, cut to PostgreSQL's 63 bytes.
// An index lives in its table's schema.
func indexName(c Config, s *sources.Schema) string {
	n := c.TablePrefix + s.Measurement + "_" + s.TagKeys[s.DeviceTag] + "_time_idx"
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

// hypertable is the TimescaleDB call that turns p's table into a
// hypertable partitioned on time (a no-op when it already is one). The
// TSBS layout has its own time index, as TSBS creates it, and none of
// TimescaleDB's default ones.
func hypertable(c Config, p *plan) string {
	s := "SELECT create_hypertable(" + literal(p.table) + ", " + literal(timeColumn)
	if c.ChunkInterval > 0 {
		s += ", chunk_time_interval => INTERVAL " + literal(strconv.FormatInt(c.ChunkInterval.Microseconds(), 10)+" microseconds")
	}
	if c.Layout == TSBSLayout {
		s += ", create_default_indexes => FALSE"
	}
	return s + ", if_not_exists => TRUE)"
}

// literal quotes s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func textType(d Dialect) string {
	if d == Cockroach {
		return "STRING"
	}
	return "text"
}

func fieldType(d Dialect, k sources.FieldKind) string {
	switch {
	case (d == Cockroach || d == KWDB) && k == sources.Int:
		return "INT8"
	case d == Cockroach || d == KWDB:
		return "FLOAT8"
	case k == sources.Int:
		return "bigint"
	}
	return "double precision"
}
