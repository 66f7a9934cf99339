package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/thresholds"
)

// ListenOff as SOAKD_LISTEN disables the HTTP server (an empty value
// means the default, as for every setting).
const ListenOff = "off"

// EnvPrefix starts every soakd environment variable.
const EnvPrefix = settings.EnvPrefix

// MaxWorkers bounds a workload's WORKERS and generate's: each is a
// goroutine with its own buffers, and more would only exhaust memory.
const MaxWorkers = 100000

// Config is soakd's whole configuration, read from SOAKD_* environment
// variables (each also a flag, see Flags). Workload settings are read from
// SOAKD_<W>_* for each name W in Workloads.
type Config struct {
	Workloads        []string      `env:"WORKLOADS" envDefault:"iot,kv" envSeparator:"," help:"workloads to run; each workload W reads its settings from SOAKD_<W>_*"`
	Listen           string        `env:"LISTEN" envDefault:":9480" help:"HTTP address for /metrics /healthz /readyz /status /control; off = no HTTP server"`
	TLSCertFile      string        `env:"TLS_CERT_FILE" help:"path of a PEM certificate (with its chain) for the HTTP address: with TLS_KEY_FILE, soakd serves HTTPS only"`
	TLSKeyFile       string        `env:"TLS_KEY_FILE" help:"path of the PEM private key (unencrypted) of TLS_CERT_FILE"`
	Duration         time.Duration `env:"DURATION" envDefault:"0s" help:"hard stop for the whole process after this long, load phases included; 0 = until every workload ends or SIGINT/SIGTERM"`
	ShutdownGrace    time.Duration `env:"SHUTDOWN_GRACE" envDefault:"30s" help:"on stop, how long writes in flight may take to finish before they are cancelled"`
	Progress         time.Duration `env:"PROGRESS_INTERVAL" envDefault:"10s" help:"how often a progress line is logged; 0 = never"`
	LogLevel         string        `env:"LOG_LEVEL" envDefault:"info" help:"debug, info, warn or error"`
	LogFormat        string        `env:"LOG_FORMAT" envDefault:"auto" help:"auto (console on a terminal, JSON otherwise), json or console"`
	MaxRate          float64       `env:"MAX_RATE" envDefault:"0" help:"hard cap on every workload's rate (units/s, the total over shards): RATE, LOAD_RATE and /control can never ask for more; 0 = no cap; a capped run cannot use RATE=max"`
	ControlToken     string        `env:"CONTROL_TOKEN" secret:"true" help:"bearer token that enables POST /control (set rate, pause, resume); empty = /control disabled"`
	ControlTokenFile string        `env:"CONTROL_TOKEN_FILE,file" secret:"true" help:"file holding the control token (e.g. a Kubernetes secret); read again at every POST /control, so a rotated token takes effect at once"`
	SummaryJSON      string        `env:"SUMMARY_JSON" help:"write the end-of-run summary as JSON to this file (flag --summary-json)"`
	Report           string        `env:"REPORT" help:"at the end of the run, also when stopped by SIGINT/SIGTERM, write a self-contained HTML report (settings, environment, summary, charts) to this file (flag --report)"`
	Pprof            bool          `env:"PPROF" envDefault:"false" help:"serve /debug/pprof on the HTTP address"`

	// ControlTokenPath is CONTROL_TOKEN_FILE's path, which /control reads
	// the token from again at every request.
	ControlTokenPath string `env:"-"`

	// Capacity holds soakd capacity's settings (SOAKD_CAPACITY_*), Sweep
	// soakd sweep's (SOAKD_SWEEP_*).
	Capacity CapacityConfig `envPrefix:"CAPACITY_"`
	Sweep    SweepConfig    `envPrefix:"SWEEP_"`

	// Workload holds one entry per name in Workloads, in that order.
	Workload []*Workload `env:"-"`
}

// builtinBatch is BATCH_SIZE for a series workload on the built-in
// target: small enough that the peak rate (this process's share of it,
// with SHARD) makes builtinWrites writes a second (at most the usual 1000
// rows). With 1000 rows a write at 1000
// rows/s, one write a second, the per-second rate chart saws between 0
// and twice the rate; 50 writes a second keep it within a few percent.
func builtinBatch(r pace.Rate, sh sources.Shard) int {
	const builtinWrites = 50
	p := r.Peak()
	if sh.Count > 1 {
		p /= float64(sh.Count) // this process's share of the rate
	}
	if math.IsInf(p, 1) || math.IsNaN(p) {
		return 1000
	}
	return int(max(1, min(1000, math.Floor(p/builtinWrites))))
}

