// Command soakd puts continuous, realistic load on databases and exports
// what happens as Prometheus metrics.
//
//	soakd [run] [flags]      run the configured workloads (the default)
//	soakd generate [flags]   write a data file like tsbs_generate_data
//	soakd verify [flags]     check what a run's targets hold against what it wrote
//	soakd config [--check]   list every setting, or only check them
//	soakd config --sinks     list every sink's URL parameters
//	soakd version
//
// Every setting is an environment variable SOAKD_* and a flag: SOAKD_IOT_RATE
// is --iot-rate. Flags win over the environment.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/cmd/soakd/generate"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/cmd/soakd/verify"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/web"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitConfig = 2
)

func main() {
	os.Exit(realMain(context.Background(), os.Args[1:], environMap(os.Environ()), os.Stdout, os.Stderr))
}

func environMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
		if v != "" {
			return v
		}
	}
	return "(devel)"
}

const usage = `soakd puts continuous, realistic load on databases and exports honest
latency as Prometheus metrics.

Usage:
  soakd [run] [flags]        run the configured workloads (default)
  soakd capacity [flags]     search one workload's capacity: step its rate up until it
                             breaks the SLO (SOAKD_CAPACITY_*), report the knee
  soakd sweep [flags]        run one workload closed loop over a WORKERS x BATCH_SIZE
                             grid (SOAKD_SWEEP_*), report the best and a USL fit
  soakd generate [flags]     write a data file like tsbs_generate_data (soakd generate --help)
  soakd verify [flags]       check what the targets hold against what a run wrote (soakd verify --help)
  soakd config [--check]     list every setting (env var, flag, default, value)
  soakd config --sinks       list every sink's URL parameters (type, default, help)
  soakd version              print the version

Every setting is an environment variable and a flag: SOAKD_IOT_RATE is
--iot-rate. Run "soakd config" for the full list. With no target set, each
workload writes to a built-in in-process target.

Exit codes: 0 ok, 1 the run failed or a threshold (SOAKD_<W>_THRESHOLDS)
failed, 2 invalid configuration.
`

const capacityUsage = `Usage: soakd capacity [flags]

Searches one workload's capacity (SOAKD_CAPACITY_WORKLOAD, default the first
of SOAKD_WORKLOADS): from START its rate grows by STEP, each step held for
HOLD and judged against the SLO (SLO_P99, SLO_ERRORS); the other workloads
hold their RATE. The report names the knee: the highest rate that met the
SLO. The workloads' settings are a run's (soakd config lists them).

Exit codes: 0 the target's knee was found, 1 it was not (no step met the
SLO, or soakd's own workers or CPU limited the search first: the report
names the setting to raise), or the run failed, 2 invalid configuration.
`

const sweepUsage = `Usage: soakd sweep [flags]

Runs one workload (SOAKD_SWEEP_WORKLOAD, default the first of
SOAKD_WORKLOADS) closed loop over a WORKERS x BATCH_SIZE grid (PIPELINE for
KV), REPEATS times per point, and reports the best point and a USL fit.
The workload's settings are a run's (soakd config lists them).

Exit codes: 0 done, 1 the sweep failed, 2 invalid configuration.
`

