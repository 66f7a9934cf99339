package iot

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/soakd/soakd/sources"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	var c Config
	err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{
		"SCALE": "4000", "INTERVAL": "1s", "START": "2026-01-01T00:00:00Z", "END": "+1h",
		"COLUMNS": "500", "COLUMN_TYPE": "float", "OUT_OF_ORDER": "5%:30s", "OFFLINE": "0.01:10m",
		"MISSING": "0.02", "CLOCK": "simulated",
	}})
	must(t, err)
	want := Config{
		Scale: 4000, Interval: time.Second, Start: Start{T: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		End: End{Set: true, Rel: time.Hour}, Columns: 500, ColumnType: ColumnFloat,
		OutOfOrder: OutOfOrder{Set: true, Fraction: 0.05, MaxLate: 30 * time.Second},
		Offline:    Offline{Set: true, Fraction: 0.01, Duration: 10 * time.Minute},
		Missing:    Missing{Set: true, Fraction: 0.02}, Clock: Simulated,
	}
	if c != want {
		t.Fatalf("parsed %+v\nwant   %+v", c, want)
	}
	must(t, c.Validate())

	var d Config
	must(t, env.ParseWithOptions(&d, env.Options{Environment: map[string]string{}}))
	if d != DefaultConfig() {
		t.Fatalf("defaults from env %+v differ from DefaultConfig() %+v", d, DefaultConfig())
	}
}

// Parse errors carry the bad value and the expected grammar; the engine
// (and the flag package) prefix the variable's (flag's) name.
func TestConfigEnvErrorsExplain(t *testing.T) {
	t.Parallel()
	var c Config
	err := env.ParseWithOptions(&c, env.Options{Environment: map[string]string{"OUT_OF_ORDER": "lots", "CLOCK": "sundial"}})
	for _, want := range []string{`"lots": want FRACTION:DURATION`, `"sundial": want simulated or wall`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v should contain %q", err, want)
		}
	}
}

func TestValidateReportsEverySetting(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Scale = 0
	c.Interval = 0
	c.Columns = 5000
	c.Clock = Wall
	c.Start = Start{T: time.Unix(0, 0)}
	err := c.Validate()
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *sources.SettingError
		if !errors.As(e, &se) {
			t.Fatalf("%v is not a *sources.SettingError", e)
		}
		got = append(got, se.Setting)
	}
	slices.Sort(got)
	if want := []string{"COLUMNS", "INTERVAL", "SCALE", "START"}; !slices.Equal(got, want) {
		t.Fatalf("settings at fault %v, want %v", got, want)
	}

	c = DefaultConfig()
	c.OutOfOrder = OutOfOrder{Set: true, Fraction: 0.9, MaxLate: time.Minute}
	c.Offline = Offline{Set: true, Fraction: 0.5}
	c.Missing = Missing{Set: true, Fraction: 1}
	c.Interval = 1000 * time.Hour * 24
	err = c.Validate()
	for _, s := range []string{"OUT_OF_ORDER", "OFFLINE", "MISSING", "INTERVAL"} {
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var se *sources.SettingError
			found = found || errors.As(e, &se) && se.Setting == s
		}
		if !found {
			t.Errorf("programmatic config: no error for %s in %v", s, err)
		}
	}

	c = DefaultConfig()
	must(t, c.OutOfOrder.UnmarshalText([]byte("0.1:5s")))
	must(t, c.Offline.UnmarshalText([]byte("0.1:1s")))
	must(t, c.End.UnmarshalText([]byte("+5s")))
	var se *sources.SettingError
	err = c.Validate()
	for _, s := range []string{"OUT_OF_ORDER", "OFFLINE", "END"} {
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			found = found || errors.As(e, &se) && se.Setting == s
		}
		if !found {
			t.Errorf("no error for %s in %v", s, err)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	var se *sources.SettingError
	if _, err := New("nope", c, 1, sources.Shard{}); !errors.As(err, &se) || se.Setting != "SOURCE" {
		t.Fatalf("unknown source: %v", err)
	}
	must(t, c.End.UnmarshalText([]byte("2001-01-01T00:00:00Z")))
	if _, err := New("devops", c, 1, sources.Shard{}); !errors.As(err, &se) || se.Setting != "END" {
		t.Fatalf("END before START=now: %v", err)
	}
	if _, err := New("devops", DefaultConfig(), 1, sources.Shard{Index: 3, Count: 2}); !errors.As(err, &se) || se.Setting != "SHARD" {
		t.Fatalf("bad shard: %v", err)
	}
	src := build(t, "devops", DefaultConfig(), 1, sources.Shard{})
	if _, err := src.Stream(2, 2); err == nil {
		t.Fatal("Stream(2, 2) should fail")
	}
}

