package file

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks/devcache"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
)

// Format is a data file format.
type Format uint8

const (
	// Influx is InfluxDB line protocol, as tsbs_generate_data --format
	// influx writes it.
	Influx Format = iota
	// CSV is RFC 4180 CSV with a header line: time,<tags>,<fields>.
	CSV
	// PGCopy is PostgreSQL's COPY text format (tab-separated, \N for
	// NULL), columns time,<tags>,<fields>, as COPY table FROM STDIN reads.
	PGCopy
)

// ParseFormat parses influx, csv or pgcopy.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "influx", "lineprotocol", "line":
		return Influx, nil
	case "csv":
		return CSV, nil
	case "pgcopy", "copy", "tsv":
		return PGCopy, nil
	}
	return 0, fmt.Errorf("unknown format %q (want influx, csv or pgcopy)", s)
}

func (f Format) String() string { return [...]string{"influx", "csv", "pgcopy"}[f] }

// Ext is the usual file name extension of the format.
func (f Format) Ext() string { return [...]string{".influx", ".csv", ".pgcopy"}[f] }

// Resolution is the unit of the times the format writes with precision
// p: line protocol's precision, CSV's and COPY's RFC 3339 nanoseconds.
// Two readings of a device closer than it are written at one time, and a
// loader keeps one of them.
func (f Format) Resolution(p lineproto.Precision) time.Duration {
	if f == Influx {
		return p.Duration()
	}
	return time.Nanosecond
}

// PerTable reports whether the format holds one table per file: CSV and
// COPY data have one set of columns, so a source with several
// measurements writes one file per measurement.
func (f Format) PerTable() bool { return f != Influx }

// Header returns the first line of a file of schema s in this format
// (nil when the format has none).
func (f Format) Header(s *sources.Schema) []byte {
	if f != CSV {
		return nil
	}
	b := []byte("time")
	for _, k := range s.TagKeys {
		b = appendCSV(append(b, ','), k)
	}
	for _, fd := range s.Fields {
		b = appendCSV(append(b, ','), fd.Name)
	}
	return append(b, '\n')
}

// TableFile names the file of measurement m when a format writes one file
// per measurement: the measurement goes before the extension
// (out.csv -> out.cpu.csv, out -> out.cpu).
func TableFile(path, m string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + m + ext
}

// RowEncoder appends one row of a table in a file format; ok is false
// (dst unchanged) for a row the format cannot hold (line protocol: no
// value). Encoders do not allocate in steady state and are not safe for
// concurrent use.
type RowEncoder interface {
	AppendRow(dst []byte, t *sources.Table, i int) (out []byte, ok bool)
}

// NewEncoder returns an encoder for f; p is the timestamp precision of
// line protocol.
func NewEncoder(f Format, p lineproto.Precision) RowEncoder {
	switch f {
	case CSV:
		return &textEncoder{csv: true}
	case PGCopy:
		return &textEncoder{}
	}
	return &lineproto.Encoder{Precision: p}
}

// textEncoder writes CSV or COPY text rows: time,tags...,fields...
type textEncoder struct {
	csv     bool
	scratch []byte
	lastTs  int64
	tsSet   bool
	tsText  []byte
	cur     *tagCache
	caches  []*tagCache
	budget  devcache.Budget // bytes held by all tag caches
}

// tagCacheBytes bounds the memory a text encoder spends caching encoded
// tag columns (a device's tags never change).
const tagCacheBytes = 2 << 20

// tagCache holds, per device, the encoded tag columns of one schema.
type tagCache struct {
	schema *sources.Schema
	devcache.Cache
}

func (e *textEncoder) cache(s *sources.Schema) *tagCache {
	if e.cur != nil && e.cur.schema == s {
		return e.cur
	}
	for _, c := range e.caches {
		if c.schema == s {
			e.cur = c
			return c
		}
	}
	c := &tagCache{schema: s}
	e.caches = append(e.caches, c)
	e.cur = c
	return c
}

// appendTags appends sep and each tag column of device dev.
func (e *textEncoder) appendTags(dst []byte, s *sources.Schema, dev uint32, sep byte) []byte {
	c := e.cache(s)
	if out, ok := c.Append(dst, dev); ok {
		return out
	}
	start := len(dst)
	for k := range s.TagKeys {
		dst = append(dst, sep)
		e.scratch = s.Tags.AppendTag(e.scratch[:0], dev, k)
		switch {
		case e.csv:
			dst = appendCSVBytes(dst, e.scratch)
		case len(e.scratch) == 0:
			dst = append(dst, `\N`...)
		default:
			dst = appendCopy(dst, e.scratch)
		}
	}
	if e.budget.Limit == 0 {
		e.budget.Limit = tagCacheBytes
	}
	c.Put(dev, dst[start:], &e.budget)
	return dst
}

func (e *textEncoder) AppendRow(dst []byte, t *sources.Table, i int) ([]byte, bool) {
	sep := byte('\t')
	if e.csv {
		sep = ','
	}
	if ts := t.Time[i]; !e.tsSet || ts != e.lastTs {
		// rows of one round share a timestamp: format it once
		e.tsText = time.Unix(0, ts).UTC().AppendFormat(e.tsText[:0], time.RFC3339Nano)
		e.lastTs, e.tsSet = ts, true
	}
	dst = append(dst, e.tsText...)
	s := t.Schema
	dst = e.appendTags(dst, s, t.Device[i], sep)
	for f := range s.Fields {
		dst = append(dst, sep)
		if n := t.Null[f]; n != nil && n[i] {
			if !e.csv {
				dst = append(dst, `\N`...)
			}
			continue
		}
		fd := &s.Fields[f]
		if fd.Kind == sources.Int {
			dst = strconv.AppendInt(dst, t.Ints[f][i], 10)
			continue
		}
		v := t.Floats[f][i]
		switch {
		case !math.IsNaN(v) && !math.IsInf(v, 0):
			dst = lineproto.AppendFloat(dst, v, fd.Decimals)
		case e.csv:
		default:
			dst = append(dst, `\N`...)
		}
	}
	return append(dst, '\n'), true
}

func appendCSV(dst []byte, s string) []byte { return appendCSVBytes(dst, []byte(s)) }

// appendCSVBytes quotes v when it holds a comma, quote, CR or LF.
func appendCSVBytes(dst, v []byte) []byte {
	needs := false
	for _, c := range v {
		if c == ',' || c == '"' || c == '\n' || c == '\r' {
			needs = true
			break
		}
	}
	if !needs {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// appendCopy escapes v for COPY text format.
func appendCopy(dst, v []byte) []byte {
	clean := true
	for _, c := range v {
		if c == '\\' || c == '\t' || c == '\n' || c == '\r' {
			clean = false
			break
		}
	}
	if clean {
		return append(dst, v...)
	}
	for _, c := range v {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
