package verify

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/soakd/soakd/sources"
)

// Report is what soakd verify found, per workload (--verify-json).
type Report struct {
	Workloads []WorkloadReport `json:"workloads"`
}

// WorkloadReport is one workload's verification. Of the units the run
// wrote, Acknowledged were acknowledged by the target: each is Stored, or
// Lost. InDoubt were in writes that failed (or were partly applied): they
// may or may not be stored (InDoubtStored are). Duplicated counts extra
// copies of stored units, Mismatched stored units whose values differ
// from what the run wrote; Unexpected counts stored units the run did not
// write (another run's, or rows outside the data set).
type WorkloadReport struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Target  string `json:"target"`
	Kind    string `json:"kind"`
	Summary string `json:"summary,omitempty"` // the run summary read, if any
	Units   string `json:"units"`             // rows or records
	// Notes say what was assumed and how values were checked.
	Notes []string `json:"notes,omitempty"`

	Acknowledged  int64 `json:"acknowledged"`
	Stored        int64 `json:"stored"`
	Lost          int64 `json:"lost"`
	Duplicated    int64 `json:"duplicated"`
	Mismatched    int64 `json:"mismatched"`
	InDoubt       int64 `json:"in_doubt"`
	InDoubtStored int64 `json:"in_doubt_stored"`
	Unexpected    int64 `json:"unexpected"`

	// Series: every device's counts and time ranges, and the exact ranges
	// of lost and duplicated rows.
	// Past maxDeviceReports device-tables (CHURN brings a new device
	// each replacement), Devices lists only those that do not hold each
	// acknowledged row once; DeviceTables and DevicesIntact count all.
	Devices         []DeviceReport `json:"devices,omitempty"`
	DeviceTables    int64          `json:"device_tables,omitempty"`
	DevicesIntact   int64          `json:"device_tables_intact,omitempty"`
	DevicesTrimmed  bool           `json:"devices_only_damaged,omitempty"`
	LostRanges      []Range        `json:"lost_ranges,omitempty"`
	DuplicateRanges []Range        `json:"duplicate_ranges,omitempty"`
	// KV: how fields were checked, and the lost records' index ranges.
	FieldsExact   int64         `json:"fields_exact,omitempty"`
	FieldsShape   int64         `json:"fields_shape,omitempty"`
	LostRecords   []RecordRange `json:"lost_records,omitempty"`
	InDoubtAbsent []RecordRange `json:"in_doubt_absent_records,omitempty"`

	// Mismatches are the first examples (up to 1000; the text shows
	// --verify-examples of them).
	Mismatches []string `json:"mismatches,omitempty"`
}

// DeviceReport is one device's rows in one table: how many the target
// acknowledged and over what time, how many it holds and over what time.
type DeviceReport struct {
	Table        string     `json:"table"`
	Device       string     `json:"device"`
	Acknowledged int64      `json:"acknowledged"`
	AckFirst     *time.Time `json:"acknowledged_first,omitempty"`
	AckLast      *time.Time `json:"acknowledged_last,omitempty"`
	Stored       int64      `json:"stored"`
	StoredFirst  *time.Time `json:"stored_first,omitempty"`
	StoredLast   *time.Time `json:"stored_last,omitempty"`
	Duplicated   int64      `json:"duplicated,omitempty"`
}

// maxDeviceReports bounds the device-tables a report lists in full: a
// day of CHURN can bring millions of devices, each one a DeviceReport.
const maxDeviceReports = 100_000

// intact reports that d holds each acknowledged row once.
func (d *DeviceReport) intact() bool { return d.Stored == d.Acknowledged && d.Duplicated == 0 }

// addDevice counts d and lists it: every device up to maxDeviceReports,
// and past that only the damaged ones (the intact ones listed so far are
// dropped then, so the list says the same thing throughout).
func (r *WorkloadReport) addDevice(d DeviceReport) {
	r.DeviceTables++
	if d.intact() {
		r.DevicesIntact++
	}
	if !r.DevicesTrimmed && len(r.Devices) >= maxDeviceReports {
		r.DevicesTrimmed = true
		r.Devices = slices.DeleteFunc(r.Devices, func(d DeviceReport) bool { return d.intact() })
	}
	if !r.DevicesTrimmed || !d.intact() {
		r.Devices = append(r.Devices, d)
	}
}

func stamp(ts int64) *time.Time {
	t := time.Unix(0, ts).UTC()
	return &t
}

func (d *DeviceReport) ackRange(ts int64) {
	if d.AckFirst == nil || ts < d.AckFirst.UnixNano() {
		d.AckFirst = stamp(ts)
	}
	if d.AckLast == nil || ts > d.AckLast.UnixNano() {
		d.AckLast = stamp(ts)
	}
}