// Finite agrees with New: a source is sources.Sized exactly when Finite
// finds nothing to change; the file defaults make one, TSBS's day.
func TestFinite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // settings named by Finite
	}{
		{"run defaults", map[string]string{}, []string{"END"}},
		{"an end", map[string]string{"END": "+1h"}, nil},
		{"wall clock", map[string]string{"END": "+1h", "CLOCK": "wall"}, []string{"CLOCK"}},
		{"endless wall clock", map[string]string{"CLOCK": "wall"}, []string{"END", "CLOCK"}},
		{"file defaults", FileDefaults(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c Config
			must(t, env.ParseWithOptions(&c, env.Options{Environment: tc.env}))
			var got []string
			_ = sources.RenameSettings(c.Finite(), func(setting string, cause error) error {
				got = append(got, setting)
				return cause
			})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Finite names %v, want %v", got, tc.want)
			}
			src, err := New("devops", c, 1, sources.Shard{})
			must(t, err)
			if _, sized := src.(sources.Sized); sized != (tc.want == nil) {
				t.Fatalf("New returned a Sized source: %v, Finite: %v", sized, got)
			}
		})
	}
	var c Config
	must(t, env.ParseWithOptions(&c, env.Options{Environment: FileDefaults()}))
	src, err := New("devops", c, 1, sources.Shard{})
	must(t, err)
	if n := src.(sources.Sized).Total(); n != 864000 {
		t.Fatalf("devops with the file defaults holds %d rows, want TSBS's 864000 (100 hosts, a day at 10s)", n)
	}
}

func TestKnobParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want OutOfOrder
		ok   bool
	}{
		{"", OutOfOrder{}, true},
		{"none", OutOfOrder{Set: true}, true},
		{"0", OutOfOrder{Set: true}, true},
		{"0.05:30s", OutOfOrder{true, 0.05, 30 * time.Second}, true},
		{" 5% : 1m ", OutOfOrder{true, 0.05, time.Minute}, true},
		{"0:30s", OutOfOrder{Set: true}, true},
		{"0.6:30s", OutOfOrder{}, false},
		{"0.05", OutOfOrder{}, false},
		{"0.05:-1s", OutOfOrder{}, false},
		{"x:30s", OutOfOrder{}, false},
		{"NaN:30s", OutOfOrder{}, false},
		{"120%:1s", OutOfOrder{}, false},
	} {
		var o OutOfOrder
		err := o.UnmarshalText([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && o != tc.want) {
			t.Errorf("OutOfOrder %q: got %+v, %v", tc.in, o, err)
		}
		if tc.ok {
			var back OutOfOrder
			text, _ := o.MarshalText()
			if err := back.UnmarshalText(text); err != nil || back != o {
				t.Errorf("OutOfOrder %q does not round-trip through %q: %+v %v", tc.in, text, back, err)
			}
		}
	}
	var off Offline
	if err := off.UnmarshalText([]byte("1:10m")); err == nil {
		t.Error("OFFLINE 1:10m (always offline) accepted")
	}
	var m Missing
	for in, want := range map[string]float64{"0.01": 0.01, "1%": 0.01, "none": 0} {
		if err := m.UnmarshalText([]byte(in)); err != nil || m.Fraction != want || !m.Set {
			t.Errorf("Missing %q: %+v %v", in, m, err)
		}
	}
	for _, in := range []string{"1", "-0.1", "abc", "50%%"} {
		if err := m.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("Missing %q accepted", in)
		}
	}
	var e End
	must(t, e.UnmarshalText([]byte("+24h")))
	if e.Rel != 24*time.Hour {
		t.Errorf("END +24h parsed as %+v", e)
	}
	for _, in := range []string{"+0s", "+-1h", "tomorrow", "9999-01-01T00:00:00Z"} {
		if err := e.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("END %q accepted", in)
		}
	}
}