func realMain(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	// soakd --version and -v, as most tools answer them; a setting flag
	// named -v would read as SOAKD_V, an unknown flag.
	if cmd == "run" && len(args) == 1 && slices.Contains([]string{"--version", "-version", "-v"}, args[0]) {
		cmd = "version"
	}
	switch cmd {
	case "run":
		return runCmd(ctx, args, environ, stdout, stderr, false)
	case "capacity":
		return runCmd(ctx, args, environ, stdout, stderr, true)
	case "sweep":
		return sweepCmd(ctx, args, environ, stdout, stderr)
	case "config":
		return configCmd(args, environ, stdout, stderr)
	case "generate":
		return generate.Main(ctx, args, environ, plugins.All().Sources, stdout, stderr)
	case "verify":
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return verify.Main(ctx, args, environ, plugins.All(), stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "soakd %s (%s %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	case "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "soakd: unknown command %q\n\n%s", cmd, usage)
	return exitConfig
}

// parseFlags reads soakd's command line: --iot-rate 1000 sets
// SOAKD_IOT_RATE; switches are the command's own flags (e.g. check).
func parseFlags(args []string, environ map[string]string, switches ...string) (daemon.CommandLine, error) {
	f, err := daemon.ParseFlags(args, environ, daemon.EnvPrefix, daemon.GlobalBoolFlag, switches...)
	if missing := (*daemon.MissingValueError)(nil); errors.As(err, &missing) {
		// soakd --bogus: that the flag is unknown is the news, not that it
		// lacks a value.
		cfg, _ := daemon.Load(f.Env, plugins.All().Sources)
		if !slices.ContainsFunc(cfg.Settings(), func(s daemon.Setting) bool { return s.Key == missing.Key }) {
			err = fmt.Errorf("unknown flag --%s (see soakd config)", missing.Flag)
		}
	}
	return f, err
}

// loadConfig reads and validates the configuration; every problem is
// returned at once.
func loadConfig(f daemon.CommandLine, p *daemon.Plugins) (*daemon.Config, error) {
	cfg, parseErr := daemon.Load(f.Env, p.Sources)
	errs := []error{cfg.Check(p, parseErr)}
	// A flag that names no setting is an error, and so is a SOAKD_*
	// variable (see unknownVarErrors).
	errs = append(errs, unknownVarErrors(f, cfg, p)...)
	known := map[string]bool{}
	for _, s := range cfg.Settings() {
		known[s.Key] = true
	}
	for _, k := range f.Keys {
		if !known[k] {
			errs = append(errs, fmt.Errorf("unknown flag --%s (see soakd config)", strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, daemon.EnvPrefix), "_", "-"))))
		}
	}
	return cfg, errors.Join(errs...)
}

// unknownVarErrors refuses each SOAKD_* variable that is no setting (a
// typo would silently run with a default), unless SOAKD_ALLOW_UNKNOWN
// says to only warn (see runCmd).
func unknownVarErrors(f daemon.CommandLine, cfg *daemon.Config, p *daemon.Plugins) []error {
	if daemon.AllowUnknown(f.Env) {
		return nil
	}
	return daemon.UnknownVarErrors(unknownVars(f, cfg, p), cfg.Settings(), workloadNames(cfg))
}

// unknownVars returns the SOAKD_* variables in the environment that are
// no setting of a command that runs workloads. The settings of verify
// and generate (SOAKD_GEN_*, unless gen is a workload) are known too: one
// environment often serves all of soakd's commands.
func unknownVars(f daemon.CommandLine, cfg *daemon.Config, p *daemon.Plugins) []string {
	var out []string
	gen := slices.Contains(workloadNames(cfg), generate.Workload)
	for _, k := range cfg.UnknownVars(f.Env, p.Sources, verify.Settings()...) {
		// An unknown flag is reported as such, not as its variable.
		if (gen || !strings.HasPrefix(k, daemon.Prefix(generate.Workload))) && !slices.Contains(f.Keys, k) {
			out = append(out, k)
		}
	}
	return out
}

func workloadNames(cfg *daemon.Config) []string {
	var names []string
	for _, w := range cfg.Workload {
		names = append(names, w.Name)
	}
	return names
}