// Workload configures one stream of load: a source, a target and a rate.
type Workload struct {
	Name         string        `env:"-"`
	Source       string        `env:"SOURCE" help:"data source: devops, devops-full, iot, massive, kv, seq; default: the workload's name when it names a source"`
	Target       string        `env:"TARGET" secret:"url" help:"sink URL, e.g. postgres://, influx1://, redis://, file:// (soakd config --sinks lists every scheme and its parameters); empty = a built-in target"`
	Rate         pace.Rate     `env:"RATE" envDefault:"1000" help:"max, units/s (5000, 2.5k), stages DUR:TARGET,... (30s:1000,5m:20000) or step:START+STEP/EVERY[..MAX]"`
	Workers      int           `env:"WORKERS" envDefault:"4" help:"concurrent writers (connections)"`
	BatchSize    int           `env:"BATCH_SIZE" envDefault:"1000" help:"rows per write (series sources)"`
	Pipeline     int           `env:"PIPELINE" envDefault:"1" help:"operations per round trip (kv source)"`
	MaxLag       time.Duration `env:"MAX_LAG" envDefault:"1s" help:"scheduled work later than this when a worker gets to it is dropped and counted in soakd_dropped_total"`
	Slack        time.Duration `env:"SLACK" envDefault:"100us" help:"least time between two wake-ups of the scheduler: each hands over every batch due by then, so a larger slack costs less CPU at high rates and sends up to this much later (soakd_dispatch_delay_seconds shows it); 0 = a wake-up per batch"`
	Duration     time.Duration `env:"DURATION" envDefault:"0s" help:"length of this workload's run phase (a load phase before it is not included); 0 = no limit"`
	LoadRate     pace.Rate     `env:"LOAD_RATE" envDefault:"10000" help:"rate of the load phase (kv LOAD=auto: inserting the records the run reads), any RATE grammar; max = as fast as possible; the default is at most SOAKD_MAX_RATE"`
	LoadDuration time.Duration `env:"LOAD_DURATION" envDefault:"0s" help:"bound of the load phase; when it passes, the run starts with the records loaded so far (a warning says how many); 0 = until every record is loaded"`
	Timeout      time.Duration `env:"TIMEOUT" envDefault:"30s" help:"deadline of one write; 0 = none"`
	StartTimeout time.Duration `env:"START_TIMEOUT" envDefault:"0s" help:"how long to wait for the target to come up at start (connect, schema, probes; retried with backoff while it is unreachable) before the run fails (exit 1); 0 = wait until stopped"`
	Retries      int           `env:"RETRIES" envDefault:"2" help:"resend a failed batch this many times when the sink says it is safe"`
	RetryBackoff time.Duration `env:"RETRY_BACKOFF" envDefault:"100ms" help:"first retry wait; doubles per attempt up to 5s, with jitter; a server's Retry-After wins"`
	Verify       float64       `env:"VERIFY" envDefault:"0" help:"fraction of acknowledged rows or records read back during the run and compared with what the seed says they hold (soakd_verify_*), e.g. 0.01; 0 = off"`
	VerifyDelay  time.Duration `env:"VERIFY_DELAY" envDefault:"0s" help:"how long after its acknowledgement a picked row or record is read back (for eventually consistent targets)"`
	Seed         uint64        `env:"SEED" envDefault:"1" help:"random seed; the same seed gives the same data"`
	Shard        sources.Shard `env:"SHARD" help:"i/N: this process owns the i-th of N disjoint slices of devices/keys and 1/N of the rate; auto = JOB_COMPLETION_INDEX of JOB_COMPLETIONS (a Kubernetes Indexed Job)"`
	Password     string        `env:"PASSWORD" secret:"true" help:"target password when the URL has none"`
	PasswordFile string        `env:"PASSWORD_FILE,file" secret:"true" help:"file holding the target password"`
	Token        string        `env:"TOKEN" secret:"true" help:"target API token when the URL has none"`
	TokenFile    string        `env:"TOKEN_FILE,file" secret:"true" help:"file holding the target API token"`
	Thresholds   string        `env:"THRESHOLDS" help:"pass/fail checks of the run phase, e.g. p99<50ms, errors<0.1%, achieved>99%, dropped=0, op:read.p99<5ms@1m, drift.p99<20%; ! stops the run when one fails; a failed check makes soakd exit 1"`
	DriftWarmup  time.Duration `env:"DRIFT_WARMUP" envDefault:"1m" help:"start of the run phase that drift. thresholds skip: their early window begins here"`
	// WatchInterval and WatchProcess are the watch of the target's own
	// figures (package targetwatch).
	WatchInterval time.Duration `env:"WATCH_INTERVAL" envDefault:"10s" help:"how often the target's own memory, storage and CPU time are read while the run goes (soakd_target_*, /status target_figures), where its sink can read them or WATCH_PROCESS names its process; 0 = off, else at least 1s"`
	WatchProcess  string        `env:"WATCH_PROCESS" help:"the target's process, whose RSS and CPU time are read from /proc: a pid, or a name matched against each process's comm and argv[0] base name (a sidecar with shareProcessNamespace); empty = none"`

	// SourceSettings holds the source's own settings (made by its
	// sources.Entry), parsed from the same SOAKD_<W>_* prefix; nil when
	// the source is unknown.
	SourceSettings sources.Settings `env:"-"`
	// BuiltinDefaults lists the VAR=value defaults applied because the
	// workload uses the built-in target (see sources.Entry.BuiltinDefaults).
	BuiltinDefaults []string `env:"-"`
	// Sink is the target URL, parsed once by Validate: TARGET, or the
	// built-in target of the source's kind (then Builtin is true).
	Sink    sinks.Target `env:"-"`
	Builtin bool         `env:"-"`

	// builtinBatch: BatchSize is the built-in target's default for RATE
	// (see builtinBatch), not a setting; soakd capacity sizes it for the
	// search's highest rate instead.
	builtinBatch bool

	// ResetFirst empties what soakd wrote to the target before the first phase
	// (soakd sweep's SOAKD_SWEEP_RESET).
	ResetFirst bool `env:"-"`
	// Checks are the parsed THRESHOLDS, set by Validate.
	Checks []thresholds.Check `env:"-"`
}

