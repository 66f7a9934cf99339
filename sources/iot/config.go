package iot

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sources"
)

// MaxScale is the largest SCALE (devices per data set) accepted.
const MaxScale = 10_000_000

// MaxColumns is the largest COLUMNS (massive) accepted.
const MaxColumns = 1000

// maxSpan bounds INTERVAL, OUT_OF_ORDER lateness and OFFLINE durations,
// keeping timestamp arithmetic far from int64 overflow.
const maxSpan = 366 * 24 * time.Hour

// maxTime is the last time int64 nanoseconds since 1970 hold, that of a
// row's timestamp: 2262-04-11T23:47:16.854775807Z.
var maxTime = time.Unix(0, math.MaxInt64).UTC()

// Config holds the settings of an iot workload. Tags are for
// caarlos0/env/v11 without a prefix; the engine adds SOAKD_<W>_. Every
// custom type parses with UnmarshalText and prints back with MarshalText.
type Config struct {
	Scale      int           `env:"SCALE" envDefault:"100" help:"number of devices (hosts, trucks, sensors) in the data set"`
	Interval   time.Duration `env:"INTERVAL" envDefault:"10s" help:"time between two readings of one device (simulated clock)"`
	Start      Start         `env:"START" envDefault:"now" help:"first timestamp: now (rounded down to INTERVAL) or RFC3339, e.g. 2026-01-01T00:00:00Z"`
	End        End           `env:"END" help:"end of a finite data set (exclusive): RFC3339 or +DURATION after START; empty = endless"`
	Columns    int           `env:"COLUMNS" envDefault:"100" help:"massive: field columns per row (1..1000)"`
	ColumnType ColumnType    `env:"COLUMN_TYPE" envDefault:"int" help:"massive: type of the columns, int or float"`
	OutOfOrder OutOfOrder    `env:"OUT_OF_ORDER" help:"FRACTION:MAXLATE, e.g. 0.05:30s: that fraction of readings arrive up to MAXLATE late; none to disable; empty = source default (iot: 0.05:1m, others none)"`
	Offline    Offline       `env:"OFFLINE" help:"FRACTION:DURATION, e.g. 0.01:10m: at any time that fraction of devices is offline for DURATION windows, then sends its buffered readings in a burst; none to disable; empty = source default (none)"`
	Missing    Missing       `env:"MISSING" help:"fraction of field values left null, e.g. 0.01 or 1%; never all fields of a row; empty = source default (iot: 0.01, others 0)"`
	Clock      Clock         `env:"CLOCK" envDefault:"simulated" help:"simulated: timestamps advance by INTERVAL per round of devices, decoupled from wall time; wall: rows are stamped with the current time"`
	Churn      Churn         `env:"CHURN" help:"SHARE/EVERY, e.g. 10%/10m: every EVERY of data time that share of the devices is replaced by new ones (new hostname/device tag, so new series), as pods come and go; none or empty = no churn"`
}

// DefaultConfig returns the configuration with every default applied, as
// caarlos0/env would build it from an empty environment.
func DefaultConfig() Config {
	return Config{
		Scale:      100,
		Interval:   10 * time.Second,
		Start:      Start{Now: true},
		Columns:    100,
		ColumnType: ColumnInt,
		Clock:      Simulated,
	}
}