func printConfigErrors(w io.Writer, err error) {
	fmt.Fprintln(w, "soakd: invalid configuration:")
	for _, p := range daemon.Problems(err) {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// loadCmd is the start of the commands that run workloads: it parses
// the flags, answers --help, then loads and checks the configuration,
// with the command's own check when not nil. When ok is false the
// command is over and exits with code.
func loadCmd(cmdName string, args []string, environ map[string]string, stdout, stderr io.Writer, check func(*daemon.Config) error) (
	f daemon.CommandLine, p *daemon.Plugins, cfg *daemon.Config, code int, ok bool) {
	help, prefix := usage, ""
	switch cmdName {
	case "capacity":
		help, prefix = capacityUsage, daemon.EnvPrefix+"CAPACITY_"
	case "sweep":
		help, prefix = sweepUsage, daemon.EnvPrefix+"SWEEP_"
	}
	f, err := parseFlags(args, environ)
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return f, nil, nil, exitConfig, false
	}
	if f.Help {
		fmt.Fprint(stdout, help)
		if prefix != "" {
			// capacity and sweep: their own settings, with defaults.
			tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintf(tw, "\nOwn settings (%s*):\nVARIABLE\tFLAG\tDEFAULT\tHELP\n", prefix)
			for _, s := range daemon.SettingsOf(&daemon.Config{}, daemon.EnvPrefix) {
				if strings.HasPrefix(s.Key, prefix) {
					fmt.Fprintf(tw, "%s\t--%s\t%s\t%s\n", s.Key, s.Flag, cmp.Or(s.Default, "-"), strings.TrimPrefix(s.Help, "soakd "+cmdName+": "))
				}
			}
			_ = tw.Flush()
		}
		return f, nil, nil, exitOK, false
	}
	p = plugins.All()
	cfg, err = loadConfig(f, p)
	if check != nil && cfg != nil {
		err = errors.Join(err, check(cfg))
	}
	if err != nil {
		printConfigErrors(stderr, err)
		return f, nil, nil, exitConfig, false
	}
	return f, p, cfg, exitOK, true
}

// runCmd runs the configured workloads (soakd run), or searches one's
// capacity while the others hold their rate (soakd capacity).
func runCmd(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer, capacity bool) int {
	var check func(*daemon.Config) error
	name := "run"
	if capacity {
		check = (*daemon.Config).CheckCapacity
		name = "capacity"
	}
	f, p, cfg, code, ok := loadCmd(name, args, environ, stdout, stderr, check)
	if !ok {
		return code
	}
	tty := isTerminal(stderr)
	var console *daemon.Console
	logOut := stderr
	if tty {
		// Log lines and the progress bar share the terminal through the
		// console, so they never end up on one line.
		console = daemon.NewConsole(stderr)
		logOut = console
	}
	log, err := newLogger(cfg, logOut, tty)
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return exitConfig
	}
	defer func() { _ = log.Sync() }()
	if unk := unknownVars(f, cfg, p); len(unk) > 0 { // SOAKD_ALLOW_UNKNOWN is set, or loadConfig had refused them
		log.Warn("ignoring unknown SOAKD_ variables (typo, or a workload not in SOAKD_WORKLOADS?)", zap.Strings("vars", unk))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("soakd starting", zap.String("version", buildVersion()), zap.Strings("workloads", cfg.Workloads))
	hist := daemon.NewHistory()
	// A capacity search shows in the console as it goes, and in the report.
	var capLive atomic.Pointer[daemon.CapacityResult]
	panels := func() []web.Panel {
		if r := capLive.Load(); r != nil {
			return []web.Panel{web.CapacityPanel(r)}
		}
		return nil
	}
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: buildVersion(), Control: cfg.EffectiveControlToken() != "", Panels: panels})
	deps := daemon.Deps{Logger: log, Registry: prometheus.NewRegistry(), Plugins: p, Version: buildVersion(), Console: console,
		History: hist, UI: ui, OnCapacity: func(r daemon.CapacityResult) { capLive.Store(&r) }}
	var sum *daemon.Summary
	var runErr error
	var capRes *daemon.CapacityResult
	if capacity {
		sum, capRes, runErr = daemon.Capacity(ctx, cfg, f.Env, deps)
	} else {
		sum, runErr = daemon.Run(ctx, cfg, deps)
	}
	if dataOnStdout(cfg) {
		// TARGET=-: standard output is the data's alone; the summary and
		// reports go with the logs, to stderr.
		stdout = stderr
	}
	if sum != nil {
		sum.WriteText(stdout)
		if cfg.SummaryJSON != "" {
			if err := sum.WriteJSONFile(cfg.SummaryJSON); err != nil {
				log.Error("cannot write the summary", zap.Error(err))
				return exitFailed
			}
		}
		if cfg.Report != "" {
			d := web.ReportData{Summary: sum, History: hist, Environment: sysinfo.Collect(buildVersion()),
				Settings: web.SettingRows(cfg.Settings(), f.Env), Panels: panels()}
			if ctx.Err() != nil {
				d.StoppedBy = "stopped by a signal"
			}
			if err := web.WriteReport(cfg.Report, d); err != nil {
				log.Error("cannot write the report", zap.Error(err))
				return exitFailed
			}
			log.Info("report written", zap.String("file", cfg.Report))
		}
		if runErr == nil {
			runErr = sum.Failed()
		}
	}
	if capRes != nil {
		if err := writeCapacityReport(capRes, cfg.Capacity.Out, stdout); err != nil {
			log.Error("cannot write the capacity report", zap.Error(err))
			return exitFailed
		}
		switch {
		case runErr != nil:
		case !capRes.Found:
			runErr = errors.New("capacity: " + capRes.Outcome)
		case !capRes.TargetCapacity():
			// The highest rate met is soakd's own limit: no knee of the
			// target was found, whatever a CI reading the exit code hopes.
			runErr = fmt.Errorf("capacity: no knee of the target: soakd's %s limited the search; %s", capRes.LimitedBy, capRes.Advice)
		}
	}
	var cfgErr *daemon.ConfigError
	if errors.As(runErr, &cfgErr) {
		// A setting the target contradicts, found once the run started
		// (e.g. records of another DATA_TYPE under the KEY_PREFIX).
		printConfigErrors(stderr, runErr)
		return exitConfig
	}
	if runErr != nil {
		log.Error("run failed", zap.Error(runErr))
		return exitFailed
	}
	return exitOK
}