func FuzzKnobs(f *testing.F) {
	for _, s := range []string{"", "none", "0.05:30s", "5%:1m", "1:1h", "0.5:1ns", "1e-3:1h30m", "%:", ":", "0x1p-2:1s",
		"now", "2026-01-01T00:00:00Z", "+24h", "wall", "simulated", "float", "10%/10m", "0.5/1m", "100%:10s", "0.0001%/1h", "1/1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var o OutOfOrder
		if o.UnmarshalText([]byte(s)) == nil {
			if o.Fraction < 0 || o.Fraction > 0.5 || (o.Fraction > 0 && o.MaxLate <= 0) {
				t.Fatalf("OutOfOrder %q parsed to %+v", s, o)
			}
			text, _ := o.MarshalText()
			var back OutOfOrder
			if err := back.UnmarshalText(text); err != nil || back != o {
				t.Fatalf("OutOfOrder %q -> %q -> %+v, %v", s, text, back, err)
			}
		}
		var off Offline
		if off.UnmarshalText([]byte(s)) == nil && (off.Fraction < 0 || off.Fraction >= 1 || (off.Fraction > 0 && off.Duration <= 0)) {
			t.Fatalf("Offline %q parsed to %+v", s, off)
		}
		var m Missing
		if m.UnmarshalText([]byte(s)) == nil && (m.Fraction < 0 || m.Fraction >= 1) {
			t.Fatalf("Missing %q parsed to %+v", s, m)
		}
		var st Start
		_ = st.UnmarshalText([]byte(s))
		var e End
		if e.UnmarshalText([]byte(s)) == nil && e.Set && e.Rel < 0 {
			t.Fatalf("End %q parsed to %+v", s, e)
		}
		var ch Churn
		if ch.UnmarshalText([]byte(s)) == nil {
			if ch.PerMillion < 0 || ch.PerMillion > 1_000_000 || (ch.PerMillion > 0 && ch.Every <= 0) {
				t.Fatalf("Churn %q parsed to %+v", s, ch)
			}
			text, _ := ch.MarshalText()
			var back Churn
			if err := back.UnmarshalText(text); err != nil || back != ch {
				t.Fatalf("Churn %q -> %q -> %+v, %v", s, text, back, err)
			}
		}
		var c Clock
		_ = c.UnmarshalText([]byte(s))
		var ct ColumnType
		_ = ct.UnmarshalText([]byte(s))
		// a config built from whatever parsed must validate or fail cleanly
		cfg := DefaultConfig()
		cfg.OutOfOrder, cfg.Offline, cfg.Missing, cfg.End, cfg.Churn = o, off, m, e, ch
		if st.Now || !st.T.IsZero() {
			cfg.Start = st
		}
		if cfg.Validate() == nil {
			cfg.Scale = 3
			if src, err := Build("massive", cfg, 1, sources.Shard{}); err == nil {
				stm, _ := src.OpenStream(0, 1)
				b := sources.NewSeriesBatch(src.Schemas())
				_ = stm.Fill(b, 50, time.Now().UnixNano())
			}
		}
	})
}

// Timestamps are int64 nanoseconds, which end in April 2262: an END past
// that is refused naming END, and a START or END in a year out of range
// says so. Bug caught: START 2261-10-01 with END +8000h wrote a last row
// at 1677-11-17, and START 2262-01-01 was refused as no RFC3339 time.
func TestTimesPast2262AreRefused(t *testing.T) {
	t.Parallel()
	var se *sources.SettingError
	for _, tc := range []struct{ start, end string }{
		{"2261-10-01T00:00:00Z", "+8000h"},
		{"2261-12-31T00:00:00Z", "+2500h"}, // past 2262-04-11 by 3 days
		{"now", "+2500000h"},               // 285 years after any START=now
	} {
		c := DefaultConfig()
		c.Interval = 2000 * time.Hour / 10
		must(t, c.Start.UnmarshalText([]byte(tc.start)))
		must(t, c.End.UnmarshalText([]byte(tc.end)))
		if err := c.Validate(); !errors.As(err, &se) || se.Setting != "END" || !strings.Contains(err.Error(), "2262-04-11") {
			t.Errorf("START %s END %s: %v, want an END error naming the last time", tc.start, tc.end, err)
		}
	}
	c := DefaultConfig()
	must(t, c.Start.UnmarshalText([]byte("2261-10-01T00:00:00Z")))
	must(t, c.End.UnmarshalText([]byte("+4000h")))
	must(t, c.Validate())

	var s Start
	var e End
	for _, err := range []error{s.UnmarshalText([]byte("2262-01-01T00:00:00Z")), e.UnmarshalText([]byte("1600-01-01T00:00:00Z"))} {
		if err == nil || !strings.Contains(err.Error(), "out of range") || strings.Contains(err.Error(), "want now or") {
			t.Errorf("got %v, want the year out of range", err)
		}
	}
}