// BatchUnits is how many units w sends in one write to a source of kind
// k, and the setting that says so: BATCH_SIZE rows of a series source,
// PIPELINE operations or queries otherwise.
func (w *Workload) BatchUnits(k sources.Kind) (n int, setting string) {
	if k == sources.Series {
		return w.BatchSize, "BATCH_SIZE"
	}
	return w.Pipeline, "PIPELINE"
}

// BuiltinTarget names the built-in target w runs against when it sets
// no TARGET, for reports read without the log: "" when it sets one.
func (w *Workload) BuiltinTarget() string {
	if !w.Builtin {
		return ""
	}
	return fmt.Sprintf("the built-in target %s, in soakd's own process (no %sTARGET set)", w.Sink.Redacted, Prefix(w.Name))
}

// Common is what w's source reads of its settings beyond its own.
func (w *Workload) Common() sources.Common {
	return sources.Common{Workload: w.Name, Source: w.Source, Seed: w.Seed, Shard: w.Shard, Builtin: w.Target == ""}
}

// NewSource builds w's source from its settings (see Load). It is cheap
// and does no I/O.
func (w *Workload) NewSource() (sources.Source, error) {
	if w.SourceSettings == nil {
		return nil, fmt.Errorf("BUG: no settings loaded for source %q", w.Source)
	}
	return w.SourceSettings.New(w.Common())
}

// Secret returns the effective password and token (file variants win).
func (w *Workload) Secret() (password, token string) {
	password, token = w.Password, w.Token
	if w.PasswordFile != "" {
		password = strings.TrimRight(w.PasswordFile, "\r\n")
	}
	if w.TokenFile != "" {
		token = strings.TrimRight(w.TokenFile, "\r\n")
	}
	return password, token
}

// UnservedSettings names the HTTP API's settings that are set while
// SOAKD_LISTEN is off, which serves nothing: a control token, pprof and
// TLS files then do nothing, and a run with them set said not a word.
func (c *Config) UnservedSettings() []string {
	if c.Listen != ListenOff {
		return nil
	}
	var set []string
	for _, s := range []struct {
		key string
		on  bool
	}{
		{"CONTROL_TOKEN", c.ControlToken != ""},
		{"CONTROL_TOKEN_FILE", c.ControlTokenPath != ""},
		{"PPROF", c.Pprof},
		{"TLS_CERT_FILE", c.TLSCertFile != ""},
		{"TLS_KEY_FILE", c.TLSKeyFile != ""},
	} {
		if s.on {
			set = append(set, EnvPrefix+s.key)
		}
	}
	return set
}

// EffectiveControlToken returns the control token (the file variant
// wins), without surrounding white space: HTTP drops it from the header
// that carries the token, so a token ending in a space could never match.
func (c *Config) EffectiveControlToken() string {
	if c.ControlTokenFile != "" {
		return strings.TrimSpace(c.ControlTokenFile)
	}
	return strings.TrimSpace(c.ControlToken)
}

// cfgErr is a problem with the setting key.
func cfgErr(key, format string, args ...any) error {
	return settings.Errorf(key, format, args...)
}

// Prefix is the environment prefix of workload name's settings.
func Prefix(name string) string { return EnvPrefix + strings.ToUpper(name) + "_" }

