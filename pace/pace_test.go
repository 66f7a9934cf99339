package pace

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		max     bool
		rateAt  map[time.Duration]float64 // expected RateAt
		end     time.Duration
		wantErr string
	}{
		{name: "max", in: "max", max: true},
		{name: "max any case", in: " MAX ", max: true},
		{name: "constant", in: "5000", rateAt: map[time.Duration]float64{0: 5000, time.Hour: 5000}},
		{name: "suffix k", in: "2.5k", rateAt: map[time.Duration]float64{time.Second: 2500}},
		{name: "suffix M per second", in: "1M/s", rateAt: map[time.Duration]float64{time.Second: 1e6}},
		{name: "zero", in: "0", rateAt: map[time.Duration]float64{time.Second: 0}},
		{name: "stages", in: "30s:1000,5m:20000,1h:20000", end: 30*time.Second + 5*time.Minute + time.Hour,
			rateAt: map[time.Duration]float64{0: 0, 15 * time.Second: 500, 30 * time.Second: 1000,
				30*time.Second + 150*time.Second: 10500, time.Hour: 20000, 2 * time.Hour: 0}},
		{name: "stages with start", in: "500,10s:1500", end: 10 * time.Second,
			rateAt: map[time.Duration]float64{0: 500, 5 * time.Second: 1000}},
		{name: "step capped", in: "step:1000+500/30s..2000",
			rateAt: map[time.Duration]float64{0: 1000, 29 * time.Second: 1000, 30 * time.Second: 1500, 61 * time.Second: 2000, time.Hour: 2000}},
		{name: "step uncapped", in: "step:0+100/1s", rateAt: map[time.Duration]float64{0: 0, 1500 * time.Millisecond: 100, 10 * time.Second: 1000}},
		{name: "empty", in: "", wantErr: "empty rate"},
		{name: "negative", in: "-5", wantErr: "out of range"},
		{name: "word", in: "fast", wantErr: "not a rate"},
		{name: "nan", in: "NaN", wantErr: "out of range"},
		{name: "inf", in: "Inf", wantErr: "out of range"},
		{name: "hex", in: "0x10", wantErr: "not a rate"},
		{name: "too big", in: "2G", wantErr: "out of range"},
		// A lower-case m is not read as mega (nor as per minute).
		{name: "lower-case m", in: "1m", wantErr: "did you mean 1M (1 million/s)? a rate is per second: 1 per minute is 0.01667"},
		{name: "lower-case m per second", in: "2m/s", wantErr: "did you mean 2M"},
		{name: "lower-case m in a stage", in: "30s:5m", wantErr: "stage 1: lower-case m is ambiguous"},
		{name: "lower-case m in a step", in: "step:1m+1/1s", wantErr: "lower-case m is ambiguous"},
		{name: "stage without target", in: "30s:,1m:5", wantErr: "stage 1"},
		{name: "stage bad duration", in: "30x:100", wantErr: "not a duration"},
		{name: "stage zero duration", in: "0s:100", wantErr: "out of range"},
		{name: "stage missing colon", in: "30s:100,200", wantErr: "stage 2"},
		{name: "only start", in: "100,", wantErr: "not a rate"},
		{name: "start without stages", in: "100,,", wantErr: "not a rate"},
		{name: "step no plus", in: "step:1000/30s", wantErr: "want step:"},
		{name: "step no every", in: "step:1000+5", wantErr: "want step:"},
		{name: "step max below start", in: "step:1000+5/1s..10", wantErr: "below the start"},
		{name: "step bad every", in: "step:1+1/0s", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if r.Max != tt.max {
				t.Fatalf("Max = %v, want %v", r.Max, tt.max)
			}
			if r.Max {
				return
			}
			if got := r.Profile.End(); got != tt.end {
				t.Errorf("End = %v, want %v", got, tt.end)
			}
			for at, want := range tt.rateAt {
				if got := r.Profile.RateAt(at); math.Abs(got-want) > 1e-6*math.Max(1, want) {
					t.Errorf("RateAt(%v) = %v, want %v", at, got, want)
				}
			}
		})
	}
}

