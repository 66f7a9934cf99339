package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq"}, p)
	w := cfg.Workload[0]
	if w.Source != "seq" {
		t.Errorf("SOURCE should default to the workload name when it names a source, got %q", w.Source)
	}
	// No target: the built-in one, whose series batches are sized for
	// about 50 writes a second (1000 rows/s ÷ 50) so the first charts are
	// steady lines.
	if w.Workers != 4 || w.BatchSize != 20 || w.MaxLag != time.Second || w.Rate.String() != "1000" {
		t.Errorf("defaults: %+v", w)
	}
	// A configured target keeps BATCH_SIZE's documented default.
	cfg = loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://"}, p)
	if w := cfg.Workload[0]; w.BatchSize != 1000 {
		t.Errorf("BATCH_SIZE with a target: %d, want 1000", w.BatchSize)
	}
	if cfg.Listen != ":9480" || cfg.ShutdownGrace != 30*time.Second {
		t.Errorf("global defaults: %+v", cfg)
	}
}

// Every problem is reported at once, each naming its variable.
func TestConfigErrorsNameVariables(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	env := map[string]string{
		"SOAKD_WORKLOADS":    "a,b",
		"SOAKD_A_SOURCE":     "seq",
		"SOAKD_A_RATE":       "30s:fast",
		"SOAKD_A_WORKERS":    "-3",
		"SOAKD_A_MAX_LAG":    "soon",
		"SOAKD_A_TARGET":     "postgress://db/x",
		"SOAKD_B_SOURCE":     "nope",
		"SOAKD_DURATION":     "1 hour",
		"SOAKD_A_DEVICES":    "0",
		"SOAKD_LOG_LEVEL":    "loud",
		"SOAKD_A_BATCH_SIZE": "0",
	}
	cfg, err := Load(env, p.Sources)
	text := cfg.Check(p, err).Error()
	if n := strings.Count(text, "SOAKD_A_RATE"); n != 1 {
		t.Errorf("SOAKD_A_RATE reported %d times, want once:\n%s", n, text)
	}
	for _, want := range []string{
		`SOAKD_A_RATE: rate "30s:fast"`,
		`SOAKD_A_WORKERS: -3 is out of range`,
		`SOAKD_A_MAX_LAG: `,
		`SOAKD_A_TARGET: unknown scheme "postgress"`,
		`SOAKD_B_SOURCE: unknown source "nope" (known: seq)`,
		`SOAKD_DURATION: `,
		`SOAKD_A_DEVICES: 0 is out of range`,
		`SOAKD_LOG_LEVEL: "loud"`,
		`SOAKD_A_BATCH_SIZE: 0 is out of range`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("errors do not mention %q:\n%s", want, text)
		}
	}
}