// Validate checks the settings without I/O and returns every problem
// found, each a *sources.SettingError naming the setting.
func (c Config) Validate() error {
	var errs []error
	bad := func(setting, format string, args ...any) {
		errs = append(errs, sources.Invalid(setting, format, args...))
	}
	if c.Scale < 1 || c.Scale > MaxScale {
		bad("SCALE", "%d is out of range: want 1..%d devices", c.Scale, MaxScale)
	}
	if c.Interval <= 0 || c.Interval > maxSpan {
		bad("INTERVAL", "%s: want a positive duration up to %s, e.g. 10s", c.Interval, maxSpan)
	}
	if c.OutOfOrder.MaxLate > maxSpan {
		bad("OUT_OF_ORDER", "max lateness %s: want at most %s", c.OutOfOrder.MaxLate, maxSpan)
	}
	if c.Offline.Duration > maxSpan {
		bad("OFFLINE", "duration %s: want at most %s", c.Offline.Duration, maxSpan)
	}
	if c.Columns < 1 || c.Columns > MaxColumns {
		bad("COLUMNS", "%d is out of range: want 1..%d", c.Columns, MaxColumns)
	}
	if c.ColumnType != ColumnInt && c.ColumnType != ColumnFloat {
		bad("COLUMN_TYPE", "want int or float")
	}
	if c.Clock != Simulated && c.Clock != Wall {
		bad("CLOCK", "want simulated or wall")
	}
	if c.Clock == Wall && !c.Start.Now {
		bad("START", "%s: only CLOCK=simulated takes a start time (CLOCK=wall stamps rows with the current time); leave START=now", c.Start)
	}
	if c.End.Set && c.End.Rel == 0 && c.End.T.IsZero() {
		bad("END", "want RFC3339 or +DURATION")
	}
	if c.End.Set && c.End.Rel < 0 {
		bad("END", "%s: want a positive +DURATION", c.End)
	}
	if c.End.Set && c.End.Rel > 0 {
		// Timestamps are int64 nanoseconds: an END past the last of them
		// would wrap the last rows round to 1677.
		from, what := c.Start.T, "START "+c.Start.String()
		if c.Start.Now || c.Clock == Wall {
			from, what = time.Now(), "now"
		}
		if from.After(maxTime.Add(-c.End.Rel)) {
			bad("END", "%s after %s is past %s, the last time a row can carry: shorten END or start earlier", c.End, what, maxTime.Format(time.RFC3339))
		}
	}
	if c.End.Set && c.Clock == Simulated && c.Interval > 0 {
		if c.End.Rel > 0 && c.End.Rel < c.Interval {
			bad("END", "%s is less than one INTERVAL (%s) after START: the data set would be empty", c.End, c.Interval)
		}
		if !c.Start.Now && c.End.Rel == 0 && c.End.T.Sub(c.Start.T) < c.Interval {
			bad("END", "%s is less than one INTERVAL (%s) after START %s: the data set would be empty", c.End, c.Interval, c.Start)
		}
	}
	if o := c.OutOfOrder; o.Fraction < 0 || o.Fraction > 0.5 || math.IsNaN(o.Fraction) || (o.Fraction > 0 && o.MaxLate <= 0) {
		bad("OUT_OF_ORDER", "%s: want FRACTION:MAXLATE with a fraction in 0..0.5 and a positive lateness", o)
	}
	if o := c.Offline; o.Fraction < 0 || o.Fraction >= 1 || math.IsNaN(o.Fraction) || (o.Fraction > 0 && o.Duration <= 0) {
		bad("OFFLINE", "%s: want FRACTION:DURATION with a fraction in 0..1 (exclusive) and a positive duration", o)
	}
	if m := c.Missing; m.Fraction < 0 || m.Fraction >= 1 || math.IsNaN(m.Fraction) {
		bad("MISSING", "%s: want a fraction in 0..1 (exclusive)", m)
	}
	if ch := c.Churn; ch.PerMillion < 0 || ch.PerMillion > 1_000_000 || (ch.PerMillion > 0 && (ch.Every <= 0 || ch.Every > maxSpan)) {
		bad("CHURN", "%s: want SHARE/EVERY with a share in 0.0001%%..100%% and a positive interval up to %s, e.g. 10%%/10m", ch, maxSpan)
	} else if ch.PerMillion > 0 && c.Interval > 0 && ch.Every < c.Interval {
		bad("CHURN", "interval %s is shorter than INTERVAL %s: devices would be replaced between two of their readings and most would never report; use at least INTERVAL", ch.Every, c.Interval)
	} else if wrap, span := c.churnWrap(); wrap > 0 && span > wrap {
		bad("CHURN", "%s at SCALE %d uses up the 32-bit device numbers after %s of data time, within the data set's %s, and device numbers would come round again: lower the share or SCALE, or lengthen EVERY", ch, c.Scale, wrap.Round(time.Second), span)
	}
	if c.OutOfOrder.Fraction > 0 && c.Clock == Simulated && c.Interval > 0 && c.OutOfOrder.MaxLate < c.Interval {
		bad("OUT_OF_ORDER", "max lateness %s is shorter than INTERVAL %s: with CLOCK=simulated a device reports once per INTERVAL, so a reading can only be late by whole intervals", c.OutOfOrder.MaxLate, c.Interval)
	}
	if c.Offline.Fraction > 0 && c.Clock == Simulated && c.Interval > 0 && c.Offline.Duration < c.Interval {
		bad("OFFLINE", "duration %s is shorter than INTERVAL %s: a device would never miss a reading", c.Offline.Duration, c.Interval)
	}
	return errors.Join(errs...)
}

// minChurnWrap is the least data time an endless data set's churn must
// last before its device numbers come round: a soak of days, not minutes.
const minChurnWrap = 30 * 24 * time.Hour

