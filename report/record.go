package report

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// The record of what a phase wrote, for soakd verify: per stream, where
// each run of batches with the same outcome ended (sources.Position). An
// uninterrupted run is one segment per stream; each outage adds two.
// Acknowledged units are those in acked segments; units of failed batches
// may or may not have been stored (in doubt), and so may those of a
// partial write, since the target does not say which it kept. Units after
// a stream's last segment were never written. The engine keeps it
// bounded: past its limit it merges the two oldest segments of a stream,
// in doubt unless both were acknowledged.

// Segment statuses.
const (
	SegmentAcked   = "acked"
	SegmentFailed  = "failed"
	SegmentPartial = "partial"
)

// Segment is a run of a stream's units: those after the previous
// segment's To (or the stream's Start), up to To.
type Segment struct {
	To sources.Position `json:"to"`
	// Status is acked, failed (the writes failed: each unit may or may
	// not be stored) or partial (the target kept some units of a batch
	// and did not say which).
	Status string `json:"status"`
}

// StreamRecord is what one stream of a phase wrote.
type StreamRecord struct {
	Part     int              `json:"part"`
	Start    sources.Position `json:"start"`
	Segments []Segment        `json:"segments"`
	// Merged counts segments merged into their neighbour to stay within
	// the engine's bound: their units count as in doubt.
	Merged int64 `json:"merged,omitempty"`
}

// SettingsRecord lists the settings that shape w's data set as the
// variables' values without the SOAKD_<W>_ prefix, with the values the
// source resolved at start (START=now), so that soakd verify rebuilds
// the same data set from the summary. Secrets are never in it.
func SettingsRecord(w *config.Workload, src sources.Source) map[string]string {
	out := map[string]string{}
	p := config.Prefix(w.Name)
	add := func(v any, only ...string) {
		rv := reflect.ValueOf(v).Elem()
		for _, s := range settings.Of(v, p) {
			name := strings.TrimPrefix(s.Key, p)
			if s.Secret || s.URL || (len(only) > 0 && !slices.Contains(only, name)) {
				continue
			}
			f := rv.FieldByName(s.Field)
			if !f.IsValid() {
				continue
			}
			out[name] = settingText(f)
		}
	}
	add(w, "SOURCE", "SEED", "SHARD", "WORKERS")
	if w.SourceSettings != nil {
		add(w.SourceSettings.Fields())
	}
	if r, ok := src.(sources.Resolved); ok {
		for k, v := range r.Resolved() {
			out[k] = v
		}
	}
	return out
}

// settingText formats a setting's value as its variable would give it.
func settingText(v reflect.Value) string {
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = settingText(v.Index(i))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.Interface())
}

// VerifySummary is a phase's verification: VERIFY's read-back checks, and
// the record of what the phase wrote that soakd verify reads.
type VerifySummary struct {
	// Fraction is VERIFY (0: no read-back during the run); the counts are
	// its checks of acknowledged units.
	Fraction  float64 `json:"fraction"`
	Checked   int64   `json:"checked"`
	Missing   int64   `json:"missing"`
	Mismatch  int64   `json:"mismatch"`
	Duplicate int64   `json:"duplicate"`
	Skipped   int64   `json:"skipped"`
	// Settings shape the data set (names without SOAKD_<W>_), START=now
	// resolved: soakd verify rebuilds the source from them.
	Settings map[string]string `json:"settings"`
	// Streams are what each of the phase's streams wrote.
	Streams []StreamRecord `json:"streams"`
	// InDoubtRecords are the KV records whose insert failed (up to
	// 100,000; InDoubtOverflow says there were more).
	InDoubtRecords  []uint64 `json:"in_doubt_records,omitempty"`
	InDoubtOverflow bool     `json:"in_doubt_overflow,omitempty"`
	// Records is the KV shard's records before any insert of the run
	// (those a load phase inserts), KeySpace the record indexes in use at
	// the phase's end (records plus the run's inserts).
	Records  uint64 `json:"records,omitempty"`
	KeySpace uint64 `json:"key_space,omitempty"`
}
