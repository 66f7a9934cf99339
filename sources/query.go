package sources

import (
	"math"
	"math/bits"
	"time"
)

// QueryType is one of TSBS's query types (tsbs_generate_queries'
// --query-type), the op label of a query workload's metrics.
type QueryType uint8

// The devops (cpu-only) query types, then the iot (trucks) ones, in the
// order of TSBS's use-case matrix.
const (
	SingleGroupby111 QueryType = iota
	SingleGroupby1112
	SingleGroupby181
	SingleGroupby511
	SingleGroupby5112
	SingleGroupby581
	CPUMaxAll1
	CPUMaxAll8
	DoubleGroupby1
	DoubleGroupby5
	DoubleGroupbyAll
	GroupbyOrderbyLimit
	HighCPU1
	HighCPUAll
	Lastpoint
	LastLoc
	LowFuel
	HighLoad
	StationaryTrucks
	LongDrivingSessions
	AvgVsProjectedFuelConsumption
	AvgDailyDrivingDuration
	DailyActivity
	BreakdownFrequency
	// NumQueryTypes is the number of query types.
	NumQueryTypes
)

// Use cases of query types: the data set a query reads.
const (
	UseDevops = "devops" // TSBS cpu-only: the cpu table of the devops source
	UseIoT    = "iot"    // TSBS trucks: the readings and diagnostics tables of the iot source
)

// QueryInfo says what a query type asks, as TSBS defines it
// (cmd/tsbs_generate_queries/uses/{devops,iot}).
type QueryInfo struct {
	Name    string
	UseCase string
	// Metrics is the number of cpu fields a devops query aggregates: the
	// first Metrics fields of the cpu table (usage_user, usage_system, ...).
	Metrics int
	// Devices is the number of devices (hosts) picked at random for the
	// query; 0 = every device.
	Devices int
	// Window is the length of the time range queried, placed in the data
	// written so far (see Query.Window); 0 = all of it.
	Window time.Duration
	// Bucket is the width of the time buckets results are grouped by (0 =
	// none): 1m, 1h, or for iot queries 10m buckets inside days.
	Bucket time.Duration
	// Fleet: an iot query restricted to one fleet, picked at random.
	Fleet bool
	// MustFind: the query returns rows whenever the data holds a whole
	// window (see Query.MustFind); a query of another type may
	// legitimately find nothing (no cpu above 90 %, no truck low on fuel).
	MustFind bool
}

var queryInfo = [NumQueryTypes]QueryInfo{
	SingleGroupby111:              {Name: "single-groupby-1-1-1", UseCase: UseDevops, Metrics: 1, Devices: 1, Window: time.Hour, Bucket: time.Minute, MustFind: true},
	SingleGroupby1112:             {Name: "single-groupby-1-1-12", UseCase: UseDevops, Metrics: 1, Devices: 1, Window: 12 * time.Hour, Bucket: time.Minute, MustFind: true},
	SingleGroupby181:              {Name: "single-groupby-1-8-1", UseCase: UseDevops, Metrics: 1, Devices: 8, Window: time.Hour, Bucket: time.Minute, MustFind: true},
	SingleGroupby511:              {Name: "single-groupby-5-1-1", UseCase: UseDevops, Metrics: 5, Devices: 1, Window: time.Hour, Bucket: time.Minute, MustFind: true},
	SingleGroupby5112:             {Name: "single-groupby-5-1-12", UseCase: UseDevops, Metrics: 5, Devices: 1, Window: 12 * time.Hour, Bucket: time.Minute, MustFind: true},
	SingleGroupby581:              {Name: "single-groupby-5-8-1", UseCase: UseDevops, Metrics: 5, Devices: 8, Window: time.Hour, Bucket: time.Minute, MustFind: true},
	CPUMaxAll1:                    {Name: "cpu-max-all-1", UseCase: UseDevops, Metrics: 10, Devices: 1, Window: 8 * time.Hour, Bucket: time.Hour, MustFind: true},
	CPUMaxAll8:                    {Name: "cpu-max-all-8", UseCase: UseDevops, Metrics: 10, Devices: 8, Window: 8 * time.Hour, Bucket: time.Hour, MustFind: true},
	DoubleGroupby1:                {Name: "double-groupby-1", UseCase: UseDevops, Metrics: 1, Window: 12 * time.Hour, Bucket: time.Hour, MustFind: true},
	DoubleGroupby5:                {Name: "double-groupby-5", UseCase: UseDevops, Metrics: 5, Window: 12 * time.Hour, Bucket: time.Hour, MustFind: true},
	DoubleGroupbyAll:              {Name: "double-groupby-all", UseCase: UseDevops, Metrics: 10, Window: 12 * time.Hour, Bucket: time.Hour, MustFind: true},
	GroupbyOrderbyLimit:           {Name: "groupby-orderby-limit", UseCase: UseDevops, Metrics: 1, Window: time.Hour, Bucket: time.Minute, MustFind: true},
	HighCPU1:                      {Name: "high-cpu-1", UseCase: UseDevops, Metrics: 1, Devices: 1, Window: 12 * time.Hour},
	HighCPUAll:                    {Name: "high-cpu-all", UseCase: UseDevops, Metrics: 1, Window: 12 * time.Hour},
	Lastpoint:                     {Name: "lastpoint", UseCase: UseDevops, MustFind: true},
	LastLoc:                       {Name: "last-loc", UseCase: UseIoT, Fleet: true, MustFind: true},
	LowFuel:                       {Name: "low-fuel", UseCase: UseIoT, Fleet: true},
	HighLoad:                      {Name: "high-load", UseCase: UseIoT, Fleet: true},
	StationaryTrucks:              {Name: "stationary-trucks", UseCase: UseIoT, Window: 10 * time.Minute, Fleet: true},
	LongDrivingSessions:           {Name: "long-driving-sessions", UseCase: UseIoT, Window: 4 * time.Hour, Bucket: 10 * time.Minute, Fleet: true},
	AvgVsProjectedFuelConsumption: {Name: "avg-vs-projected-fuel-consumption", UseCase: UseIoT},
	AvgDailyDrivingDuration:       {Name: "avg-daily-driving-duration", UseCase: UseIoT, Bucket: 10 * time.Minute},
	DailyActivity:                 {Name: "daily-activity", UseCase: UseIoT, Bucket: 10 * time.Minute},
	BreakdownFrequency:            {Name: "breakdown-frequency", UseCase: UseIoT, Bucket: 10 * time.Minute},
}