// The count is the integral of the rate: check against known closed forms.
func TestCountIsIntegral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		at   time.Duration
		want float64
	}{
		{"constant 1h", "100000", time.Hour, 100000 * 3600},
		{"ramp 0 to 50000 over 10s, at 10s", "10s:50000", 10 * time.Second, 250000},
		{"ramp at 5s", "10s:50000", 5 * time.Second, 62500},
		{"ramp then hold", "10s:1000,10s:1000", 20 * time.Second, 5000 + 10000},
		{"after the end", "10s:1000", time.Minute, 5000},
		{"ramp down", "1000,10s:0", 10 * time.Second, 5000},
		{"step 3 full steps", "step:100+100/10s", 30 * time.Second, 1000 + 2000 + 3000},
		{"step half into 2nd", "step:100+100/10s", 15 * time.Second, 1000 + 1000},
		{"step capped", "step:100+100/10s..200", 40 * time.Second, 1000 + 2000*3},
		{"step from zero", "step:0+10/1s", 3 * time.Second, 0 + 10 + 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := MustParse(tt.in).Profile
			if got := p.Count(tt.at); math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Errorf("Count(%v) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// checkInverse verifies that At inverts Count and that Count is monotone
// for a profile, sampling n units along it.
func checkInverse(t *testing.T, name string, p Profile, horizon time.Duration) {
	t.Helper()
	total := p.Count(horizon)
	if total <= 0 {
		return
	}
	prev := time.Duration(-1)
	for i := 1; i <= 200; i++ {
		n := total * float64(i) / 200
		at, ok := p.At(n)
		if !ok {
			t.Fatalf("%s: At(%v) not reached though Count(%v) = %v", name, n, horizon, total)
		}
		if at < prev {
			t.Fatalf("%s: At not monotone: At(%v) = %v < %v", name, n, at, prev)
		}
		prev = at
		got := p.Count(at)
		// 1 ns of slack at the highest rate, plus float rounding.
		if tol := 1e-9*MaxRate + 1e-9*n; math.Abs(got-n) > tol {
			t.Fatalf("%s: Count(At(%v)) = %v (at %v)", name, n, got, at)
		}
	}
}

func TestAtInvertsCount(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"1", "100000", "10s:50000", "500,10s:1500,1h:1500", "1000,10s:0",
		"step:100+100/10s", "step:0+7/3s..50", "step:1000+0/1s", "step:5+5/1s..5", "1s:1,1s:0,1s:1"} {
		checkInverse(t, in, MustParse(in).Profile, 2*time.Hour)
	}
}

func TestAtBeyondEnd(t *testing.T) {
	t.Parallel()
	p := MustParse("10s:1000").Profile
	if _, ok := p.At(5001); ok {
		t.Error("At past the profile's total count should report false")
	}
	if _, ok := Constant(0).At(1); ok {
		t.Error("a zero rate never reaches 1")
	}
	if at, ok := p.At(5000); !ok || at != 10*time.Second {
		t.Errorf("At(total) = %v, %v; want 10s, true", at, ok)
	}
}

// Hours-long schedules do not drift: unit n of a constant rate is due at
// exactly n/rate, also far into a run.
func TestNoDrift(t *testing.T) {
	t.Parallel()
	c := Constant(100000)
	n := 100000.0 * 24 * 3600 // one day
	at, _ := c.At(n)
	if at != 24*time.Hour {
		t.Fatalf("At(one day of units) = %v", at)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"max", "5000", "2.5k", "1M/s", "30s:1000,5m:20000,1h:20000", "500,10s:0",
		"step:1000+500/30s..20000", "step:0+1/1ns", "1e9", "0", "-1", "step:", ",", "1h:1e9,1h:0", "9999999h:1",
		"1m", "30s:1m", "step:1m+1k/1s", "1.5m/s", "m", "-1m", "NaNm", "1e9m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		// A lower-case m never reads as mega (1m is no million per second).
		if err == nil && !r.Max && strings.HasSuffix(strings.TrimSuffix(strings.TrimSpace(s), "/s"), "m") && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "step:") && !strings.Contains(s, ":") {
			t.Fatalf("accepted %q", s)
		}
		if err != nil {
			if r.Profile != nil || r.Max {
				t.Fatalf("error %v with a non-zero rate", err)
			}
			return
		}
		if r.Max {
			return
		}
		p := r.Profile
		// Never panics, counts are finite, non-negative and monotone.
		prev := 0.0
		for _, e := range []time.Duration{0, time.Millisecond, time.Second, time.Minute, time.Hour, 48 * time.Hour} {
			c := p.Count(e)
			if math.IsNaN(c) || c < prev-1e-6*math.Max(1, prev) {
				t.Fatalf("Count(%v) = %v after %v", e, c, prev)
			}
			prev = c
			if rate := p.RateAt(e); math.IsNaN(rate) || rate < 0 {
				t.Fatalf("RateAt(%v) = %v", e, rate)
			}
			if c > 1 {
				at, ok := p.At(c)
				if !ok || at < 0 || at > e+time.Millisecond {
					t.Fatalf("At(Count(%v)=%v) = %v, %v", e, c, at, ok)
				}
			}
		}
	})
}