var workloadName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Load reads the configuration from environ (KEY=VALUE pairs as in
// os.Environ, or a map in tests) with defaults applied. It returns every
// parse problem at once, each naming its environment variable; semantic
// checks are in Validate.
func Load(environ map[string]string, srcs *sources.Registry) (*Config, error) {
	var errs []error
	cfg := &Config{}
	errs = append(errs, settings.Problems(settings.Parse(cfg, environ, EnvPrefix))...)
	cfg.ControlTokenPath = environ[EnvPrefix+"CONTROL_TOKEN_FILE"]
	if f := environ[EnvPrefix+"CONTROL_TOKEN_FILE"]; f != "" && strings.TrimSpace(cfg.ControlTokenFile) == "" {
		// Blank, it disabled /control (or fell back to CONTROL_TOKEN
		// when empty) without a word.
		errs = append(errs, cfgErr(EnvPrefix+"CONTROL_TOKEN_FILE", "%s holds no token (it is empty or blank)", f))
	}
	if cfg.ControlToken != "" && strings.TrimSpace(cfg.ControlToken) == "" {
		// Blanks only: it disabled /control without a word, as a blank
		// file did. Empty is the way to say so.
		errs = append(errs, cfgErr(EnvPrefix+"CONTROL_TOKEN", "is blank: set a token, or leave it empty to keep /control disabled"))
	}
	seen := map[string]bool{}
	for _, raw := range cfg.Workloads {
		name := strings.TrimSpace(raw)
		if name == "" {
			continue
		}
		if !workloadName.MatchString(name) {
			errs = append(errs, cfgErr(EnvPrefix+"WORKLOADS", "workload name %q must be lower case letters, digits and _ (starting with a letter, at most 32)", name))
			continue
		}
		if seen[name] {
			errs = append(errs, cfgErr(EnvPrefix+"WORKLOADS", "workload %q is listed twice", name))
			continue
		}
		seen[name] = true
		w := &Workload{Name: name}
		p := Prefix(name)
		wenv, err := resolveShardAuto(environ, p)
		if err != nil {
			errs = append(errs, err)
		}
		problems := settings.Problems(settings.Parse(w, wenv, p))
		errs = append(errs, problems...)
		errs = append(errs, emptySecretFiles(wenv, p, w, problems)...)
		// The default LOAD_RATE keeps under SOAKD_MAX_RATE, so the cap
		// does not make every workload set a LOAD_RATE, even those
		// without a load phase; a LOAD_RATE set above it is an error.
		if _, set := wenv[p+"LOAD_RATE"]; !set && cfg.MaxRate > 0 && w.LoadRate.Profile != nil &&
			w.LoadRate.Profile.Peak() > cfg.MaxRate {
			w.LoadRate = pace.ConstantRate(cfg.MaxRate)
		}
		if w.Source == "" && srcs.Lookup(name) != nil {
			w.Source = name
		}
		if e := srcs.Lookup(w.Source); e != nil && e.Kind == sources.Series && w.Target == "" {
			if _, set := wenv[p+"BATCH_SIZE"]; !set {
				w.BatchSize, w.builtinBatch = builtinBatch(w.Rate, w.Shard), true
				w.BuiltinDefaults = append(w.BuiltinDefaults, fmt.Sprintf("%sBATCH_SIZE=%d", p, w.BatchSize))
			}
		}
		if e := srcs.Lookup(w.Source); e != nil {
			w.SourceSettings = e.NewSettings()
			wenv := environ
			if w.Target == "" && len(e.BuiltinDefaults) > 0 {
				wenv = maps.Clone(environ)
				for k, v := range e.BuiltinDefaults {
					if _, set := wenv[p+k]; !set {
						wenv[p+k] = v
						w.BuiltinDefaults = append(w.BuiltinDefaults, p+k+"="+v)
					}
				}
				slices.Sort(w.BuiltinDefaults)
			}
			errs = append(errs, settings.Problems(settings.Parse(w.SourceSettings.Fields(), wenv, p))...)
		}
		cfg.Workload = append(cfg.Workload, w)
	}
	if len(cfg.Workload) == 0 && len(errs) == 0 {
		errs = append(errs, cfgErr(EnvPrefix+"WORKLOADS", "no workload to run"))
	}
	return cfg, errors.Join(errs...)
}

// emptySecretFiles reports a PASSWORD_FILE or TOKEN_FILE of w (prefix p)
// that names a file holding nothing (a secret mounted empty, a key
// missing from it): the workload went on without the credential, without
// a word, and a target that asks for one refused it blaming the
// password. A file that could not be read is among problems already.
func emptySecretFiles(env map[string]string, p string, w *Workload, problems []error) []error {
	unread := map[string]bool{}
	for _, e := range problems {
		var se *settings.Error
		if errors.As(e, &se) {
			unread[se.Key] = true
		}
	}
	var errs []error
	for _, f := range []struct{ key, what, content string }{
		{p + "PASSWORD_FILE", "password", w.PasswordFile},
		{p + "TOKEN_FILE", "token", w.TokenFile},
	} {
		// The same trimming as Secret's: what is left is what is sent.
		if name := env[f.key]; name != "" && !unread[f.key] && strings.TrimRight(f.content, "\r\n") == "" {
			errs = append(errs, cfgErr(f.key, "%s holds no %s (it is empty)", name, f.what))
		}
	}
	return errs
}

// Check loads nothing: it runs Validate and drops the problems of settings
// that already failed to parse (their zero values would only repeat them),
// so a user sees each problem once.
func (c *Config) Check(p *Plugins, parseErr error) error {
	return errors.Join(append(settings.Problems(parseErr), settings.Problems(Unparsed(c.Validate(p), parseErr))...)...)
}

// Unparsed is err's problems less those of a setting parseErr says could
// not be read: such a setting holds its zero value, and a check of it
// (CAPACITY_START=1k read as 0, "0: want a rate above 0") would only
// repeat the parse error, misleadingly.
func Unparsed(err, parseErr error) error {
	failed := map[string]bool{}
	for _, e := range settings.Problems(parseErr) {
		var ce *settings.Error
		if errors.As(e, &ce) {
			failed[ce.Key] = true
		}
	}
	var errs []error
	for _, e := range settings.Problems(err) {
		var ce *settings.Error
		if errors.As(e, &ce) && failed[ce.Key] {
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Validate checks cfg without I/O and returns every problem found, each
// naming its environment variable: the daemon's own settings, each
// workload's source and its settings, and each target URL (scheme known,
// accepts the source's kind, parameters valid).
func (c *Config) Validate(p *Plugins) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(EnvPrefix+key, format, args...))
	}
	if c.Listen != ListenOff {
		// What Validate passes, the run must be able to listen on but
		// for the address itself: 127.0.0.1:-1, :abc or a blank in the
		// host passed soakd config --check and failed the run (exit 1).
		if host, port, err := net.SplitHostPort(c.Listen); err != nil {
			bad("LISTEN", "%q is not host:port (e.g. :9480 or 127.0.0.1:9480) or off", c.Listen)
		} else if n, err := strconv.ParseUint(port, 10, 64); err == nil && n > 65535 {
			bad("LISTEN", "port %s of %q is above 65535", port, c.Listen)
		} else if err != nil && port != "" && !isServiceName(port) {
			bad("LISTEN", "port %q of %q is not a port number (0 to 65535; 0 = any free port)", port, c.Listen)
		} else if strings.ContainsFunc(host, unicode.IsSpace) {
			bad("LISTEN", "host %q of %q holds white space", host, c.Listen)
		}
	}
	// The files written at the end: a directory that is not there fails
	// the run after it ran, and the report with it.
	for _, f := range []struct{ key, path string }{{"SUMMARY_JSON", c.SummaryJSON}, {"REPORT", c.Report}} {
		if f.path == "" || f.path == "-" {
			continue
		}
		if dir, ok := outDir(f.path); !ok {
			bad(f.key, "cannot write %s: its directory %s does not exist", f.path, dir)
		} else if isDir(f.path) {
			bad(f.key, "%s is a directory: name a file, e.g. %s", f.path, path.Join(f.path, outName[f.key]))
		}
	}
	switch {
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		bad("TLS_CERT_FILE", "set both %sTLS_CERT_FILE and %sTLS_KEY_FILE for HTTPS, or neither", EnvPrefix, EnvPrefix)
	case c.TLSCertFile != "":
		// Read now, so that a wrong file is a configuration error (exit 2)
		// rather than a failure after the run started.
		if _, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			bad("TLS_CERT_FILE", "cannot load %s with the key %sTLS_KEY_FILE=%s: %v", c.TLSCertFile, EnvPrefix, c.TLSKeyFile, err)
		}
	}
	if c.Duration < 0 {
		bad("DURATION", "must not be negative")
	}
	if c.ShutdownGrace < 0 {
		bad("SHUTDOWN_GRACE", "must not be negative")
	}
	if c.Progress < 0 {
		bad("PROGRESS_INTERVAL", "must not be negative")
	}
	maxRateOK := !math.IsNaN(c.MaxRate) && !math.IsInf(c.MaxRate, 0)
	switch {
	case !maxRateOK:
		bad("MAX_RATE", "%g is no rate: want a finite number of units/s, or 0 for no cap", c.MaxRate)
	case c.MaxRate < 0:
		bad("MAX_RATE", "%g must not be negative: want a number of units/s, or 0 for no cap", c.MaxRate)
	}
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("LOG_LEVEL", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	if !slices.Contains([]string{"auto", "json", "console"}, c.LogFormat) {
		bad("LOG_FORMAT", "%q is not one of auto, json, console", c.LogFormat)
	}
	for _, w := range c.Workload {
		if c.MaxRate > 0 && maxRateOK {
			for _, r := range []struct {
				key  string
				rate pace.Rate
			}{{"RATE", w.Rate}, {"LOAD_RATE", w.LoadRate}} {
				if r.rate.Profile == nil && !r.rate.Max {
					continue // reported by validate
				}
				if err := c.CheckRate(r.rate); err != nil {
					errs = append(errs, cfgErr(Prefix(w.Name)+r.key, "%v", err))
				}
			}
		}
		errs = append(errs, w.validate()...)
		errs = append(errs, w.validatePlugins(p)...)
		var kind sources.Kind
		e := p.Sources.Lookup(w.Source)
		if e != nil {
			kind = e.Kind
		}
		errs = append(errs, w.validateThresholds(kind, e != nil, c.Duration)...)
	}
	errs = append(errs, c.checkSharedKeys()...)
	return errors.Join(errs...)
}

func (w *Workload) validatePlugins(p *Plugins) []error {
	pre := Prefix(w.Name)
	e := p.Sources.Lookup(w.Source)
	if e == nil {
		if w.Source == "" {
			return []error{cfgErr(pre+"SOURCE", "not set and %q names no source (known: %s)", w.Name, strings.Join(p.Sources.Names(), ", "))}
		}
		return []error{cfgErr(pre+"SOURCE", "unknown source %q (known: %s)", w.Source, strings.Join(p.Sources.Names(), ", "))}
	}
	var errs []error
	if w.SourceSettings != nil {
		if err := w.SourceSettings.Validate(w.Common()); err != nil {
			errs = append(errs, PrefixSettingErrors(err, pre)...)
		}
	}
	raw, builtin := w.Target, false
	if raw == "" {
		raw, builtin = p.Builtin[e.Kind], true
	}
	// The sink sees the record shape the source settings give (DATA_TYPE),
	// so a target that cannot store it says so now rather than at open.
	var shape sources.KVShape
	if w.SourceSettings != nil {
		if sh, ok := w.SourceSettings.Fields().(sources.Shaped); ok {
			shape = sh.Shape()
		}
	}
	t, err := sinks.ParseTarget(raw)
	if err == nil {
		err = p.Sinks.CheckShaped(t, e.Kind, shape)
	}
	// A query target whose language lacks some of the types QUERIES asks
	// for says so now rather than at the first such query.
	if err == nil && e.Kind == sources.Queries && w.SourceSettings != nil {
		if qt, ok := w.SourceSettings.Fields().(interface {
			Types(source string) []sources.QueryType
		}); ok {
			if qerr := p.Sinks.CheckQueries(t, qt.Types(w.Source)); qerr != nil {
				errs = append(errs, &settings.Error{Key: pre + "QUERIES", Err: qerr})
			}
		}
	}
	// A sink may report several problems in one URL: each gets its line.
	for _, err := range settings.Problems(err) {
		errs = append(errs, &settings.Error{Key: pre + "TARGET", Err: err})
	}
	if len(errs) == 0 {
		w.Sink, w.Builtin = t, builtin
	}
	return errs
}

// PrefixSettingErrors names the full variable of each *sources.SettingError.
func PrefixSettingErrors(err error, prefix string) []error {
	return settings.Problems(sources.RenameSettings(err, func(setting string, cause error) error {
		if setting == "" {
			setting = "SOURCE"
		}
		return &settings.Error{Key: prefix + setting, Err: cause}
	}))
}

func (w *Workload) validate() []error {
	var errs []error
	p := Prefix(w.Name)
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(p+key, format, args...))
	}
	if w.Workers < 1 || w.Workers > MaxWorkers {
		bad("WORKERS", "%d is out of range [1, %d]", w.Workers, MaxWorkers)
	}
	if w.BatchSize < 1 || w.BatchSize > 10_000_000 {
		bad("BATCH_SIZE", "%d is out of range [1, 10000000]", w.BatchSize)
	}
	if w.Pipeline < 1 || w.Pipeline > 1_000_000 {
		bad("PIPELINE", "%d is out of range [1, 1000000]", w.Pipeline)
	}
	if w.MaxLag <= 0 {
		bad("MAX_LAG", "must be positive (e.g. 1s)")
	}
	if w.Slack < 0 || w.Slack > time.Second {
		bad("SLACK", "%s is out of range [0, 1s]", w.Slack)
	} else if w.MaxLag > 0 && 2*w.Slack > w.MaxLag {
		// The slack may make work that late before it is sent; the rest of
		// MAX_LAG is the target's, so a target that keeps up loses nothing.
		bad("SLACK", "%s must be at most half of MAX_LAG (%s): work the slack alone made late would be dropped", w.Slack, w.MaxLag)
	}
	if w.Duration < 0 {
		bad("DURATION", "must not be negative")
	}
	if w.LoadDuration < 0 {
		bad("LOAD_DURATION", "must not be negative")
	}
	if w.Timeout < 0 {
		bad("TIMEOUT", "must not be negative")
	}
	if w.StartTimeout < 0 {
		bad("START_TIMEOUT", "must not be negative (0 = wait until stopped)")
	}
	if w.Retries < 0 || w.Retries > 100 {
		bad("RETRIES", "%d is out of range [0, 100]", w.Retries)
	}
	if w.RetryBackoff < 0 {
		bad("RETRY_BACKOFF", "must not be negative")
	}
	if w.Password != "" && w.PasswordFile != "" {
		bad("PASSWORD_FILE", "set only one of %sPASSWORD and %sPASSWORD_FILE", p, p)
	}
	if w.Token != "" && w.TokenFile != "" {
		bad("TOKEN_FILE", "set only one of %sTOKEN and %sTOKEN_FILE", p, p)
	}
	if w.Rate.Profile == nil && !w.Rate.Max {
		bad("RATE", "no rate set")
	}
	if w.LoadRate.Profile == nil && !w.LoadRate.Max {
		bad("LOAD_RATE", "no rate set")
	} else if w.LoadRate.Profile != nil && w.LoadRate.Profile.Peak() <= 0 {
		bad("LOAD_RATE", "%q never loads a record: the load phase would wait without end", w.LoadRate.String())
	}
	errs = append(errs, w.validateWatch()...)
	return append(errs, w.validateVerify()...)
}

