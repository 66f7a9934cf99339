// Package seq is the smallest series source: DEVICES devices, each
// sending one integer n per round, where n numbers every row of the data
// set once (round r, device d: n = r·DEVICES + d). It costs almost nothing
// to generate, so it measures the engine and a target rather than the
// generator, and its values make loss or duplication easy to see.
//
//	src, _ := seq.New(seq.Config{Devices: 10, Rows: 1000}, sources.Shard{})
package seq

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/soakd/soakd/sources"
)

// Config holds the seq source's settings (SOAKD_<W>_*).
type Config struct {
	Devices  int           `env:"DEVICES" envDefault:"10" help:"devices (seq source)"`
	Rows     int64         `env:"ROWS" envDefault:"0" help:"rows in the data set; 0 = endless (seq source)"`
	Interval time.Duration `env:"INTERVAL" envDefault:"1s" help:"simulated time between a device's rows (seq source)"`
}

// Validate checks the settings.
func (c Config) Validate() error {
	switch {
	case c.Devices < 1 || c.Devices > 100_000_000:
		return sources.Invalid("DEVICES", "%d is out of range [1, 100000000]", c.Devices)
	case c.Rows < 0:
		return sources.Invalid("ROWS", "must not be negative")
	case c.Interval <= 0:
		return sources.Invalid("INTERVAL", "must be positive")
	case c.Rows > 0 && lastRound(c) > (math.MaxInt64-epoch)/int64(c.Interval):
		// Timestamps are int64 nanoseconds: past 2262 they would wrap
		// round to 1677.
		return sources.Invalid("INTERVAL", "%s: %d rows of %d devices, one row per device every INTERVAL from %s, would run past %s, the last time a row can carry: shorten INTERVAL or ROWS",
			c.Interval, c.Rows, c.Devices, time.Unix(0, epoch).UTC().Format(time.RFC3339), time.Unix(0, math.MaxInt64).UTC().Format(time.RFC3339))
	}
	return nil
}

// lastRound is the round of a finite data set's last row (DEVICES and
// ROWS valid).
func lastRound(c Config) int64 { return (c.Rows - 1) / int64(c.Devices) }

// Finite returns nil when the settings make a finite data set (ROWS set),
// otherwise a *sources.SettingError naming ROWS.
func (c Config) Finite() error {
	if c.Rows == 0 {
		return sources.Invalid("ROWS", "0 makes the data set endless: give the number of rows")
	}
	return nil
}

// epoch is the simulated start: fixed so runs are reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

type tagger struct{}

// AppendTag writes device d's name, "d<d>".
func (tagger) AppendTag(dst []byte, d uint32, _ int) []byte {
	return strconv.AppendUint(append(dst, 'd'), uint64(d), 10)
}

// Source is the seq source.
type Source struct {
	cfg    Config
	shard  sources.Shard
	schema *sources.Schema
}

var (
	_ sources.Source    = (*Source)(nil)
	_ sources.Replayer  = (*Source)(nil)
	_ sources.RowSource = (*Source)(nil)
)

// New returns a seq source for this process's shard.
func New(c Config, shard sources.Shard) (*Source, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	shard, err := shard.Checked()
	if err != nil {
		return nil, err
	}
	return &Source{cfg: c, shard: shard, schema: &sources.Schema{
		Measurement: "seq", TagKeys: []string{"device"}, Tags: tagger{},
		Fields: []sources.Field{{Name: "n", Kind: sources.Int}},
	}}, nil
}

// Name is "seq".
func (s *Source) Name() string { return "seq" }

// Kind is series.
func (s *Source) Kind() sources.Kind { return sources.Series }

// Schemas is the one table, seq.
func (s *Source) Schemas() []*sources.Schema { return []*sources.Schema{s.schema} }

// Interval is the time between two rows of one device (INTERVAL).
func (s *Source) Interval() time.Duration { return s.cfg.Interval }