func TestScale(t *testing.T) {
	t.Parallel()
	p := Scale(MustParse("10s:4000").Profile, 0.25)
	if got := p.Count(10 * time.Second); math.Abs(got-5000) > 1e-6 {
		t.Errorf("Count = %v, want 5000 (a quarter of 20000)", got)
	}
	if got := p.RateAt(5 * time.Second); got != 500 {
		t.Errorf("RateAt = %v, want 500", got)
	}
	checkInverse(t, "scaled", p, 10*time.Second)
	if Scale(Constant(5), 1) != Constant(5) {
		t.Error("Scale by 1 should return the profile")
	}
}

// Peak is the highest rate a profile asks for, worked out by hand.
func TestPeak(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want float64
	}{
		{"5000", 5000},
		{"30s:1000,5m:20000,1h:500", 20000},
		{"500,30s:100", 500},
		{"step:1000+500/30s..20000", 20000},
		{"step:1000+500/30s", math.Inf(1)},
		{"max", math.Inf(1)},
	} {
		r, err := Parse(tc.rate)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Peak(); got != tc.want {
			t.Errorf("Peak(%s) = %v, want %v", tc.rate, got, tc.want)
		}
		if !r.Max {
			if got := Scale(r.Profile, 0.25).Peak(); got != tc.want/4 {
				t.Errorf("Peak of %s scaled by 1/4 = %v, want %v", tc.rate, got, tc.want/4)
			}
		}
	}
}

// A rate's text is what the summary, /status and the console show: a
// rate given with blanks around it (a /control form's " 500 ") showed
// as "rate  500 ,".
func TestRateTextTrimmed(t *testing.T) {
	for in, want := range map[string]string{" 500 ": "500", "\t30s:1000,5m:2000 ": "30s:1000,5m:2000", " max": "max"} {
		r, err := Parse(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if r.String() != want {
			t.Errorf("Parse(%q).String() = %q, want %q", in, r.String(), want)
		}
	}
}

func TestSplitSuffix(t *testing.T) {
	for _, c := range []struct {
		in, num string
		mult    float64
	}{
		{"2.5k", "2.5", 1e3}, {"3K", "3", 1e3}, {"1M", "1", 1e6}, {"4g", "4", 1e9}, {"4G", "4", 1e9},
		{"7", "7", 1}, {"1m", "1m", 1}, {"", "", 1}, {"k", "", 1e3},
	} {
		num, mult := SplitSuffix(c.in)
		if num != c.num || mult != c.mult {
			t.Errorf("SplitSuffix(%q) = %q, %g; want %q, %g", c.in, num, mult, c.num, c.mult)
		}
	}
}
