package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// layout=tsbs is the layout tsbs_load_timescaledb creates
// (pkg/targets/timescaledb/creator.go, its default flags):
//
//	CREATE TABLE tags (id SERIAL PRIMARY KEY, hostname TEXT, region TEXT, ...)
//	CREATE UNIQUE INDEX uniq1 ON tags (hostname, region, ...)
//	CREATE INDEX ON tags (hostname)
//	CREATE TABLE cpu (time timestamptz, tags_id integer, usage_user DOUBLE PRECISION, ...,
//	                  additional_tags JSONB DEFAULT NULL)
//	CREATE INDEX ON cpu (tags_id, "time" DESC)     -- --partition-index
//	CREATE INDEX ON cpu ("time" DESC)              -- --time-index
//	SELECT create_hypertable('cpu', 'time', chunk_time_interval => 12h, create_default_indexes => FALSE)
//
// One tags table serves every measurement (the iot data set's readings
// and diagnostics share their trucks), so the measurements must share
// their tags. Numeric tags (the trucks' capacities) are double precision,
// as TSBS's float32 tags are. soakd creates it all IF NOT EXISTS and
// writes into tables TSBS made as into its own: a device's tags_id is the
// smallest tags.id with its device tag, inserted with its tags when there
// is none.

const (
	tsbsTags   = "tags"
	tsbsTagsID = "tags_id"
	tsbsExtra  = "additional_tags"
)

// checkTSBSSchemas reports schemas the TSBS layout cannot hold: they must
// share one set of tags, and none may be called tags.
func checkTSBSSchemas(schemas []*sources.Schema) error {
	var errs []error
	for _, s := range schemas {
		if s.Measurement == tsbsTags {
			errs = append(errs, fmt.Errorf("layout=tsbs keeps tags in a table named %s: a measurement cannot have that name", tsbsTags))
		}
		for _, f := range s.Fields {
			if f.Name == tsbsTagsID || f.Name == tsbsExtra {
				errs = append(errs, fmt.Errorf("layout=tsbs: field %q of %s clashes with TSBS's column of that name", f.Name, s.Measurement))
			}
		}
		if w := tsbsRowBytes(s); w > maxRowBytes {
			errs = append(errs, fmt.Errorf("layout=tsbs: a row of %s's %d fields takes %d bytes, more than the %d of a PostgreSQL page, and every write would fail (row is too big): "+
				"its additional_tags column is always NULL, so each row carries a NULL bitmap too; fewer fields (the massive source's COLUMNS; %d fit), or the soakd layout",
				s.Measurement, len(s.Fields), w, maxRowBytes, tsbsMaxFields))
		}
		if s0 := schemas[0]; !slices.Equal(s.TagKeys, s0.TagKeys) || s.DeviceTag != s0.DeviceTag {
			errs = append(errs, fmt.Errorf("layout=tsbs keeps one tags table, so every table must have the same tags: %s has %v, %s has %v (devops-full's tables differ; use the soakd layout)",
				s0.Measurement, s0.TagKeys, s.Measurement, s.TagKeys))
		}
	}
	return errors.Join(errs...)
}

func numericTag(s *sources.Schema, k int) bool { return k < len(s.NumericTags) && s.NumericTags[k] }

// tsbsTagsDDL creates the tags table of schema s's tags.
func tsbsTagsDDL(s *sources.Schema) []string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + quote(tsbsTags) + " (\n  id SERIAL PRIMARY KEY")
	cols := make([]string, len(s.TagKeys))
	for k, key := range s.TagKeys {
		cols[k] = quote(key)
		typ := "text"
		if numericTag(s, k) {
			typ = "double precision"
		}
		b.WriteString(",\n  " + cols[k] + " " + typ)
	}
	b.WriteString("\n)")
	return []string{
		b.String(),
		"CREATE UNIQUE INDEX IF NOT EXISTS uniq1 ON " + quote(tsbsTags) + " (" + strings.Join(cols, ", ") + ")",
		"CREATE INDEX IF NOT EXISTS " + quote(tsbsTags+"_"+s.TagKeys[s.DeviceTag]+"_idx") + " ON " + quote(tsbsTags) + " (" + quote(s.TagKeys[s.DeviceTag]) + ")",
	}
}