func TestConfigMoreErrors(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"bad workload name": {map[string]string{"SOAKD_WORKLOADS": "Iot"}, "SOAKD_WORKLOADS: workload name \"Iot\""},
		"duplicate":         {map[string]string{"SOAKD_WORKLOADS": "seq,seq"}, "listed twice"},
		"none":              {map[string]string{"SOAKD_WORKLOADS": " , "}, "no workload to run"},
		"no source":         {map[string]string{"SOAKD_WORKLOADS": "x"}, `SOAKD_X_SOURCE: not set and "x" names no source`},
		"null params":       {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://?latency=fast"}, "SOAKD_SEQ_TARGET: latency \"fast\""},
		"both passwords":    {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_PASSWORD": "a", "SOAKD_SEQ_PASSWORD_FILE": "/etc/hostname"}, "set only one of"},
		"missing file":      {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TOKEN_FILE": "/nonexistent/tok"}, "SOAKD_SEQ_TOKEN_FILE: cannot read file"},
		"bad shard":         {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_SHARD": "4/4"}, "SOAKD_SEQ_SHARD: "},
		"bad listen":        {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "9480"}, "SOAKD_LISTEN: \"9480\" is not host:port"},
		"listen port":       {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "127.0.0.1:99999"}, `SOAKD_LISTEN: port 99999 of "127.0.0.1:99999" is above 65535`},
		// Bug caught: these passed soakd config --check and failed the run.
		"listen port -1":    {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": "127.0.0.1:-1"}, `SOAKD_LISTEN: port "-1" of "127.0.0.1:-1" is not a port number`},
		"listen port name":  {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": ":abc"}, `SOAKD_LISTEN: port "abc" of ":abc" is not a port number`},
		"listen host blank": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": " 127.0.0.1:9480"}, `SOAKD_LISTEN: host " 127.0.0.1" of " 127.0.0.1:9480" holds white space`},
		"summary dir":       {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SUMMARY_JSON": "/nonexistent/x.json"}, "SOAKD_SUMMARY_JSON: cannot write /nonexistent/x.json: its directory /nonexistent does not exist"},
		"report dir":        {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_REPORT": "/nonexistent/r.html"}, "SOAKD_REPORT: cannot write"},
		"summary is dir":    {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SUMMARY_JSON": "/tmp"}, "SOAKD_SUMMARY_JSON: /tmp is a directory: name a file, e.g. /tmp/summary.json"},
		"report is dir":     {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_REPORT": "/tmp/"}, "SOAKD_REPORT: /tmp/ is a directory: name a file, e.g. /tmp/report.html"},
		"negative grace":    {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SHUTDOWN_GRACE": "-1s"}, "SOAKD_SHUTDOWN_GRACE: must not be negative"},
		"negative slack":    {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_SLACK": "-1us"}, "SOAKD_SEQ_SLACK: -1µs is out of range [0, 1s]"},
		"slack past lag": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_SLACK": "101ms", "SOAKD_SEQ_MAX_LAG": "200ms"},
			"SOAKD_SEQ_SLACK: 101ms must be at most half of MAX_LAG (200ms)"},
		"above max rate": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "5000", "SOAKD_SEQ_RATE": "1m:6000"},
			`SOAKD_SEQ_RATE: "1m:6000" reaches 6000/s, above SOAKD_MAX_RATE=5000`},
		"load above max rate": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "5000", "SOAKD_SEQ_LOAD_RATE": "10000"},
			`SOAKD_SEQ_LOAD_RATE: "10000" reaches 10000/s`},
		"load rate zero": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_LOAD_RATE": "0"},
			`SOAKD_SEQ_LOAD_RATE: "0" never loads a record`},
		"load stages at zero": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_LOAD_RATE": "10s:0"},
			`SOAKD_SEQ_LOAD_RATE: "10s:0" never loads a record`},
		"uncapped step": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "5000", "SOAKD_SEQ_RATE": "step:100+100/1s"},
			`SOAKD_SEQ_RATE: "step:100+100/1s" reaches +Inf/s`},
		// Bug caught: NaN was said to be negative, +Inf was taken and then
		// said not to cap RATE=max.
		"max rate NaN":      {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "NaN"}, "SOAKD_MAX_RATE: NaN is no rate: want a finite number"},
		"max rate +Inf":     {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "+Inf", "SOAKD_SEQ_RATE": "max"}, "SOAKD_MAX_RATE: +Inf is no rate: want a finite number"},
		"max rate -Inf":     {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "-Inf"}, "SOAKD_MAX_RATE: -Inf is no rate: want a finite number"},
		"negative max rate": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "-5"}, "SOAKD_MAX_RATE: -5 must not be negative"},
		"capped closed loop": {map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "5000", "SOAKD_SEQ_RATE": "max"},
			`SOAKD_SEQ_RATE: "max" runs closed loop, which SOAKD_MAX_RATE=5000 cannot cap`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(tc.env, p.Sources)
			err = cfg.Check(p, err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want containing %q", err, tc.want)
			}
		})
	}
}

// MAX_RATE=+Inf is refused once, as itself, not again through each
// workload's rate it was said not to cap.
func TestInfiniteMaxRateIsOneProblem(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "+Inf", "SOAKD_SEQ_RATE": "max"}, p.Sources)
	err = cfg.Check(p, err)
	if err == nil || !strings.Contains(err.Error(), "SOAKD_MAX_RATE: +Inf is no rate") || strings.Contains(err.Error(), "cannot cap") {
		t.Errorf("got %v, want MAX_RATE refused as no rate, alone", err)
	}
}

// A slack of half MAX_LAG is the most taken: the other half is the target's.
func TestSlackUpToHalfOfMaxLag(t *testing.T) {
	t.Parallel()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_SLACK": "100ms", "SOAKD_SEQ_MAX_LAG": "200ms"}, testPlugins())
	if got := cfg.Workload[0].Slack; got != 100*time.Millisecond {
		t.Errorf("Slack = %v, want 100ms", got)
	}
}

func TestSecretsFromFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_PASSWORD_FILE": pw, "SOAKD_CONTROL_TOKEN_FILE": pw}, p)
	if got, _ := cfg.Workload[0].Secret(); got != "s3cret" {
		t.Errorf("password from file = %q", got)
	}
	if cfg.EffectiveControlToken() != "s3cret" {
		t.Errorf("control token from file = %q", cfg.EffectiveControlToken())
	}
}

