package iot

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync/atomic"
	"time"

	"github.com/soakd/soakd/sources"
)

// Names lists the sources this package provides.
func Names() []string { return []string{"devops", "devops-full", "iot", "massive"} }

// Source is an iot data set: devices that report one row per measurement
// every round. Build it with New or Build.
type Source struct {
	name  string
	cfg   Config
	seed  uint64
	shard sources.Shard
	model model
	sch   []*sources.Schema

	wall     bool
	apart    int64 // wall clock: least time between two rows of a device, ns
	start    int64 // first timestamp (simulated), Unix ns
	interval int64
	finite   bool
	end      int64 // exclusive end, Unix ns (finite)
	steps    int64 // simulated finite: rounds with on-time readings
	devices  int   // devices in the shard

	lateThr uint64 // OUT_OF_ORDER fraction as a hash threshold
	lateMax int64  // ns
	offThr  uint64 // OFFLINE fraction as a hash threshold
	offDur  int64  // ns
	missThr uint64 // MISSING fraction as a 32-bit threshold

	// CHURN (see Identity): 0 churnEvery = none
	churnPPM    uint64 // devices replaced per churnEvery, in millionths of SCALE
	churnEvery  int64  // ns
	churnOrigin int64  // data time of the first churn interval's start
	gens        uint64 // identities per slot before their numbers wrap
	replaced    atomic.Int64
}

// Finite is a Source with an END under the simulated clock: its number of
// rows is known in advance.
type Finite struct{ *Source }

// Total is the number of rows the data set (this shard) holds.
func (f Finite) Total() int64 { return f.Source.Rows() }

var (
	_ sources.Source = (*Source)(nil)
	_ sources.Sized  = Finite{}
)

// New builds the named source (see Names) for one shard. It does no I/O;
// START=now is read from the clock. Finite sources implement
// sources.Sized.
func New(source string, c Config, seed uint64, shard sources.Shard) (sources.Source, error) {
	s, err := Build(source, c, seed, shard)
	if err != nil {
		return nil, err
	}
	if s.finite && !s.wall {
		return Finite{s}, nil
	}
	return s, nil
}

// Unwrap returns the *Source behind a source made by New, or nil.
func Unwrap(src sources.Source) *Source {
	switch s := src.(type) {
	case *Source:
		return s
	case Finite:
		return s.Source
	}
	return nil
}

// Defaults applies the source's defaults for the knobs left empty: iot
// (TSBS trucks) has TSBS-like irregularity, the others none.
func Defaults(source string, c Config) Config {
	if source == "iot" {
		if !c.OutOfOrder.Set {
			c.OutOfOrder = OutOfOrder{Set: true, Fraction: 0.05, MaxLate: max(time.Minute, c.Interval)}
		}
		if !c.Missing.Set {
			c.Missing = Missing{Set: true, Fraction: 0.01}
		}
	}
	return c
}