// Info describes the query type; the zero QueryInfo for an unknown one.
func (t QueryType) Info() QueryInfo {
	if t < NumQueryTypes {
		return queryInfo[t]
	}
	return QueryInfo{}
}

// String returns TSBS's name of the query type (its op label).
func (t QueryType) String() string {
	if t < NumQueryTypes {
		return queryInfo[t].Name
	}
	return "unknown"
}

// ParseQueryType returns the query type named name (TSBS's name).
func ParseQueryType(name string) (QueryType, bool) {
	for t := range NumQueryTypes {
		if queryInfo[t].Name == name {
			return t, true
		}
	}
	return 0, false
}

// QueryTypes lists the query types of a use case (UseDevops, UseIoT), in
// order.
func QueryTypes(useCase string) []QueryType {
	var out []QueryType
	for t := range NumQueryTypes {
		if queryInfo[t].UseCase == useCase {
			out = append(out, t)
		}
	}
	return out
}

// MaxQueryDevices is the most devices one query names (TSBS's
// single-groupby-*-8-* and cpu-max-all-8).
const MaxQueryDevices = 8

// Query is one query of a query workload: its type and the random
// choices TSBS makes for it (devices, fleet, where its window lies). A
// query source fills these; the sink renders the query in its language
// against the data it holds and sets Rows.
type Query struct {
	Type QueryType
	// Devices are the device numbers picked (Devices[:NDevices]); the sink
	// names them with the schema's Tagger, as the data set does.
	Devices  [MaxQueryDevices]uint32
	NDevices uint8
	// Fleet is the fleet an iot query is restricted to.
	Fleet string
	// LoadCapacities lists every load_capacity tag value of the trucks
	// (high-load: a target that cannot divide by a tag compares each
	// capacity's threshold instead). Shared, read-only.
	LoadCapacities []string
	// Pos places a random window in the data: its start is Pos of the way
	// from the oldest data to the newest minus the window (TSBS's
	// RandWindow). In [0, 1).
	Pos float64
	// Latest places the window at the end of the data instead: the last
	// hour, the last 12 hours (WINDOW=latest).
	Latest bool
	// Expect says that rows must be found once the data holds a whole
	// window (the type's MustFind, refined by the source: a fleet with no
	// truck finds nothing).
	Expect bool
	// Churn is the CHURN of the data set (shared, read-only; nil without
	// churn): Devices are then slots, and the sink names the devices
	// holding them in the query's window (Resolved).
	Churn *QueryChurn

	// Rows is set by the sink: the rows the query returned.
	Rows int64
}

// DataRange is the time range of the data a target holds, as a query
// sink last saw it: the oldest and newest timestamps (Unix ns).
type DataRange struct {
	Oldest, Newest int64
	// Known is false until the target holds data.
	Known bool
}