// A workload's PASSWORD_FILE or TOKEN_FILE that holds nothing (a secret
// mounted empty) is a configuration error naming it: the workload went on
// without the credential, and a target that asks for one answered 401,
// blamed on the password.
func TestSecretFileEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := testPlugins()
	for i, text := range []string{"", "\n", "\r\n"} {
		f := filepath.Join(dir, fmt.Sprintf("empty%d", i))
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"SOAKD_SEQ_PASSWORD_FILE", "SOAKD_SEQ_TOKEN_FILE"} {
			_, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", key: f}, p.Sources)
			if err == nil || !strings.Contains(err.Error(), key+": "+f+" holds no") {
				t.Errorf("%s holding %q: %v, want a configuration error naming it", key, text, err)
			}
		}
	}
	// A file that cannot be read is said once, as such.
	absent := filepath.Join(dir, "absent")
	_, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TOKEN_FILE": absent}, p.Sources)
	if err == nil || strings.Contains(err.Error(), "holds no") || !strings.Contains(err.Error(), "cannot read file") {
		t.Errorf("an unreadable token file: %v", err)
	}
}

// A control token file's surrounding white space is no part of the token
// (HTTP drops it from the header that carries it: " tok \n" made every
// request 401), and a blank or empty file is a configuration error naming
// SOAKD_CONTROL_TOKEN_FILE: "\n" disabled /control though
// SOAKD_CONTROL_TOKEN was set, an empty file fell back to it, both without
// a word.
func TestControlTokenFileBlank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CONTROL_TOKEN_FILE": write("spaced", " tok \r\n")}, p)
	if got := cfg.EffectiveControlToken(); got != "tok" {
		t.Errorf("token from \" tok \\r\\n\" = %q, want tok", got)
	}
	for _, text := range []string{"", "\n", " \t\r\n"} {
		f := write("blank", text)
		_, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CONTROL_TOKEN_FILE": f, "SOAKD_CONTROL_TOKEN": "tok2"}, p.Sources)
		if err == nil || !strings.Contains(err.Error(), "SOAKD_CONTROL_TOKEN_FILE: "+f+" holds no token") {
			t.Errorf("token file %q: %v, want a configuration error naming SOAKD_CONTROL_TOKEN_FILE", text, err)
		}
	}
	// The same of the token itself: blanks only disabled /control.
	if _, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CONTROL_TOKEN": " \t "}, p.Sources); err == nil ||
		!strings.Contains(err.Error(), "SOAKD_CONTROL_TOKEN: is blank") {
		t.Errorf("a blank SOAKD_CONTROL_TOKEN: %v, want a configuration error naming it", err)
	}
	if _, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_CONTROL_TOKEN": ""}, p.Sources); err != nil {
		t.Errorf("an empty SOAKD_CONTROL_TOKEN (control disabled): %v", err)
	}
}

func TestSettingsAndUnknownVars(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq"}, p)
	var keys []string
	for _, s := range cfg.Settings() {
		keys = append(keys, s.Key)
		if s.Help == "" {
			t.Errorf("%s has no help", s.Key)
		}
		if want := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.Key, "SOAKD_"), "_", "-")); s.Flag != want {
			t.Errorf("%s: flag %q, want %q", s.Key, s.Flag, want)
		}
	}
	for _, want := range []string{"SOAKD_WORKLOADS", "SOAKD_SEQ_RATE", "SOAKD_SEQ_DEVICES", "SOAKD_SEQ_PASSWORD_FILE"} {
		if !strings.Contains(strings.Join(keys, " "), want) {
			t.Errorf("settings lack %s", want)
		}
	}
	unk := settings.UnknownVars(map[string]string{"SOAKD_SEQ_RAT": "1", "SOAKD_SEQ_RATE": "1", "SOAKD_SERVICE_HOST": "x", "SOAKD_PORT_9480_TCP": "x", "HOME": "/"}, cfg.Settings())
	if strings.Join(unk, ",") != "SOAKD_SEQ_RAT" {
		t.Errorf("UnknownVars = %v", unk)
	}
}