// minWatchInterval bounds WATCH_INTERVAL from below: reading a target's
// figures costs it a query or a scan of /proc, which more often than
// once a second would weigh on what is measured.
const minWatchInterval = time.Second

// maxPid is the largest pid Linux hands out (PID_MAX_LIMIT).
const maxPid = 1 << 22

// WatchedProcess is what WATCH_PROCESS names: a pid, or else a process
// name (name is "" when it names none).
func (w *Workload) WatchedProcess() (pid int, name string) {
	v := strings.TrimSpace(w.WatchProcess)
	if n, err := strconv.Atoi(v); err == nil {
		return n, ""
	}
	return 0, v
}

// validateWatch checks WATCH_INTERVAL and WATCH_PROCESS.
func (w *Workload) validateWatch() []error {
	var errs []error
	p := Prefix(w.Name)
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(p+key, format, args...))
	}
	if w.WatchInterval < 0 || w.WatchInterval > 0 && w.WatchInterval < minWatchInterval {
		bad("WATCH_INTERVAL", "%v: want 0 (off) or at least %v", w.WatchInterval, minWatchInterval)
	}
	v := strings.TrimSpace(w.WatchProcess)
	if v == "" {
		return errs
	}
	pid, name := w.WatchedProcess()
	switch {
	case w.WatchInterval == 0:
		bad("WATCH_PROCESS", "%q is set, but %sWATCH_INTERVAL=0 turns the watch off", v, p)
	case name == "" && (pid < 1 || pid > maxPid):
		bad("WATCH_PROCESS", "%d is no pid (want 1 to %d, or a process name)", pid, maxPid)
	case strings.ContainsRune(name, '/'):
		bad("WATCH_PROCESS", "%q is a path: give the process's name, its base name (e.g. %s)", name, path.Base(name))
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		bad("WATCH_PROCESS", "%q: a process name has no spaces or control characters (give its comm or argv[0] base name, or a pid)", name)
	case name != "" && strings.TrimLeft(name, "+-0123456789") == "":
		bad("WATCH_PROCESS", "%q is no pid (want 1 to %d, or a process name)", name, maxPid)
	}
	return errs
}