// Total counts this shard's rows of a finite data set (0 when endless).
func (s *Source) Total() int64 {
	var n int64
	for i := int64(0); i < s.cfg.Rows && i < int64(s.cfg.Devices); i++ {
		if s.shard.Owns(uint64(i)) {
			n += (s.cfg.Rows - i + int64(s.cfg.Devices) - 1) / int64(s.cfg.Devices)
		}
	}
	return n
}

// Stream returns the rows of the devices in slice part of parts.
func (s *Source) Stream(part, parts int) (sources.Stream, error) {
	sh := s.shard.Split(part, parts)
	var devs []uint32
	for d := 0; d < s.cfg.Devices; d++ {
		if sh.Owns(uint64(d)) {
			devs = append(devs, uint32(d))
		}
	}
	return &stream{src: s, devices: devs}, nil
}

type stream struct {
	src     *Source
	devices []uint32
	round   int64
	next    int // index into devices within the round
}

// Fill appends rows in (round, device) order.
func (st *stream) Fill(b *sources.Batch, max int, _ int64) error {
	t := b.Tables[0]
	if t.Ints[0] == nil {
		t.Ints[0] = make([]int64, 0, max)
	}
	c := st.src.cfg
	for added := 0; added < max; added++ {
		if len(st.devices) == 0 {
			return sources.ErrDone
		}
		d := st.devices[st.next]
		n := st.round*int64(c.Devices) + int64(d)
		if c.Rows > 0 && n >= c.Rows {
			return sources.ErrDone
		}
		t.Device = append(t.Device, d)
		t.Time = append(t.Time, epoch+st.round*int64(c.Interval))
		t.Ints[0] = append(t.Ints[0], n)
		b.NumValues++
		if st.next++; st.next == len(st.devices) {
			st.next = 0
			st.round++
		}
	}
	return nil
}

// Position is the stream's place (see sources.Position): before the row
// of round round and device devices[next].
func (st *stream) Position() sources.Position {
	if len(st.devices) == 0 {
		return sources.Position{Device: sources.EndOfRound}
	}
	return sources.Position{Round: st.round, Device: int64(st.devices[st.next])}
}

// AllDevices is DEVICES.
func (s *Source) AllDevices() uint32 { return uint32(s.cfg.Devices) }

// Replay returns device d's rows, one per round.
func (s *Source) Replay(d uint32) (sources.DeviceReplay, error) {
	if int64(d) >= int64(s.cfg.Devices) || !s.shard.Owns(uint64(d)) {
		return nil, fmt.Errorf("device %d is not in shard %s of %d devices", d, s.shard, s.cfg.Devices)
	}
	return &replay{src: s, d: d}, nil
}

type replay struct {
	src   *Source
	d     uint32
	round int64
}

func (r *replay) Next(b *sources.Batch) (int, sources.Position, error) {
	c := r.src.cfg
	n := r.round*int64(c.Devices) + int64(r.d)
	if c.Rows > 0 && n >= c.Rows {
		return 0, sources.Position{}, sources.ErrDone
	}
	t := b.Tables[0]
	t.Device = append(t.Device, r.d)
	t.Time = append(t.Time, epoch+r.round*int64(c.Interval))
	t.Ints[0] = append(t.Ints[0], n)
	b.NumValues++
	pos := sources.Position{Round: r.round, Device: int64(r.d)}
	r.round++
	return 0, pos, nil
}

// PureRows is true: a row's n follows from its device and time.
func (s *Source) PureRows() bool { return true }

// AppendRow appends device d's row at ts, when the data set has one.
func (s *Source) AppendRow(t *sources.Table, table int, d uint32, ts int64) bool {
	c := s.cfg
	iv := int64(c.Interval)
	if table != 0 || int64(d) >= int64(c.Devices) || !s.shard.Owns(uint64(d)) || ts < epoch || (ts-epoch)%iv != 0 {
		return false
	}
	n := (ts-epoch)/iv*int64(c.Devices) + int64(d)
	if c.Rows > 0 && n >= c.Rows {
		return false
	}
	t.Device = append(t.Device, d)
	t.Time = append(t.Time, ts)
	t.Ints[0] = append(t.Ints[0], n)
	return true
}
