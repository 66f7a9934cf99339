package sinktest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Read-back suites: what a SeriesReader or a KVReader reads back is what
// was written, for verification (SOAKD_<W>_VERIFY, soakd verify) to
// trust.

// ReadSeries checks a sinks.SeriesReader on a fresh target: s must be
// Readable; the suite prepares it, writes batches one after the other
// (the same batch twice stores its rows twice), reads qs back in one call
// and checks that each read holds exactly the rows written for its device
// and time range, times truncated to s.Resolution(), with their nulls,
// each as often as it was written, in time order. It returns the tables
// read, for the sink's own checks.
func ReadSeries(t *testing.T, s sinks.Sink, batches []*sources.Batch, qs []sinks.SeriesQuery) []*sources.Table {
	t.Helper()
	r, ok := s.(sinks.SeriesReader)
	if !ok {
		t.Fatalf("%T is not a sinks.SeriesReader", s)
	}
	if err := r.Readable(); err != nil {
		t.Fatal(err)
	}
	prepare(t, s)
	for _, b := range batches {
		write(t, s, b)
	}
	out := make([]*sources.Table, len(qs))
	for i, q := range qs {
		out[i] = sources.NewTable(q.Schema)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.ReadSeries(ctx, qs, out); err != nil {
		checkClass(t, "ReadSeries", err)
		t.Fatal(err)
	}
	res := r.Resolution()
	for i, q := range qs {
		var want []string
		for _, b := range batches {
			for _, tb := range b.Tables {
				if tb.Schema == q.Schema {
					want = append(want, TableRows(tb, q.Device, q.From, q.To, res)...)
				}
			}
		}
		slices.Sort(want)
		got := TableRows(out[i], q.Device, -1<<63, 1<<63-1, time.Nanosecond)
		if out[i].Len() != len(got) {
			t.Fatalf("query %d: %d rows, %d of device %d", i, out[i].Len(), len(got), q.Device)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %d (%s device %d): %d rows read, %d written; first read %q, first written %q",
				i, q.Schema.Measurement, q.Device, len(got), len(want), firstOf(got), firstOf(want))
		}
		if !slices.IsSorted(out[i].Time) {
			t.Errorf("query %d: rows not in time order", i)
		}
	}
	return out
}

// TableRows renders device d's rows of t whose times, truncated to res,
// are in [from, to]: each as its time and values (null for a null), as
// often as it appears, sorted.
func TableRows(t *sources.Table, d uint32, from, to int64, res time.Duration) []string {
	var out []string
	for i := range t.Len() {
		ts := t.Time[i] / int64(res) * int64(res)
		if t.Device[i] != d || ts < from || ts > to {
			continue
		}
		s := fmt.Sprint(ts)
		for f, fd := range t.Schema.Fields {
			switch {
			case t.Null[f] != nil && t.Null[f][i]:
				s += " null"
			case fd.Kind == sources.Int:
				s += fmt.Sprint(" ", t.Ints[f][i])
			default:
				s += fmt.Sprint(" ", t.Floats[f][i])
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Checker is what ReadRecords checks a record read back against: a KV
// source's Check with the version and expectations fixed (kv.Source's,
// for any version).
type Checker func(rec uint64, stored *sources.StoredRecord) sources.Verdict

// ReadRecords checks a sinks.KVReader: it reads the records under keys
// back in one call, with shape, and checks each with check: records[i]
// is the record number of keys[i], want[i] the verdict it must get
// (sources.Intact for every record when want is nil).
func ReadRecords(t *testing.T, s sinks.Sink, keys []string, records []uint64, shape sinks.RecordShape, check Checker, want []sources.Verdict) {
	t.Helper()
	r, ok := s.(sinks.KVReader)
	if !ok {
		t.Fatalf("%T is not a sinks.KVReader", s)
	}
	out := make([]sources.StoredRecord, len(keys))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.ReadRecords(ctx, keys, shape, out); err != nil {
		checkClass(t, "ReadRecords", err)
		t.Fatal(err)
	}
	for i := range keys {
		w := sources.Intact
		if want != nil {
			w = want[i]
		}
		if v := check(records[i], &out[i]); v != w {
			if want == nil {
				t.Fatalf("record %d (%s): %s, want %s (%+v)", records[i], keys[i], v, w, out[i])
			}
			t.Errorf("record %d (%s): %s, want %s (%+v)", records[i], keys[i], v, w, out[i])
		}
	}
}
