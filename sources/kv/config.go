package kv

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/soakd/soakd/sources"
)

// Config holds the settings of a kv workload. The engine parses it from
// SOAKD_<W>_* (the tags carry the names without that prefix); the source
// hands DataType and KeyPrefix to the sink as its Shape.
type Config struct {
	Workload     Workload         `env:"WORKLOAD" envDefault:"a" help:"YCSB workload: load, a..f, or proportions like read=0.5,update=0.5 (read, update, insert, scan, rmw)"`
	Distribution Distribution     `env:"DISTRIBUTION" envDefault:"auto" help:"request distribution: zipfian (theta 0.99, scrambled), uniform, latest, hotspot, or auto (the workload's own: latest for d, zipfian otherwise)"`
	Records      int64            `env:"RECORDS" envDefault:"100000" help:"records in the data set, all shards together; inserts add more"`
	Fields       int              `env:"FIELDS" envDefault:"10" help:"fields per record (field0..fieldN-1)"`
	FieldLength  int              `env:"FIELD_LENGTH" envDefault:"100" help:"bytes per field value"`
	DataType     sources.DataType `env:"DATA_TYPE" envDefault:"hash" help:"how the sink stores a record: string (fields packed in one value), hash, set, zset"`
	KeyPrefix    string           `env:"KEY_PREFIX" envDefault:"soakd:" help:"prepended to every key (keys are PREFIX + user + hashed record number); usertable/ gives go-ycsb's redis keys"`
	Load         LoadMode         `env:"LOAD" envDefault:"auto" help:"auto: insert the records first when a sample of them is missing; on: always insert them first; off: never"`
	ScanLength   int              `env:"SCAN_LENGTH" envDefault:"100" help:"longest scan, in records; each scan reads a uniform 1..SCAN_LENGTH"`
	ReadAll      bool             `env:"READ_ALL_FIELDS" envDefault:"true" help:"reads and scans fetch every field (false: one random field); a read-modify-write reads the whole record"`
	WriteAll     bool             `env:"WRITE_ALL_FIELDS" envDefault:"false" help:"updates and read-modify-writes write every field (false: one random field)"`
	HotspotData  float64          `env:"HOTSPOT_DATA" envDefault:"0.2" help:"hotspot distribution: fraction of the records that are hot"`
	HotspotOps   float64          `env:"HOTSPOT_OPS" envDefault:"0.8" help:"hotspot distribution: fraction of the operations that go to hot records"`
}

// Shape is the record shape these settings give the sink: the source's
// Shape, known before the source is built so that checking the
// configuration can show it to the sink (sources.Shaped).
func (c Config) Shape() sources.KVShape {
	dt, _ := sources.ParseDataType(string(c.DataType))
	return sources.KVShape{DataType: dt, KeyPrefix: c.KeyPrefix, Scans: c.Workload.Has(sources.OpScan)}
}

// KeySpace is where the records live and what they are, for the check
// that two workloads on one target do not write each other's keys: the
// key prefix, the records' shape, and whether the workload inserts new
// records beyond those it loads.
func (c Config) KeySpace() (prefix, records string, inserts bool) {
	return c.KeyPrefix, fmt.Sprintf("DATA_TYPE=%s FIELDS=%d FIELD_LENGTH=%d", c.Shape().DataType, c.Fields, c.FieldLength),
		c.Workload.Has(sources.OpInsert) && c.Workload.Name != "load"
}

// Limits that keep one record and one batch's arenas within the batch's
// uint32 offsets and field index int16.
const (
	maxFieldLength = 1 << 20
	maxRecordBytes = 64 << 20
	maxRecords     = 1 << 48
	maxScanLength  = 1 << 20
	maxPrefix      = 512
)

// DefaultConfig returns the settings' defaults, as the env tags say.
func DefaultConfig() Config {
	return Config{
		Workload:     presets["a"],
		Distribution: Auto,
		Records:      100000,
		Fields:       10,
		FieldLength:  100,
		DataType:     sources.DataTypeHash,
		KeyPrefix:    "soakd:",
		Load:         LoadAuto,
		ScanLength:   100,
		ReadAll:      true,
		HotspotData:  0.2,
		HotspotOps:   0.8,
	}
}