// Span is the time the data covers: from its oldest timestamp to just
// after its newest (one microsecond, PostgreSQL's precision).
func (r DataRange) Span() time.Duration {
	if !r.Known {
		return 0
	}
	return time.Duration(r.end() - r.Oldest)
}

// end is the exclusive end of the data: the newest timestamp rounded
// down to the microsecond, plus one microsecond.
func (r DataRange) end() int64 { return floorMicro(r.Newest) + int64(time.Microsecond) }

func floorMicro(ns int64) int64 {
	us := ns / 1000
	if ns%1000 < 0 {
		us--
	}
	return us * 1000
}

// Window returns the time range [start, end) the query reads (Unix ns,
// whole microseconds, so every target reads the same rows): its type's
// Window placed in r at Pos (or at the end, Latest), or all of r when r
// is shorter than the window or the type has none. With no data yet it
// is empty.
func (q *Query) Window(r DataRange) (start, end int64) {
	if !r.Known {
		return 0, 0
	}
	lo, hi := floorMicro(r.Oldest), r.end()
	w := int64(q.Type.Info().Window)
	if w <= 0 || hi-lo <= w {
		return lo, hi
	}
	if q.Latest {
		return hi - w, hi
	}
	pos := q.Pos
	if !(pos >= 0 && pos < 1) { // also NaN
		pos = 0
	}
	start = floorMicro(lo + int64(pos*float64(hi-lo-w)))
	return start, start + w
}

// Resolved is q as a sink renders it over data r. Without Churn, or
// before the target holds data, it is q. With Churn each of Devices (a
// slot) becomes the device that holds it at the middle of q's window
// (Window over r), churn intervals counted from r's oldest data (the
// data set's START under the simulated clock; under the wall clock the
// data set counts from its start rounded down to the churn interval, so
// this names the holder up to one interval before the middle): a device
// that reports within the window, so the query reads hosts the data set
// has then, not ones replaced long before.
func (q *Query) Resolved(r DataRange) Query {
	out := *q
	if q.Churn == nil || !r.Known {
		return out
	}
	start, end := q.Window(r)
	mid := start + (end-start)/2
	for i, slot := range q.Devices[:q.NDevices] {
		out.Devices[i] = q.Churn.Identity(slot, r.Oldest, mid)
	}
	return out
}

// QueryChurner is implemented by query sources over a data set with
// CHURN: the engine hands the schedule to the sink (sinks.Options.Churn).
type QueryChurner interface {
	// QueryChurn is the schedule, nil without churn.
	QueryChurn() *QueryChurn
}

// QueryChurn is a data set's CHURN as its query workload knows it (iot
// sources' SHARE/EVERY): every Every of data time a share of the Scale
// slots gets a new device, round robin from slot 0.
type QueryChurn struct {
	// Scale is the number of slots (devices at a time).
	Scale uint32
	// PerMillion is the share of the slots replaced every Every, in
	// millionths.
	PerMillion uint64
	// Every is the churn interval (ns), > 0.
	Every int64
}

// Identity is the device holding slot at data time t, churn intervals
// counted from origin: after e whole intervals floor(e × Scale ×
// PerMillion / 10^6) replacements have been made, so slot s has been
// replaced g = ceil((R − s) / Scale) times (0 when R ≤ s) and is held by
// device s + g × Scale (g wrapping, as the data set's, after about
// 2^32 / Scale replacements). This is the iot sources' Identity.
func (c *QueryChurn) Identity(slot uint32, origin, t int64) uint32 {
	if c == nil || c.Every <= 0 || c.Scale == 0 || t < origin {
		return slot
	}
	e := uint64((t - origin) / c.Every)
	n := uint64(c.Scale)
	hi, lo := bits.Mul64(e, n*c.PerMillion)
	var g uint64
	if hi >= 1_000_000 {
		g = math.MaxUint64 / 2
	} else if r, _ := bits.Div64(hi, lo, 1_000_000); r > uint64(slot) {
		g = (r - uint64(slot) + n - 1) / n
	}
	gens := (math.MaxUint32 - 1) / n
	return slot + uint32(g%gens)*c.Scale
}

// MustFind reports whether an empty answer to q over data r is an error
// (class empty): q's type always finds rows in a whole window of data
// (Expect), and r holds at least one window. Until then the devices may
// not all have reported (rows reach the target batch by batch), so
// nothing is expected.
func (q *Query) MustFind(r DataRange) bool {
	return q.Expect && r.Known && r.Span() >= q.Type.Info().Window
}