// Any values in any settings give errors, never a panic, and a config
// that passes Check has sane values.
func FuzzConfig(f *testing.F) {
	f.Add("seq", "1000", "4", "1s", "null://", "0/1", "10")
	f.Add("a,b", "step:1+1/1s..5", "0", "-1s", "postgres://x", "9/3", "-5")
	f.Add("seq", "30s:1e9,1h:0", "99999999999", "1h", "null://?latency=exp:1ms&capacity=1e12", "", "0")
	// Counts as 1e1, 1_000 and 1k; not whole; a rate with a lower-case m.
	f.Add("seq", "1m", "1e1", "1s", "null://", "", "1_000")
	f.Add("seq", "2.5M", "1.5", "1s", "-", "", "1k")
	f.Add("seq", "30s:1m", "1e19", "1s", "file:///nonexistent/x", "", "1e-3")
	p := testPlugins()
	f.Fuzz(func(t *testing.T, workloads, rate, workers, maxLag, target, shard, devices string) {
		envm := map[string]string{"SOAKD_WORKLOADS": workloads}
		for _, w := range strings.Split(workloads, ",") {
			pre := "SOAKD_" + strings.ToUpper(w) + "_"
			envm[pre+"SOURCE"] = "seq"
			envm[pre+"RATE"] = rate
			envm[pre+"WORKERS"] = workers
			envm[pre+"MAX_LAG"] = maxLag
			envm[pre+"TARGET"] = target
			envm[pre+"SHARD"] = shard
			envm[pre+"DEVICES"] = devices
		}
		cfg, err := Load(envm, p.Sources)
		if err := cfg.Check(p, err); err != nil {
			return
		}
		for _, w := range cfg.Workload {
			if w.Workers < 1 || w.MaxLag <= 0 || w.Slack < 0 || 2*w.Slack > w.MaxLag || (w.Rate.Profile == nil && !w.Rate.Max) {
				t.Fatalf("accepted a bad workload: %+v", w)
			}
		}
	})
}

// Validate parses each target once, the built-in one included; the
// parsed value travels with the workload, its redacted form for display.
func TestValidateResolvesTargets(t *testing.T) {
	p := testPlugins()
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
		"SOAKD_A_TARGET", "NULL://u:hunter2@x/?latency=1ms"), p)
	a, b := cfg.Workload[0], cfg.Workload[1]
	if a.Builtin || a.Sink.Scheme() != "null" || a.Sink.URL.Query().Get("latency") != "1ms" {
		t.Errorf("a: builtin %v, target %+v", a.Builtin, a.Sink.URL)
	}
	if strings.Contains(a.Sink.Redacted, "hunter2") || !strings.Contains(a.Sink.Redacted, "latency=1ms") {
		t.Errorf("a: redacted %q", a.Sink.Redacted)
	}
	if !b.Builtin || b.Sink.Redacted != p.Builtin[sources.Series] {
		t.Errorf("b: builtin %v, target %q, want the built-in %q", b.Builtin, b.Sink.Redacted, p.Builtin[sources.Series])
	}
}

// SOAKD_MAX_RATE below the default LOAD_RATE (10000) caps that default
// instead of refusing every workload that does not set a LOAD_RATE, even
// one without a load phase.
func TestMaxRateCapsTheDefaultLoadRate(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	cfg, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_MAX_RATE": "5000", "SOAKD_SEQ_RATE": "100"}, p.Sources)
	if err == nil {
		err = cfg.Validate(p)
	}
	if err != nil {
		t.Fatalf("MAX_RATE=5000 and no LOAD_RATE: %v", err)
	}
	if got := cfg.Workload[0].LoadRate.Profile.Peak(); got != 5000 {
		t.Errorf("LOAD_RATE %g/s under MAX_RATE=5000, want 5000", got)
	}
}

// The rate settings that are one number take RATE's suffixes:
// MAX_RATE=2.5k beside RATE=2k was "not a number".
func TestRateSettingsTakeSuffixes(t *testing.T) {
	t.Parallel()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_RATE": "2k", "SOAKD_MAX_RATE": "2.5k",
		"SOAKD_CAPACITY_START": "1k", "SOAKD_CAPACITY_MAX": "2.5k"}, testPlugins())
	if cfg.MaxRate != 2500 || cfg.Capacity.Start != 1000 || cfg.Capacity.Max != 2500 {
		t.Errorf("MAX_RATE %g, CAPACITY_START %g, CAPACITY_MAX %g; want 2500, 1000, 2500", cfg.MaxRate, cfg.Capacity.Start, cfg.Capacity.Max)
	}
}

// Every address net.Listen takes passes: an IPv6 literal, a host name, a
// service name for the port, an empty port (any free one).
func TestListenValuesTaken(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for _, l := range []string{":9480", "[::1]:0", "localhost:9480", "127.0.0.1:", ":http", "off"} {
		cfg, err := Load(map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_LISTEN": l}, p.Sources)
		if err = cfg.Check(p, err); err != nil {
			t.Errorf("SOAKD_LISTEN=%q: %v", l, err)
		}
	}
}