// Validate checks the settings without I/O and returns every problem as a
// *sources.SettingError, joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(setting, format string, args ...any) {
		errs = append(errs, sources.Invalid(setting, format, args...))
	}
	if !c.Workload.valid() {
		bad("WORKLOAD", "not set; want load, a..f or proportions like read=0.5,update=0.5")
	}
	switch c.Distribution {
	case Auto, Zipfian, Uniform, Latest, Hotspot:
	default:
		bad("DISTRIBUTION", "%q: want zipfian, uniform, latest, hotspot or auto", string(c.Distribution))
	}
	if c.Records < 1 || c.Records > maxRecords {
		bad("RECORDS", "%d: want 1..%d", c.Records, int64(maxRecords))
	}
	if c.Fields < 1 || c.Fields > sources.MaxFields {
		bad("FIELDS", "%d: want 1..%d", c.Fields, sources.MaxFields)
	}
	if c.FieldLength < 1 || c.FieldLength > maxFieldLength {
		bad("FIELD_LENGTH", "%d: want 1..%d bytes", c.FieldLength, maxFieldLength)
	}
	if c.Fields >= 1 && c.FieldLength >= 1 && c.Fields*c.FieldLength > maxRecordBytes {
		bad("FIELD_LENGTH", "FIELDS x FIELD_LENGTH = %d bytes per record: want at most %d", c.Fields*c.FieldLength, maxRecordBytes)
	}
	if dt, err := sources.ParseDataType(string(c.DataType)); err != nil {
		bad("DATA_TYPE", "%v", err)
	} else if (dt == sources.DataTypeSet || dt == sources.DataTypeZSet) && c.FieldLength >= 1 && c.FieldLength < minTagged {
		// A set holds each member once: values too short to carry their
		// field's tag can be equal, and a record would hold fewer than
		// FIELDS of them (VERIFY would blame the target).
		bad("FIELD_LENGTH", "%d with DATA_TYPE=%s: want at least %d bytes, so that a record's values are distinct members (each carries its field's tag)",
			c.FieldLength, dt, minTagged)
	}
	if len(c.KeyPrefix) > maxPrefix {
		bad("KEY_PREFIX", "%d bytes: want at most %d", len(c.KeyPrefix), maxPrefix)
	}
	if c.Load != LoadAuto && c.Load != LoadOff && c.Load != LoadOn {
		bad("LOAD", "%q: want auto, on or off", string(c.Load))
	}
	if c.ScanLength < 1 || c.ScanLength > maxScanLength {
		bad("SCAN_LENGTH", "%d: want 1..%d", c.ScanLength, maxScanLength)
	}
	if c.dist() == Hotspot {
		if !(c.HotspotData > 0 && c.HotspotData < 1) {
			bad("HOTSPOT_DATA", "%v: want a fraction strictly between 0 and 1", c.HotspotData)
		}
		if !(c.HotspotOps >= 0 && c.HotspotOps <= 1) {
			bad("HOTSPOT_OPS", "%v: want a fraction between 0 and 1", c.HotspotOps)
		}
	}
	return errors.Join(errs...)
}

// dist resolves Auto to the workload's own distribution.
func (c Config) dist() Distribution {
	if c.Distribution == Auto || c.Distribution == "" {
		if c.Workload.Name == "d" {
			return Latest
		}
		return Zipfian
	}
	return c.Distribution
}

// Workload is an operation mix: the proportion of each sources.Op, summing
// to 1. Name is the preset it came from (load, a..f) or "" for an explicit
// mix.
type Workload struct {
	Name string
	Mix  [sources.NumOps]float64
}

// presets are the YCSB core workloads (workloads/workload[a-f] of YCSB).
var presets = map[string]Workload{
	"load": {Name: "load", Mix: mix(0, 0, 1, 0, 0)},
	"a":    {Name: "a", Mix: mix(0.5, 0.5, 0, 0, 0)},   // update heavy
	"b":    {Name: "b", Mix: mix(0.95, 0.05, 0, 0, 0)}, // read mostly
	"c":    {Name: "c", Mix: mix(1, 0, 0, 0, 0)},       // read only
	"d":    {Name: "d", Mix: mix(0.95, 0, 0.05, 0, 0)}, // read latest
	"e":    {Name: "e", Mix: mix(0, 0, 0.05, 0.95, 0)}, // short ranges
	"f":    {Name: "f", Mix: mix(0.5, 0, 0, 0, 0.5)},   // read-modify-write
}

func mix(read, update, insert, scan, rmw float64) [sources.NumOps]float64 {
	return [sources.NumOps]float64{read, update, insert, scan, rmw}
}