// Build is New returning the concrete type (for data file writers, which
// use Stream.NextRound and Stream.FillUntil).
func Build(source string, c Config, seed uint64, shard sources.Shard) (*Source, error) {
	c = Defaults(source, c)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	shard, err := shard.Checked()
	if err != nil {
		return nil, err
	}
	s := &Source{name: source, cfg: c, seed: seed, shard: shard, wall: c.Clock == Wall, interval: int64(c.Interval), apart: int64(time.Microsecond)}
	if c.Start.Now {
		now := time.Now().UnixNano()
		s.start = now - now%s.interval // shards started within one interval agree
	} else {
		s.start = c.Start.T.UnixNano()
	}
	if c.End.Set {
		s.finite = true
		if s.wall {
			if c.End.Rel > 0 {
				s.end = time.Now().UnixNano() + int64(c.End.Rel)
			} else {
				s.end = c.End.T.UnixNano()
			}
		} else {
			s.end = c.End.resolve(time.Unix(0, s.start)).UnixNano()
			s.steps = (s.end - s.start) / s.interval
			if s.steps < 1 {
				return nil, sources.Invalid("END", "%s is less than one INTERVAL (%s) after START %s: the data set would be empty",
					c.End, c.Interval, time.Unix(0, s.start).UTC().Format(time.RFC3339))
			}
		}
	}
	origin := s.start
	switch source {
	case "devops":
		s.model = newMulti(newCPU(hostTags{seed}))
	case "devops-full":
		s.model = newDevopsFull(seed, origin)
	case "iot":
		s.model = newTrucks(seed)
	case "massive":
		s.model = newMassive(c.Columns, c.ColumnType)
	default:
		return nil, sources.Invalid("SOURCE", "unknown source %q (known: %s)", source, strings.Join(Names(), ", "))
	}
	s.sch = s.model.schemas()
	precomputeTags(s.sch, c.Scale)
	if i := shard.Index; i < c.Scale {
		s.devices = (c.Scale - i + shard.Count - 1) / shard.Count
	}
	if f := c.OutOfOrder.Fraction; f > 0 {
		// A reading is never made late in a round where late readings of
		// its device are due (see Stream.hasDue), which happens in about a
		// fraction f of rounds: draw with f/(1-f) so that a fraction f of
		// all readings ends up late.
		s.lateThr = threshold(f / (1 - f))
		s.lateMax = int64(c.OutOfOrder.MaxLate)
	}
	if c.Offline.Fraction > 0 {
		s.offThr = threshold(c.Offline.Fraction)
		s.offDur = int64(c.Offline.Duration)
	}
	if c.Missing.Fraction > 0 {
		s.missThr = uint64(math.Ceil(c.Missing.Fraction * (1 << 32)))
	}
	if c.Churn.PerMillion > 0 {
		s.churnPPM = uint64(c.Churn.PerMillion)
		s.churnEvery = int64(c.Churn.Every)
		s.churnOrigin = s.start
		if s.wall {
			// Wall time: intervals from the build time rounded down to
			// the churn interval, so shards started within one agree.
			now := time.Now().UnixNano()
			s.churnOrigin = now - now%s.churnEvery
		}
		s.gens = (math.MaxUint32 - 1) / uint64(c.Scale)
	}
	return s, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Kind is sources.Series.
func (s *Source) Kind() sources.Kind { return sources.Series }

// Schemas lists the source's tables.
func (s *Source) Schemas() []*sources.Schema { return s.sch }

// Interval is the time between two readings of one device (INTERVAL).
func (s *Source) Interval() time.Duration { return s.cfg.Interval }

// WallClock reports whether rows are stamped with the time they are
// sent (CLOCK=wall), and SCALE.
func (s *Source) WallClock() (bool, int) { return s.wall, s.cfg.Scale }

// KeepApart has the wall clock stamp a device's rows at least d apart (1
// µs at least): the rows of several rounds in one batch, which share
// their intended time, are otherwise 1 µs apart, and a target that keeps
// milliseconds or seconds would keep one of them.
func (s *Source) KeepApart(d time.Duration) { s.apart = max(int64(d), int64(time.Microsecond)) }

// Devices is the number of devices in this shard.
func (s *Source) Devices() int { return s.devices }

// Steps is the number of readings per device of a finite simulated data
// set (0 when endless or under the wall clock).
func (s *Source) Steps() int64 { return s.steps }

// Rounds is the number of rounds Stream.NextRound starts for a finite
// simulated data set: Steps, plus a last round in which late and buffered
// readings are flushed.
func (s *Source) Rounds() int64 {
	if !s.finite || s.wall {
		return 0
	}
	return s.steps + 1
}

// Rows is the number of rows of a finite simulated data set (this
// shard): devices x steps x tables, whatever the knobs (late and offline
// readings are delayed, never lost or repeated); 0 otherwise.
func (s *Source) Rows() int64 {
	return int64(s.devices) * s.steps * int64(len(s.sch))
}

// Stream returns cursor part of parts over the shard: it owns the devices
// d with shard.Split(part, parts).Owns(d).
func (s *Source) Stream(part, parts int) (sources.Stream, error) {
	return s.OpenStream(part, parts)
}

// OpenStream is Stream returning the concrete type.
func (s *Source) OpenStream(part, parts int) (*Stream, error) {
	if parts < 1 || part < 0 || part >= parts {
		return nil, fmt.Errorf("stream %d of %d: want 0 <= part < parts", part, parts)
	}
	sp := s.shard.Split(part, parts)
	count := 0
	if sp.Index < s.cfg.Scale {
		count = (s.cfg.Scale - sp.Index + sp.Count - 1) / sp.Count
	}
	st := s.newStream(uint64(sp.Index), uint64(sp.Count), count)
	st.counted = true
	return st, nil
}

// newStream returns a stream over the count devices base + k*stride.
func (s *Source) newStream(base, stride uint64, count int) *Stream {
	st := &Stream{
		src:    s,
		model:  s.model,
		nm:     len(s.sch),
		words:  s.model.words(),
		base:   base,
		stride: stride,
		round:  -1,
		maxTs:  math.MinInt64 / 2,
		count:  count,
	}
	st.k = st.count
	if s.churnEvery > 0 {
		st.ids = make([]uint32, st.count)
		for k := range st.ids {
			st.ids[k] = st.device(k)
		}
	}
	if st.words > 0 {
		st.state = make([]int64, st.count*st.words)
		for k := range st.count {
			st.model.init(st.state[k*st.words:(k+1)*st.words], devKey(s.seed, st.device(k)), &st.r)
		}
	}
	if s.offThr != 0 {
		st.offStart = make([]int64, st.count)
		st.missed = make([]uint32, st.count)
		for i := range st.offStart {
			st.offStart[i] = noOff
		}
	}
	return st
}

// errRoundOpen is returned by NextRound when the current round is not
// complete.
var errRoundOpen = errors.New("BUG: iot: NextRound before the current round was filled")

// Shard is the shard the source was built for.
func (s *Source) Shard() sources.Shard { return s.shard }

// Churning reports whether CHURN replaces devices.
func (s *Source) Churning() bool { return s.churnEvery > 0 }

// Identity is the device (the number in a row's Table.Device, which
// names its tags: hostname host_N, truck_N, device_N) that holds slot
// at data time t. Without CHURN it is the slot itself. With CHURN,
// slots are replaced in turn, round robin: after e whole churn
// intervals R(e) = floor(e × SCALE × SHARE) replacements have been made,
// slot 0 first, and slot s has been replaced g = ceil((R(e) − s) / SCALE)
// times (0 when R(e) ≤ s); its device is then s + g × SCALE. Identities
// are never reused, but after about 2^32 / SCALE replacements of one slot
// (g wraps). Intervals count from START under the simulated clock.
func (s *Source) Identity(slot uint32, t int64) uint32 {
	if s.churnEvery == 0 {
		return slot
	}
	e := floorDiv(t-s.churnOrigin, s.churnEvery)
	if e <= 0 {
		return slot
	}
	g := s.generation(slot, uint64(e))
	return slot + uint32(g%s.gens)*uint32(s.cfg.Scale)
}

// generation is how many times slot has been replaced after e churn
// intervals.
func (s *Source) generation(slot uint32, e uint64) uint64 {
	n := uint64(s.cfg.Scale)
	hi, lo := bits.Mul64(e, n*s.churnPPM)
	if hi >= 1_000_000 {
		return math.MaxUint64 / 2 // beyond any run: wraps like the rest
	}
	r, _ := bits.Div64(hi, lo, 1_000_000)
	if r <= uint64(slot) {
		return 0
	}
	return (r - uint64(slot) + n - 1) / n
}

// Slot is the slot device d holds (Identity's inverse): d itself without
// CHURN, d mod SCALE with it.
func (s *Source) Slot(d uint32) uint32 {
	if s.churnEvery == 0 {
		return d
	}
	return d % uint32(s.cfg.Scale)
}

// Replaced is the number of devices the streams of the source (this
// shard) have replaced so far.
func (s *Source) Replaced() int64 { return s.replaced.Load() }

var _ sources.ChurnReporter = (*Source)(nil)

// ChurnFigures is what CHURN did so far in the streams of this source.
func (s *Source) ChurnFigures() sources.ChurnFigures {
	r := s.Replaced()
	created := int64(s.devices) + r
	fields := 0
	for _, sc := range s.sch {
		fields += len(sc.Fields)
	}
	return sources.ChurnFigures{Setting: s.cfg.Churn.String(), Devices: int64(s.devices), Replaced: r, DevicesCreated: created,
		SeriesCreated: created * int64(fields), TableSeries: created * int64(len(s.sch))}
}

// tenureEnd is when the device holding slot at data time from was
// replaced, at or before t: the start of the first churn interval after
// from's in which the slot has been replaced more often.
func (s *Source) tenureEnd(slot uint32, from, t int64) int64 {
	first := max(floorDiv(from-s.churnOrigin, s.churnEvery), 0)
	g := s.generation(slot, uint64(first))
	l, r := first+1, max(floorDiv(t-s.churnOrigin, s.churnEvery), first+1)
	for l < r { // the first interval in (first, r] with a later generation
		m := l + (r-l)/2
		if s.generation(slot, uint64(m)) > g {
			r = m
		} else {
			l = m + 1
		}
	}
	return s.churnOrigin + l*s.churnEvery
}