// churnWrap returns the data time after which CHURN has replaced one slot
// 2³² ÷ SCALE times, so that its device numbers come round again (0: no
// churn, or settings already refused), and the span it must cover: the
// data set's, or minChurnWrap for an endless one.
func (c Config) churnWrap() (wrap, span time.Duration) {
	if c.Churn.PerMillion <= 0 || c.Churn.Every <= 0 || c.Scale < 1 || c.Scale > MaxScale {
		return 0, 0
	}
	gens := float64((math.MaxUint32 - 1) / uint32(c.Scale))
	secs := (gens - 1) * 1e6 / float64(c.Churn.PerMillion) * c.Churn.Every.Seconds()
	wrap = time.Duration(min(secs, float64(math.MaxInt64/2)/1e9) * 1e9)
	switch {
	case !c.End.Set || c.Clock == Wall:
		span = minChurnWrap
	case c.End.Rel > 0:
		span = c.End.Rel
	case !c.Start.Now:
		span = c.End.T.Sub(c.Start.T)
	default:
		span = minChurnWrap
	}
	return wrap, span
}

// FileDefaults are the settings a data file (soakd generate) defaults to
// where a run's defaults would not do: TSBS's day, from 2016-01-01, so the
// same settings give the same file whenever they are used (START=now would
// not), and a finite one (END).
func FileDefaults() map[string]string {
	return map[string]string{"START": "2016-01-01T00:00:00Z", "END": "2016-01-02T00:00:00Z"}
}

// Finite returns nil when the settings make a finite data set, one whose
// rows are known in advance (New returns a sources.Sized source), and
// otherwise a *sources.SettingError for each setting that prevents it.
func (c Config) Finite() error {
	var errs []error
	if !c.End.Set {
		errs = append(errs, sources.Invalid("END", "not set, so the data set is endless: give its end, RFC3339 or +DURATION after START"))
	}
	if c.Clock == Wall {
		errs = append(errs, sources.Invalid("CLOCK", "wall stamps rows with the time they are written, so the data set has no fixed rows: use simulated"))
	}
	return errors.Join(errs...)
}

// Clock says how timestamps are made.
type Clock uint8

const (
	// Simulated timestamps start at START and advance by INTERVAL per round
	// of devices, however fast rows are generated.
	Simulated Clock = iota
	// Wall timestamps are the intended send time of the batch.
	Wall
)

// UnmarshalText parses simulated or wall.
func (c *Clock) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "simulated", "sim", "":
		*c = Simulated
	case "wall", "now", "real":
		*c = Wall
	default:
		return fmt.Errorf("%q: want simulated or wall", b)
	}
	return nil
}

// MarshalText returns simulated or wall.
func (c Clock) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

func (c Clock) String() string {
	if c == Wall {
		return "wall"
	}
	return "simulated"
}

// ColumnType is the type of the massive source's columns.
type ColumnType uint8

const (
	// ColumnInt columns are int64.
	ColumnInt ColumnType = iota
	// ColumnFloat columns are float64 with two decimals.
	ColumnFloat
)

// UnmarshalText parses int or float.
func (c *ColumnType) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "int", "integer", "bigint", "int64", "":
		*c = ColumnInt
	case "float", "double", "float64":
		*c = ColumnFloat
	default:
		return fmt.Errorf("%q: want int or float", b)
	}
	return nil
}

// MarshalText returns int or float.
func (c ColumnType) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

func (c ColumnType) String() string {
	if c == ColumnFloat {
		return "float"
	}
	return "int"
}

// Start is the first timestamp of a simulated data set.
type Start struct {
	// Now means the time the source is built, rounded down to INTERVAL
	// (so shards started within one interval agree).
	Now bool
	T   time.Time
}

// UnmarshalText parses now or an RFC3339 time.
func (s *Start) UnmarshalText(b []byte) error {
	v := strings.TrimSpace(string(b))
	if v == "" || strings.EqualFold(v, "now") {
		*s = Start{Now: true}
		return nil
	}
	t, err := parseTime(v)
	if errors.Is(err, errYearRange) {
		return fmt.Errorf("%q: %w", v, err)
	}
	if err != nil {
		return fmt.Errorf("%q: want now or an RFC3339 time like 2026-01-01T00:00:00Z", v)
	}
	*s = Start{T: t}
	return nil
}

// MarshalText returns now or the RFC3339 time.
func (s Start) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s Start) String() string {
	if s.Now {
		return "now"
	}
	return s.T.UTC().Format(time.RFC3339Nano)
}