func (d *DeviceReport) storedRange(ts int64) {
	if d.StoredFirst == nil || ts < d.StoredFirst.UnixNano() {
		d.StoredFirst = stamp(ts)
	}
	if d.StoredLast == nil || ts > d.StoredLast.UnixNano() {
		d.StoredLast = stamp(ts)
	}
}

// Range is consecutive rows of one device (in its acknowledged rows'
// time order) from From to To, inclusive.
type Range struct {
	Table  string    `json:"table"`
	Device string    `json:"device"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Rows   int64     `json:"rows"`
}

// RecordRange is records of consecutive indexes of the shard, From to To
// inclusive, with the first one's key.
type RecordRange struct {
	From  uint64 `json:"from"`
	To    uint64 `json:"to"`
	Count int64  `json:"count"`
	Key   string `json:"first_key"`
}

const maxExamples = 1000

func (rep *WorkloadReport) example(s string) {
	if len(rep.Mismatches) < maxExamples {
		rep.Mismatches = append(rep.Mismatches, s)
	}
}

// mismatch notes row i of want stored as row j of got.
func (rep *WorkloadReport) mismatch(table, device string, want *sources.Table, i int, got *sources.Table, j int) {
	if len(rep.Mismatches) >= maxExamples {
		return
	}
	f := want.DiffField(i, got, j)
	name := want.Schema.Fields[f].Name
	rep.example(fmt.Sprintf("%s %s %s %s: stored %s, written %s", table, device,
		time.Unix(0, want.Time[i]).UTC().Format(time.RFC3339Nano), name, fieldText(got, j, f), fieldText(want, i, f)))
}

// write prints the report for people, ending with the line to paste.
func (rep *WorkloadReport) write(out io.Writer, o options) {
	src := "run summary " + rep.Summary
	if rep.Summary == "" {
		src = "no run summary"
	}
	fmt.Fprintf(out, "\n== verify workload %s: source %s -> %s (%s)\n", rep.Name, rep.Source, rep.Target, src)
	for _, n := range rep.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	if rep.DeviceTables > 0 {
		fmt.Fprintf(out, "devices: %d device-tables; %d hold each acknowledged row once\n", rep.DeviceTables, rep.DevicesIntact)
		if rep.DevicesTrimmed {
			fmt.Fprintf(out, "devices: more than %d device-tables, so --verify-json lists only the %d that do not\n", maxDeviceReports, len(rep.Devices))
		}
	}
	if rep.Kind == sources.KV.String() {
		fmt.Fprintf(out, "fields checked: %d exactly (the last write is known), %d as values soakd writes for the record and field (the last write cannot be known)\n",
			rep.FieldsExact, rep.FieldsShape)
	}
	ranges := func(what string, rs []Range) {
		for i, r := range rs {
			if i == o.Ranges {
				fmt.Fprintf(out, "%s: ... %d more ranges (--verify-json has them all)\n", what, len(rs)-i)
				break
			}
			fmt.Fprintf(out, "%s: %s %s %s .. %s (%d rows)\n", what, r.Table, r.Device,
				r.From.Format(time.RFC3339Nano), r.To.Format(time.RFC3339Nano), r.Rows)
		}
	}
	ranges("lost", rep.LostRanges)
	ranges("duplicated", rep.DuplicateRanges)
	records := func(what string, rs []RecordRange) {
		for i, r := range rs {
			if i == o.Ranges {
				fmt.Fprintf(out, "%s: ... %d more ranges (--verify-json has them all)\n", what, len(rs)-i)
				break
			}
			fmt.Fprintf(out, "%s: records %d..%d (%d, first key %s)\n", what, r.From, r.To, r.Count, r.Key)
		}
	}
	records("lost", rep.LostRecords)
	records("in doubt, absent", rep.InDoubtAbsent)
	for i, m := range rep.Mismatches {
		if i == o.Examples {
			fmt.Fprintf(out, "mismatched: ... and more (%d in all)\n", rep.Mismatched)
			break
		}
		fmt.Fprintf(out, "mismatched: %s\n", m)
	}
	verdict := "OK: every acknowledged " + strings.TrimSuffix(rep.Units, "s") + " is stored once, intact"
	if rep.Lost+rep.Duplicated+rep.Mismatched > 0 {
		verdict = "FAILED: acknowledged data was lost or corrupted"
	}
	fmt.Fprintf(out, "%s %s: acknowledged %d, stored %d, lost %d, duplicated %d, mismatched %d, in doubt %d (%d of them stored), unexpected %d\n%s\n",
		rep.Name, rep.Units, rep.Acknowledged, rep.Stored, rep.Lost, rep.Duplicated, rep.Mismatched, rep.InDoubt, rep.InDoubtStored, rep.Unexpected, verdict)
}
