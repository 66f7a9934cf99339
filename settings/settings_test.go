package settings

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Parse and Of read a command's own settings struct the
// way config.Load reads a workload: defaults, every problem at once naming its
// variable, boolean settings marked.
func TestParse(t *testing.T) {
	t.Parallel()
	type opts struct {
		Out     string        `env:"OUT" help:"output"`
		Workers int           `env:"WORKERS" envDefault:"2" help:"workers"`
		Every   time.Duration `env:"EVERY" envDefault:"1s" help:"period"`
		Quiet   bool          `env:"QUIET" help:"no output"`
	}
	var o opts
	if err := Parse(&o, map[string]string{"SOAKD_GEN_OUT": "x", "SOAKD_GEN_QUIET": "true"}, "SOAKD_GEN_"); err != nil {
		t.Fatal(err)
	}
	if o != (opts{Out: "x", Workers: 2, Every: time.Second, Quiet: true}) {
		t.Errorf("parsed %+v", o)
	}
	err := Parse(&o, map[string]string{"SOAKD_GEN_WORKERS": "many", "SOAKD_GEN_EVERY": "soon"}, "SOAKD_GEN_")
	for _, want := range []string{"SOAKD_GEN_WORKERS: ", "SOAKD_GEN_EVERY: "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	var got []string
	for _, s := range Of(&opts{}, "SOAKD_GEN_") {
		got = append(got, fmt.Sprintf("%s --%s %s %v", s.Key, s.Flag, s.Default, s.Bool))
	}
	want := []string{"SOAKD_GEN_OUT --gen-out  false", "SOAKD_GEN_WORKERS --gen-workers 2 false", "SOAKD_GEN_EVERY --gen-every 1s false", "SOAKD_GEN_QUIET --gen-quiet  true"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Of:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A value a duration, boolean or number setting cannot parse is named with
// what the setting takes, not with the Go parser that refused it
// (strconv.ParseFloat: parsing "x": invalid syntax).
func TestParseErrorsSayWhatTheSettingTakes(t *testing.T) {
	t.Parallel()
	type opts struct {
		Every time.Duration `env:"EVERY" help:"period"`
		Quiet bool          `env:"QUIET" help:"no output"`
		Share float64       `env:"SHARE" help:"fraction"`
	}
	var o opts
	err := Parse(&o, map[string]string{"SOAKD_X_EVERY": "5", "SOAKD_X_QUIET": "maybe", "SOAKD_X_SHARE": "half"}, "SOAKD_X_")
	for _, want := range []string{
		`SOAKD_X_EVERY: "5" is not a duration (want a number with a unit: 500ms, 10s, 1m30s, 2h)`,
		`SOAKD_X_QUIET: "maybe" is not a boolean (want true or false, 1 or 0)`,
		`SOAKD_X_SHARE: "half" is not a number (want e.g. 0.5, 10, 1e-3 or 2.5k)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %s", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "strconv") || strings.Contains(err.Error(), "time:")) {
		t.Errorf("error names the Go parser: %v", err)
	}
	err = Parse(&o, map[string]string{"SOAKD_X_SHARE": "1e999"}, "SOAKD_X_")
	if err == nil || !strings.Contains(err.Error(), `SOAKD_X_SHARE: "1e999" is out of range`) {
		t.Errorf("SHARE=1e999: %v", err)
	}
	err = Parse(&o, map[string]string{"SOAKD_X_SHARE": "2k"}, "SOAKD_X_")
	if err != nil || o.Share != 2000 {
		t.Errorf("SHARE=2k: %v, %v", o.Share, err)
	}
}

// A number setting (MAX_RATE, CAPACITY_START) takes the k, M and G a rate
// in RATE takes: CAPACITY_MAX=100k was "not a number" beside RATE=100k.
func TestParseNumber(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{
		"0": 0, "0.25": 0.25, "1e3": 1000, "2.5k": 2500, "3K": 3000, " 1M ": 1e6, "1.5G": 1.5e9, "2g": 2e9, "-2k": -2000, "1e-3": 0.001,
	} {
		if got, err := ParseNumber(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"5m":     "lower-case m is ambiguous: write M for a million (5M)",
		"Infm":   "invalid syntax",
		"1e308k": "value out of range",
		"k":      "invalid syntax",
		"2.5x":   "invalid syntax",
		"1kk":    "invalid syntax",
		"":       "invalid syntax",
	} {
		if _, err := ParseNumber(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", in, err, want)
		}
	}
}

// A setting's name in lower case, or with - or . for _, is an unknown
// variable with the setting it was meant to be as the hint: it was
// ignored without a word (soakd_iot_rate=7 in an env file left the rate
// at its default). Other variables are not soakd's.
func TestMisspelledNamesAreUnknown(t *testing.T) {
	t.Parallel()
	known := []Setting{{Key: "SOAKD_IOT_RATE"}, {Key: "SOAKD_IOT_WORKERS"}}
	env := map[string]string{"soakd_iot_rate": "7", "SOAKD-IOT-WORKERS": "3", "SOAKD.IOT.RATE": "5", "soakd_iot_rat": "1",
		"SOAKD_IOT_RATE": "9", "HOME": "/", "path": "/bin", "soak-test": "x"}
	unk := UnknownVars(env, known)
	if strings.Join(unk, " ") != "SOAKD-IOT-WORKERS SOAKD.IOT.RATE soakd_iot_rat soakd_iot_rate" {
		t.Fatalf("unknown %v", unk)
	}
	var got []string
	for _, err := range UnknownVarErrors(unk, known, nil) {
		got = append(got, err.Error())
	}
	for i, want := range []string{"SOAKD_IOT_WORKERS", "SOAKD_IOT_RATE", "SOAKD_IOT_RATE", "SOAKD_IOT_RATE"} {
		if !strings.Contains(got[i], unk[i]+": unknown variable (did you mean "+want+"?)") {
			t.Errorf("%s: %q, want a hint of %s", unk[i], got[i], want)
		}
	}
}

// twoProblems is a setting whose value can have several problems at once.
type twoProblems struct{}

func (*twoProblems) UnmarshalText(b []byte) error {
	var errs []error
	for _, p := range strings.Split(string(b), ",") {
		errs = append(errs, fmt.Errorf("unknown item %q", p))
	}
	return errors.Join(errs...)
}

// Each problem of a value that has several is a problem of its own,
// naming the variable. Bug caught: QUERIES=bogus1,bogus2 printed the
// second problem on a line of its own with no variable, flush left.
func TestEveryProblemOfAValueNamesTheVariable(t *testing.T) {
	t.Parallel()
	var o struct {
		Items twoProblems `env:"ITEMS" help:"items"`
	}
	got := Problems(Parse(&o, map[string]string{"SOAKD_X_ITEMS": "a,b"}, "SOAKD_X_"))
	want := []string{`SOAKD_X_ITEMS: unknown item "a"`, `SOAKD_X_ITEMS: unknown item "b"`}
	if len(got) != len(want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
	for i, e := range got {
		if e.Error() != want[i] {
			t.Errorf("problem %d: %q, want %q", i, e, want[i])
		}
	}
}