// End is the exclusive end of a finite data set: an absolute time or a
// duration after the start. The zero value means endless.
type End struct {
	Set bool
	T   time.Time
	Rel time.Duration // > 0: END=+DURATION, relative to the start
}

// UnmarshalText parses "", an RFC3339 time or +DURATION (e.g. +24h).
func (e *End) UnmarshalText(b []byte) error {
	v := strings.TrimSpace(string(b))
	if v == "" {
		*e = End{}
		return nil
	}
	if rest, ok := strings.CutPrefix(v, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q: want +DURATION with a positive duration, e.g. +24h", v)
		}
		*e = End{Set: true, Rel: d}
		return nil
	}
	t, err := parseTime(v)
	if errors.Is(err, errYearRange) {
		return fmt.Errorf("%q: %w", v, err)
	}
	if err != nil {
		return fmt.Errorf("%q: want empty (endless), an RFC3339 time like 2026-01-02T00:00:00Z or +DURATION", v)
	}
	*e = End{Set: true, T: t}
	return nil
}

// MarshalText returns the setting as parsed.
func (e End) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

func (e End) String() string {
	switch {
	case !e.Set:
		return ""
	case e.Rel > 0:
		return "+" + e.Rel.String()
	}
	return e.T.UTC().Format(time.RFC3339Nano)
}

// resolve returns the end for a data set starting at start.
func (e End) resolve(start time.Time) time.Time {
	if e.Rel > 0 {
		return start.Add(e.Rel)
	}
	return e.T
}

// errYearRange is parseTime's error for a valid RFC3339 time whose year
// int64 nanoseconds cannot hold.
var errYearRange = errors.New("is out of range: want a year from 1678 to 2261 (timestamps are int64 nanoseconds)")

func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, err
	}
	if y := t.Year(); y < 1678 || y > 2261 { // int64 nanoseconds
		return time.Time{}, fmt.Errorf("year %d %w", y, errYearRange)
	}
	return t.UTC(), nil
}

// OutOfOrder makes a fraction of readings arrive late.
type OutOfOrder struct {
	// Set is false when the setting was left empty (the source's default
	// applies).
	Set      bool
	Fraction float64       // of readings (device rounds), 0..1
	MaxLate  time.Duration // lateness is uniform in (0, MaxLate]
}

// UnmarshalText parses FRACTION:MAXLATE (e.g. 0.05:30s or 5%:30s), none,
// or empty (source default).
func (o *OutOfOrder) UnmarshalText(b []byte) error {
	f, d, set, err := parseFracDur(string(b))
	if err != nil {
		return fmt.Errorf("%q: %w (e.g. 0.05:30s: 5%% of readings up to 30s late; none to disable)", b, err)
	}
	if f > 0.5 {
		return fmt.Errorf("%q: fraction must be at most 0.5 (a late reading arrives after a newer one of its device)", b)
	}
	*o = OutOfOrder{Set: set, Fraction: f, MaxLate: d}
	return nil
}

// MarshalText returns the setting as FRACTION:MAXLATE, none or empty.
func (o OutOfOrder) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

func (o OutOfOrder) String() string { return fracDurString(o.Set, o.Fraction, o.MaxLate) }

// Offline makes a fraction of devices go silent for a while and then send
// what they buffered in a burst.
type Offline struct {
	Set      bool
	Fraction float64       // of devices offline at any time, 0..1
	Duration time.Duration // length of an offline window
}

// UnmarshalText parses FRACTION:DURATION (e.g. 0.01:10m), none, or empty
// (source default).
func (o *Offline) UnmarshalText(b []byte) error {
	f, d, set, err := parseFracDur(string(b))
	if err != nil {
		return fmt.Errorf("%q: %w (e.g. 0.01:10m: 1%% of devices offline for 10m at a time; none to disable)", b, err)
	}
	if f >= 1 {
		return fmt.Errorf("%q: fraction must be below 1 (a device that is always offline never sends)", b)
	}
	*o = Offline{Set: set, Fraction: f, Duration: d}
	return nil
}

// MarshalText returns the setting as FRACTION:DURATION, none or empty.
func (o Offline) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

func (o Offline) String() string { return fracDurString(o.Set, o.Fraction, o.Duration) }

// Missing is the fraction of field values left null.
type Missing struct {
	Set      bool
	Fraction float64
}