// CheckRate refuses a rate that could exceed MAX_RATE.
func (c *Config) CheckRate(r pace.Rate) error {
	if c.MaxRate <= 0 {
		return nil
	}
	switch peak := r.Peak(); {
	case r.Max:
		return fmt.Errorf("%q runs closed loop, which %sMAX_RATE=%g cannot cap; give a rate", r.String(), EnvPrefix, c.MaxRate)
	case peak > c.MaxRate:
		return fmt.Errorf("%q reaches %g/s, above %sMAX_RATE=%g", r.String(), peak, EnvPrefix, c.MaxRate)
	}
	return nil
}

// GlobalBoolFlag reports whether flag names one of soakd's own (not a
// workload's) true/false settings, e.g. pprof.
func GlobalBoolFlag(flag string) bool {
	for _, s := range settings.Of(&Config{}, EnvPrefix) {
		if s.Bool && s.Flag == flag {
			return true
		}
	}
	return false
}

// Settings lists every setting of cfg: the global ones, then each
// workload's own and its source's, in a stable order.
func (c *Config) Settings() []settings.Setting {
	out := settings.Of(&Config{}, EnvPrefix)
	for _, w := range c.Workload {
		p := Prefix(w.Name)
		out = append(out, settings.Of(&Workload{}, p)...)
		if w.SourceSettings != nil {
			out = append(out, settings.Of(w.SourceSettings.Fields(), p)...)
		}
	}
	return out
}

