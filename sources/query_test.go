package sources

import (
	"math"
	"testing"
	"time"
)

func TestQueryTypeNames(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for qt := range NumQueryTypes {
		name := qt.String()
		if name == "" || name == "unknown" || seen[name] {
			t.Errorf("query type %d has name %q (duplicate or missing)", qt, name)
		}
		seen[name] = true
		if got, ok := ParseQueryType(name); !ok || got != qt {
			t.Errorf("ParseQueryType(%q) = %v, %v", name, got, ok)
		}
		if u := qt.Info().UseCase; u != UseDevops && u != UseIoT {
			t.Errorf("%s: use case %q", name, u)
		}
		if n := qt.Info().Devices; n > MaxQueryDevices {
			t.Errorf("%s: %d devices, more than MaxQueryDevices", name, n)
		}
	}
	if _, ok := ParseQueryType("cpu-max-all-32-24"); ok {
		t.Error("cpu-max-all-32-24 is not a soakd query type")
	}
	if got := NumQueryTypes.String(); got != "unknown" {
		t.Errorf("NumQueryTypes.String() = %q", got)
	}
	if d, i := len(QueryTypes(UseDevops)), len(QueryTypes(UseIoT)); d != 15 || i != 9 {
		t.Errorf("%d devops and %d iot query types, want TSBS's 15 and 9", d, i)
	}
}

func TestQueryWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	day := DataRange{Oldest: t0, Newest: t0 + int64(24*time.Hour) - int64(10*time.Second), Known: true}
	end := t0 + int64(24*time.Hour) - int64(10*time.Second) + int64(time.Microsecond)
	for _, tc := range []struct {
		name       string
		q          Query
		r          DataRange
		start, end int64
	}{
		{"no data", Query{Type: SingleGroupby111}, DataRange{}, 0, 0},
		{"random at 0", Query{Type: SingleGroupby111}, day, t0, t0 + int64(time.Hour)},
		{"random at 0.5", Query{Type: DoubleGroupby1, Pos: 0.5}, day,
			floorMicro(t0 + (end-t0-int64(12*time.Hour))/2), floorMicro(t0+(end-t0-int64(12*time.Hour))/2) + int64(12*time.Hour)},
		{"latest", Query{Type: CPUMaxAll1, Latest: true}, day, end - int64(8*time.Hour), end},
		{"whole data set when shorter than the window", Query{Type: DoubleGroupby1, Pos: 0.9},
			DataRange{Oldest: t0, Newest: t0 + int64(time.Hour), Known: true}, t0, t0 + int64(time.Hour) + 1000},
		{"no window: all the data", Query{Type: Lastpoint}, day, t0, end},
		{"bad position is 0", Query{Type: SingleGroupby111, Pos: math.NaN()}, day, t0, t0 + int64(time.Hour)},
		{"nanoseconds are cut to microseconds", Query{Type: Lastpoint},
			DataRange{Oldest: t0 + 1999, Newest: t0 + 5999, Known: true}, t0 + 1000, t0 + 6000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, e := tc.q.Window(tc.r)
			if s != tc.start || e != tc.end {
				t.Errorf("Window = [%d, %d), want [%d, %d)", s-t0, e-t0, tc.start-t0, tc.end-t0)
			}
			if s%1000 != 0 || e%1000 != 0 {
				t.Errorf("window [%d, %d) not in whole microseconds", s, e)
			}
		})
	}
}

func TestQueryMustFind(t *testing.T) {
	t.Parallel()
	hour := DataRange{Oldest: 0, Newest: int64(time.Hour), Known: true}
	for _, tc := range []struct {
		name string
		q    Query
		r    DataRange
		want bool
	}{
		{"no data yet", Query{Type: Lastpoint, Expect: true}, DataRange{}, false},
		{"lastpoint with data", Query{Type: Lastpoint, Expect: true}, hour, true},
		{"a whole window", Query{Type: SingleGroupby111, Expect: true}, hour, true},
		{"less than a window", Query{Type: SingleGroupby1112, Expect: true}, hour, false},
		{"not expected", Query{Type: HighCPUAll}, hour, false},
	} {
		if got := tc.q.MustFind(tc.r); got != tc.want {
			t.Errorf("%s: MustFind = %v, want %v", tc.name, got, tc.want)
		}
	}
}