// ParseWorkload parses a preset name (load, a..f, case-insensitive) or
// explicit proportions "read=0.5,update=0.5" with names read, update,
// insert, scan and rmw (alias readmodifywrite). Omitted operations have
// proportion 0; the proportions must sum to 1.
func ParseWorkload(s string) (Workload, error) {
	s = strings.TrimSpace(s)
	if w, ok := presets[strings.ToLower(s)]; ok {
		return w, nil
	}
	if !strings.Contains(s, "=") {
		return Workload{}, fmt.Errorf("workload %q: want load, a, b, c, d, e, f or proportions like read=0.5,update=0.5", s)
	}
	var w Workload
	var seen [sources.NumOps]bool
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Workload{}, fmt.Errorf("workload %q: %q is not NAME=PROPORTION", s, part)
		}
		op, ok := opByName(strings.ToLower(strings.TrimSpace(name)))
		if !ok {
			return Workload{}, fmt.Errorf("workload %q: unknown operation %q (want read, update, insert, scan, rmw)", s, name)
		}
		if seen[op] {
			return Workload{}, fmt.Errorf("workload %q: %s given twice", s, op)
		}
		seen[op] = true
		p, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return Workload{}, fmt.Errorf("workload %q: %s=%q: want a proportion between 0 and 1", s, op, val)
		}
		w.Mix[op] = p
	}
	sum := 0.0
	for _, p := range w.Mix {
		sum += p
	}
	if math.Abs(sum-1) > 1e-6 {
		return Workload{}, fmt.Errorf("workload %q: proportions sum to %g, want 1", s, sum)
	}
	return w, nil
}

func opByName(name string) (sources.Op, bool) {
	if name == "readmodifywrite" {
		return sources.OpRMW, true
	}
	for op := sources.Op(0); op < sources.NumOps; op++ {
		if op.String() == name {
			return op, true
		}
	}
	return 0, false
}

// UnmarshalText implements encoding.TextUnmarshaler (see ParseWorkload).
func (w *Workload) UnmarshalText(b []byte) error {
	v, err := ParseWorkload(string(b))
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// MarshalText implements encoding.TextMarshaler: the preset name, or the
// proportions in ParseWorkload's form.
func (w Workload) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// String returns the preset name or the non-zero proportions.
func (w Workload) String() string {
	if w.Name != "" {
		return w.Name
	}
	var b []byte
	for op := sources.Op(0); op < sources.NumOps; op++ {
		if w.Mix[op] == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, op.String()...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, w.Mix[op], 'g', -1, 64)
	}
	return string(b)
}

// Has reports whether the workload performs op.
func (w Workload) Has(op sources.Op) bool { return w.Mix[op] > 0 }

func (w Workload) valid() bool {
	sum := 0.0
	for _, p := range w.Mix {
		if !(p >= 0) {
			return false
		}
		sum += p
	}
	return math.Abs(sum-1) <= 1e-6
}

// Distribution is how operations choose their record.
type Distribution string

// Distributions.
const (
	// Auto picks the workload's own: Latest for d, Zipfian otherwise.
	Auto Distribution = "auto"
	// Zipfian: scrambled zipfian with theta 0.99 over the records present
	// (popular records are spread over the key space).
	Zipfian Distribution = "zipfian"
	// Uniform: every present record equally likely.
	Uniform Distribution = "uniform"
	// Latest: zipfian over the insertion order, most recent first.
	Latest Distribution = "latest"
	// Hotspot: HotspotOps of the operations go to the first HotspotData of
	// the records.
	Hotspot Distribution = "hotspot"
)

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Distribution) UnmarshalText(b []byte) error {
	v := Distribution(strings.ToLower(strings.TrimSpace(string(b))))
	switch v {
	case Auto, Zipfian, Uniform, Latest, Hotspot:
		*d = v
		return nil
	case "":
		*d = Auto
		return nil
	}
	return fmt.Errorf("distribution %q: want zipfian, uniform, latest, hotspot or auto", string(b))
}

// LoadMode says whether the records are loaded before the run.
type LoadMode string

// Load modes.
const (
	// LoadAuto probes a sample of the records and loads them all when any
	// is missing.
	LoadAuto LoadMode = "auto"
	// LoadOff never loads.
	LoadOff LoadMode = "off"
	// LoadOn always loads every record (YCSB's load before its run),
	// after the same probe, which then only checks the records' type.
	LoadOn LoadMode = "on"
)

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *LoadMode) UnmarshalText(b []byte) error {
	v := LoadMode(strings.ToLower(strings.TrimSpace(string(b))))
	switch v {
	case LoadAuto, LoadOff, LoadOn:
		*m = v
		return nil
	case "false", "no", "0":
		*m = LoadOff
		return nil
	case "true", "yes", "1":
		*m = LoadOn
		return nil
	}
	return fmt.Errorf("load %q: want auto, on or off", string(b))
}