// dataOnStdout reports whether a workload writes its data to standard
// output (TARGET=- or file://-).
func dataOnStdout(cfg *daemon.Config) bool {
	for _, w := range cfg.Workload {
		if u := w.Sink.URL; u != nil && u.Scheme == "file" && (u.Opaque == "-" || u.Opaque == "" && u.Host+u.Path == "-") {
			return true
		}
	}
	return false
}

// writeCapacityReport prints the report as markdown and writes it to
// OUT.md, OUT.csv, OUT.json and its charts.
func writeCapacityReport(r *daemon.CapacityResult, out string, stdout io.Writer) error {
	return writeReport(stdout, out, r.WriteMarkdown, r.WriteCSV, r.WriteJSON, web.CapacityCharts(r), "capacity-")
}

// writeReport prints a markdown report and writes it as OUT.md, OUT.csv
// and OUT.json, and each chart as OUT-NAME.svg and .png (NAME: the chart's
// ID without idPrefix).
func writeReport(stdout io.Writer, out string, md func(io.Writer), csv, js func(io.Writer) error, figs []charts.Chart, idPrefix string) error {
	fmt.Fprintln(stdout)
	md(stdout)
	var errs []error
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{
		{".md", func(w io.Writer) error { md(w); return nil }},
		{".csv", csv},
		{".json", js},
	} {
		errs = append(errs, writeFile(out+f.ext, f.write))
	}
	files := []string{out + ".md", out + ".csv", out + ".json"}
	for _, c := range figs {
		name := out + "-" + strings.TrimPrefix(c.ID, idPrefix)
		errs = append(errs, os.WriteFile(name+".svg", c.SVG(), 0o644))
		png, err := c.PNG()
		if err == nil {
			err = os.WriteFile(name+".png", png, 0o644)
		}
		errs = append(errs, err)
		files = append(files, name+".svg", name+".png")
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", strings.Join(files, ", "))
	return nil
}

// sweepCmd runs soakd sweep: the workload closed loop over a grid of
// WORKERS × BATCH_SIZE (PIPELINE), with a report.
func sweepCmd(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	f, p, cfg, code, ok := loadCmd("sweep", args, environ, stdout, stderr, (*daemon.Config).CheckSweep)
	if !ok {
		return code
	}
	log, err := newLogger(cfg, stderr, isTerminal(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return exitConfig
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if dataOnStdout(cfg) {
		stdout = stderr // as in runCmd
	}
	res, err := daemon.Sweep(ctx, cfg, f.Env, daemon.Deps{Logger: log, Plugins: p, Version: buildVersion()})
	if res != nil && len(res.Points) > 0 {
		if werr := writeReport(stdout, cfg.Sweep.Out, res.WriteMarkdown, res.WriteCSV, res.WriteJSON, web.SweepCharts(res), "sweep-"); werr != nil {
			log.Error("cannot write the sweep report", zap.Error(werr))
			return exitFailed
		}
	}
	var cfgErr *daemon.ConfigError
	switch {
	case errors.As(err, &cfgErr):
		printConfigErrors(stderr, err)
		return exitConfig
	case err != nil:
		log.Error("sweep failed", zap.Error(err))
		return exitFailed
	case res.Outcome != "done":
		return exitFailed
	}
	return exitOK
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func configCmd(args []string, environ map[string]string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, environ, "check", "sinks")
	if f.Help {
		fmt.Fprint(stdout, "Usage: soakd config [--check] [setting flags]\n       soakd config --sinks\n\nLists every setting with its env var, flag, default and current value; --check only validates them.\n--sinks lists the URL parameters of every sink (TARGET): type, default and help.\n")
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return exitConfig
	}
	p := plugins.All()
	if f.Cmd["sinks"] {
		printSinkParams(stdout, p.Sinks)
		return exitOK
	}
	cfg, err := loadConfig(f, p)
	if f.Cmd["check"] {
		if err != nil {
			printConfigErrors(stderr, err)
			return exitConfig
		}
		fmt.Fprintln(stdout, "configuration ok")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tFLAG\tDEFAULT\tVALUE\tHELP")
	for _, s := range cfg.Settings() {
		v := ""
		if raw, set := f.Env[s.Key]; set {
			v = s.Shown(raw)
		}
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "%s\t--%s\t%s\t%s\t%s\n", s.Key, s.Flag, def, v, s.Help)
	}
	_ = tw.Flush()
	if err != nil {
		fmt.Fprintln(stderr)
		printConfigErrors(stderr, err)
		return exitConfig
	}
	return exitOK
}

// printSinkParams lists each sink's schemes and URL parameters.
func printSinkParams(w io.Writer, r *sinks.Registry) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for i, e := range r.Entries() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, strings.Join(e.Schemes, "://, ")+"://")
		if e.Params == nil || len(e.Params.Params) == 0 {
			fmt.Fprintln(tw, "  (no parameters listed)")
			continue
		}
		fmt.Fprintln(tw, "  PARAMETER\tTYPE\tDEFAULT\tHELP")
		for _, d := range e.Params.Docs() {
			def := d.Default
			if def == "" {
				def = "-"
			}
			help := d.Help
			if d.Group != "" {
				help = d.Group + " only: " + help
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", d.Name, d.Type, def, help)
		}
	}
	_ = tw.Flush()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newLogger builds the zap logger: console lines on a terminal, JSON
// otherwise (or as LOG_FORMAT says), sampled so error storms stay cheap.
func newLogger(cfg *daemon.Config, out io.Writer, tty bool) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("%sLOG_LEVEL: %w", daemon.EnvPrefix, err)
	}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if tty {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	if format == "console" {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05")
		enc = zapcore.NewConsoleEncoder(ec)
	} else {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(out)), lvl)
	core = zapcore.NewSamplerWithOptions(core, 1e9, 20, 100)
	return zap.New(core), nil
}