// settingValues lists the settings environ sets, as VAR=value with
// secrets hidden.
func settingValues(c *Config, environ map[string]string) []string {
	var out []string
	for _, s := range c.Settings() {
		if v, set := environ[s.Key]; set {
			out = append(out, s.Key+"="+s.Shown(v))
		}
	}
	return out
}

// UnknownVars returns the SOAKD_* variables of environ that are no setting
// of c nor one of extra (another command's settings). Variables under a
// workload whose source is unknown are left out: that is reported as its
// own error, and its source's settings cannot be known.
func (c *Config) UnknownVars(environ map[string]string, srcs *sources.Registry, extra ...settings.Setting) []string {
	var out []string
	for _, k := range settings.UnknownVars(environ, append(c.Settings(), extra...)) {
		if !slices.ContainsFunc(c.Workload, func(w *Workload) bool {
			return srcs.Lookup(w.Source) == nil && strings.HasPrefix(k, Prefix(w.Name))
		}) {
			out = append(out, k)
		}
	}
	return out
}

// UnknownVarErrors explains each of the unknown variables unk (see
// settings.UnknownVarErrors): with the closest of settings (did you mean
// ...?), or, for a setting of a workload that is not in workloads, that
// workload's absence. With workloads nil (a command that runs none, as
// generate) there are no workload hints.
func UnknownVarErrors(unk []string, known []settings.Setting, workloads []string) []error {
	if workloads == nil {
		return settings.UnknownVarErrors(unk, known, nil)
	}
	workloadSettings := map[string]bool{} // RATE, BATCH_SIZE, ... of any workload
	for _, w := range workloads {
		p := Prefix(w)
		for _, s := range known {
			if strings.HasPrefix(s.Key, p) {
				workloadSettings[strings.TrimPrefix(s.Key, p)] = true
			}
		}
	}
	for _, s := range settings.Of(&Workload{}, "") {
		workloadSettings[s.Key] = true
	}
	return settings.UnknownVarErrors(unk, known, func(k string) string {
		if per := perWorkload(k, workloadSettings, workloads); len(per) > 0 {
			// SOAKD_RAET: a workload's setting without the workload.
			return " (did you mean " + strings.Join(per, " or ") + "? that setting is per workload)"
		}
		if w, ok := otherWorkload(k, workloadSettings); ok {
			return fmt.Sprintf(" (workload %s is not in %sWORKLOADS=%s)", w, EnvPrefix, strings.Join(workloads, ","))
		}
		return ""
	})
}