// UnmarshalText parses a fraction (0.01), a percentage (1%), none, or
// empty (source default).
func (m *Missing) UnmarshalText(b []byte) error {
	v := strings.TrimSpace(string(b))
	if v == "" {
		*m = Missing{}
		return nil
	}
	if isNone(v) {
		*m = Missing{Set: true}
		return nil
	}
	f, err := parseFraction(v)
	if err != nil {
		return fmt.Errorf("%q: %w (e.g. 0.01 or 1%%)", v, err)
	}
	if f >= 1 {
		return fmt.Errorf("%q: fraction must be below 1 (a row needs at least one value)", v)
	}
	*m = Missing{Set: true, Fraction: f}
	return nil
}

// MarshalText returns the fraction, none or empty.
func (m Missing) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m Missing) String() string {
	switch {
	case !m.Set:
		return ""
	case m.Fraction == 0:
		return "none"
	}
	return strconv.FormatFloat(m.Fraction, 'g', -1, 64)
}

func isNone(v string) bool {
	switch strings.ToLower(v) {
	case "none", "off", "0", "no", "false":
		return true
	}
	return false
}

func parseFraction(v string) (float64, error) {
	scale := 1.0
	if p, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = p, 100
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New("want a fraction between 0 and 1 or a percentage")
	}
	f /= scale
	if f < 0 || f > 1 {
		return 0, errors.New("fraction out of range: want 0..1 (or 0%..100%)")
	}
	return f, nil
}

func parseFracDur(s string) (f float64, d time.Duration, set bool, err error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, 0, false, nil
	}
	if isNone(v) {
		return 0, 0, true, nil
	}
	a, b, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, false, errors.New("want FRACTION:DURATION")
	}
	if f, err = parseFraction(strings.TrimSpace(a)); err != nil {
		return 0, 0, false, err
	}
	d, err = time.ParseDuration(strings.TrimSpace(b))
	if err != nil || d <= 0 {
		return 0, 0, false, errors.New("want a positive duration after the colon")
	}
	if f == 0 {
		d = 0
	}
	return f, d, true, nil
}

func fracDurString(set bool, f float64, d time.Duration) string {
	switch {
	case !set:
		return ""
	case f == 0:
		return "none"
	}
	return strconv.FormatFloat(f, 'g', -1, 64) + ":" + d.String()
}

// Churn replaces a share of the devices every interval of data time, as
// pods come and go: a replaced device gets a new identity (a new
// hostname, truck name or device tag, so new series in every target),
// new state and new values. Which devices are replaced, and when, is a
// function of the settings alone (see Source.Identity).
type Churn struct {
	// PerMillion is the share of the devices replaced every Every, in
	// millionths (100,000 = 10%); 0 = no churn.
	PerMillion int64
	Every      time.Duration
}

// UnmarshalText parses SHARE/EVERY (10%/10m, 0.1/10m; FRACTION:DURATION
// as the other knobs is accepted too), none, or empty (no churn).
func (c *Churn) UnmarshalText(b []byte) error {
	v := strings.TrimSpace(string(b))
	if v == "" || isNone(v) {
		*c = Churn{}
		return nil
	}
	share, every, ok := strings.Cut(v, "/")
	if !ok {
		share, every, ok = strings.Cut(v, ":")
	}
	if !ok {
		return fmt.Errorf("%q: want SHARE/EVERY, e.g. 10%%/10m (10%% of the devices replaced every 10 minutes of data time); none to disable", v)
	}
	f, err := parseFraction(strings.TrimSpace(share))
	if err != nil {
		return fmt.Errorf("%q: share: %w (e.g. 10%%/10m)", v, err)
	}
	ppm := int64(math.Round(f * 1e6))
	if f > 0 && ppm == 0 {
		return fmt.Errorf("%q: share below 0.0001%% (one device in a million): want at least that, or none", v)
	}
	d, err := time.ParseDuration(strings.TrimSpace(every))
	if err != nil || d <= 0 {
		return fmt.Errorf("%q: want a positive duration after the share, e.g. 10%%/10m", v)
	}
	if d > maxSpan {
		return fmt.Errorf("%q: interval %s: want at most %s", v, d, maxSpan)
	}
	if ppm == 0 {
		*c = Churn{}
		return nil
	}
	*c = Churn{PerMillion: ppm, Every: d}
	return nil
}

// MarshalText returns SHARE/EVERY (the share as a percentage) or empty.
func (c Churn) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

func (c Churn) String() string {
	if c.PerMillion == 0 {
		return ""
	}
	return strconv.FormatFloat(float64(c.PerMillion)/1e4, 'f', -1, 64) + "%/" + c.Every.String()
}