// tsbsCreateTable is the DDL of p's table in the TSBS layout: the table,
// then its two indexes (the hypertable, if any, goes between).
func tsbsCreateTable(p *plan) []string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + p.table + " (\n  " + quote(timeColumn) + " timestamptz NOT NULL,\n  " + quote(tsbsTagsID) + " integer")
	for _, f := range p.schema.Fields {
		b.WriteString(",\n  " + quote(f.Name) + " double precision")
	}
	b.WriteString(",\n  " + quote(tsbsExtra) + " jsonb DEFAULT NULL\n)")
	m := p.schema.Measurement
	return []string{
		b.String(),
		"CREATE INDEX IF NOT EXISTS " + quote(cut63(m+"_tags_id_time_idx")) + " ON " + p.table + " (" + quote(tsbsTagsID) + ", " + quote(timeColumn) + " DESC)",
		"CREATE INDEX IF NOT EXISTS " + quote(cut63(m+"_time_idx")) + " ON " + p.table + " (" + quote(timeColumn) + " DESC)",
	}
}

func cut63(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// maxTagIDs bounds the tags ids the sink's shared cache holds, and
// maxWriterTagIDs each writer's copy: past it a cache starts afresh (the
// shared one, then the tags table, answers again), so that devices coming
// and going (CHURN) never grow the caches without bound. A writer's copy
// is small because every writer of the pool sees every device over time:
// at 2^16 ids (about 1.2 MB each) 64 workers hold 80 MB, where 2^20 each
// would hold over a gigabyte. Past 2^16 devices a writer takes its ids
// from the shared cache more often, a map read under a read lock.
const (
	maxTagIDs       = 1 << 20
	maxWriterTagIDs = 1 << 16
)

// tagIDs maps devices to their tags.id, shared by the sink's writers;
// each writer (a pooled connection) keeps its own copy of the ids it
// used, so the shared map is read only on a writer's first sight of a
// device (until its copy is trimmed).
type tagIDs struct {
	mu  sync.RWMutex
	ids map[uint32]int32
}

func (m *tagIDs) get(dev uint32) (int32, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	id, ok := m.ids[dev]
	return id, ok
}

func (m *tagIDs) put(dev uint32, id int32) {
	m.mu.Lock()
	if m.ids == nil || len(m.ids) >= maxTagIDs {
		m.ids = map[uint32]int32{}
	}
	m.ids[dev] = id
	m.mu.Unlock()
}

// ensureTags makes sure w knows the tags_id of every device of t: from
// its own cache, the sink's, or the tags table (inserting the tags of
// devices it lacks). It runs before the batch's transaction, so that a
// failed batch never rolls back tags the caches already hold.
func (s *Sink) ensureTags(ctx context.Context, pc *pgconn.PgConn, w *writer, t *sources.Table) error {
	if w.tagIDs == nil {
		w.tagIDs = map[uint32]int32{}
	}
	w.missing = w.missing[:0]
	for _, d := range t.Device {
		if _, ok := w.tagIDs[d]; ok {
			continue
		}
		if id, ok := s.tagIDs.get(d); ok {
			w.tagIDs[d] = id
			continue
		}
		if !slices.Contains(w.missing, d) {
			w.missing = append(w.missing, d)
		}
	}
	if len(w.missing) == 0 {
		return nil
	}
	return s.fetchTags(ctx, pc, w, t.Schema)
}

// trimTags starts w's cache of tags ids afresh when it holds
// maxWriterTagIDs: called before a batch's ensureTags, never between them
// and rowIDs.
func (w *writer) trimTags() {
	if len(w.tagIDs) >= maxWriterTagIDs {
		w.tagIDs = nil
	}
}

// rowIDs returns the tags_id of each row of t, which ensureTags has
// looked up.
func (w *writer) rowIDs(t *sources.Table) []int32 {
	w.ids = w.ids[:0]
	for _, d := range t.Device {
		w.ids = append(w.ids, w.tagIDs[d])
	}
	return w.ids
}

// fetchTags looks up the tags ids of the devices in w.missing by their
// device tag, inserts the tags of those not found, and looks up again
// those another writer inserted meanwhile.
func (s *Sink) fetchTags(ctx context.Context, pc *pgconn.PgConn, w *writer, sc *sources.Schema) error {
	dev := quote(sc.TagKeys[sc.DeviceTag])
	byName := map[string]uint32{}
	names := make([]string, len(w.missing))
	var buf []byte
	for i, d := range w.missing {
		buf = sc.Tags.AppendTag(buf[:0], d, sc.DeviceTag)
		names[i] = string(buf)
		byName[names[i]] = d
	}
	found := func(rr *pgconn.ResultReader) error {
		for rr.NextRow() {
			v := rr.Values()
			id, err := strconv.ParseInt(string(v[1]), 10, 32)
			if err != nil {
				return fmt.Errorf("tags.id %q: %w", v[1], err)
			}
			if d, ok := byName[string(v[0])]; ok {
				w.tagIDs[d] = int32(id)
				s.tagIDs.put(d, int32(id))
			}
		}
		_, err := rr.Close()
		return err
	}
	lookup := func(names []string) error {
		// The smallest id per name, should the tags table hold a device
		// twice (a TSBS-made table with other tag values).
		q := "SELECT DISTINCT ON (" + dev + ") " + dev + ", id FROM " + quote(tsbsTags) + " WHERE " + dev + " = ANY($1::text[]) ORDER BY " + dev + ", id"
		rr := pc.ExecParams(ctx, q, [][]byte{textArray(names)}, nil, nil, nil)
		if err := found(rr); err != nil {
			return fmt.Errorf("cannot look up tags: %w", err)
		}
		return nil
	}
	if err := lookup(names); err != nil {
		return err
	}
	var absent []string
	for _, n := range names {
		if _, ok := w.tagIDs[byName[n]]; !ok {
			absent = append(absent, n)
		}
	}
	if len(absent) == 0 {
		return nil
	}
	// INSERT ... VALUES ($1, $2, NULLIF($3, '')::double precision, ...), ...
	cols := make([]string, len(sc.TagKeys))
	for k, key := range sc.TagKeys {
		cols[k] = quote(key)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + quote(tsbsTags) + " (" + strings.Join(cols, ", ") + ") VALUES ")
	var params [][]byte
	for i, n := range absent {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for k := range sc.TagKeys {
			if k > 0 {
				b.WriteString(", ")
			}
			buf = sc.Tags.AppendTag(buf[:0], byName[n], k)
			ph := "$" + strconv.Itoa(len(params)+1)
			if len(buf) == 0 {
				params = append(params, nil) // a device without this tag: NULL
			} else {
				params = append(params, append([]byte(nil), buf...))
			}
			if numericTag(sc, k) {
				b.WriteString(ph + "::double precision")
			} else {
				b.WriteString(ph + "::text")
			}
		}
		b.WriteByte(')')
	}
	b.WriteString(" ON CONFLICT DO NOTHING RETURNING " + dev + ", id")
	if err := found(pc.ExecParams(ctx, b.String(), params, nil, nil, nil)); err != nil {
		return fmt.Errorf("cannot insert tags: %w", err)
	}
	var still []string
	for _, n := range absent {
		if _, ok := w.tagIDs[byName[n]]; !ok {
			still = append(still, n)
		}
	}
	if len(still) > 0 {
		if err := lookup(still); err != nil {
			return err
		}
		for _, n := range still {
			if _, ok := w.tagIDs[byName[n]]; !ok {
				return sinks.NewError(sinks.Other, true, fmt.Errorf("no tags row for %s %q after inserting it", sc.TagKeys[sc.DeviceTag], n))
			}
		}
	}
	return nil
}

// textArray is a PostgreSQL text array literal of names (text format).
func textArray(names []string) []byte {
	b := []byte{'{'}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(n); j++ {
			if n[j] == '"' || n[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, n[j])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// tsbsTagsColumns are the columns of the tags table that soakd reads and
// writes for sc's devices: id and sc's tags.
func tsbsTagsColumns(sc *sources.Schema) []string {
	return append([]string{"id"}, sc.TagKeys...)
}

// maxRowBytes is the widest row PostgreSQL stores (MaxHeapTupleSize with
// 8 KB pages): a row holds its fixed-width values whole in one page.
const maxRowBytes = 8160

// tsbsMaxFields is the most fields a layout=tsbs row of doubles holds.
const tsbsMaxFields = 999

// tsbsRowBytes is the size of a layout=tsbs row of s: a header of 23
// bytes and a NULL bitmap of a bit a column (additional_tags is always
// NULL), padded to 8; time; tags_id, padded to 8 before the first
// double; a double a field.
func tsbsRowBytes(s *sources.Schema) int {
	columns := 3 + len(s.Fields) // time, tags_id, the fields, additional_tags
	header := (23 + (columns+7)/8 + 7) &^ 7
	return header + 8 + 8 + 8*len(s.Fields)
}