// perWorkload returns, when k less SOAKD_ is within a typo of a workload
// setting, that setting of each workload: SOAKD_RAET gives SOAKD_IOT_RATE
// and SOAKD_KV_RATE.
func perWorkload(k string, workloadSettings map[string]bool, workloads []string) []string {
	tail := strings.TrimPrefix(k, EnvPrefix)
	best, bestD := "", math.MaxInt
	for name := range workloadSettings {
		if d := settings.EditDistance(tail, name); d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if best == "" || bestD > settings.MaxTypo(k) {
		return nil
	}
	var out []string
	for _, w := range workloads {
		out = append(out, Prefix(w)+best)
	}
	return out
}

// otherWorkload reports the workload k would configure if it were listed:
// SOAKD_TRUCKS_RATE is workload trucks's RATE.
func otherWorkload(k string, workloadSettings map[string]bool) (string, bool) {
	rest := strings.TrimPrefix(k, EnvPrefix)
	for i := strings.IndexByte(rest, '_'); i > 0; i = next(rest, i) {
		if workloadSettings[rest[i+1:]] && workloadName.MatchString(strings.ToLower(rest[:i])) {
			return strings.ToLower(rest[:i]), true
		}
	}
	return "", false
}

func next(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '_')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// outName is the file a directory given as SUMMARY_JSON or REPORT is
// told to name instead.
var outName = map[string]string{"SUMMARY_JSON": "summary.json", "REPORT": "report.html"}

// isServiceName says whether port names a TCP service the system knows
// (":http"), as net.Listen takes it: looked up locally, never in DNS.
func isServiceName(port string) bool {
	if port == "" || strings.IndexFunc(port, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }) >= 0 {
		return false
	}
	_, err := net.LookupPort("tcp", port)
	return err == nil
}
