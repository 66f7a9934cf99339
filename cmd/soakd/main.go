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
// is --iot-rate. Flags win over the environment, which wins over the files
// of --env-file (compose's env_file format), a later file over an earlier.
package main

import (
	"bytes"
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
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/churn"
	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/cmd/soakd/generate"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/cmd/soakd/verify"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/internal/sysinfo"
	"github.com/soakd/soakd/live"
	"github.com/soakd/soakd/opener"
	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/procs"
	"github.com/soakd/soakd/progress"
	"github.com/soakd/soakd/readback"
	"github.com/soakd/soakd/record"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/summary"
	"github.com/soakd/soakd/sweep"
	"github.com/soakd/soakd/targetwatch"
	"github.com/soakd/soakd/thresholds/judge"
	"github.com/soakd/soakd/web"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

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
  soakd sweep [flags]        run one workload closed loop over a grid of its settings
                             (SOAKD_SWEEP_GRID, default WORKERS x BATCH_SIZE), report
                             each point, the best and a USL fit
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

const configUsage = `Usage: soakd config [--check] [setting flags]
       soakd config --sinks [--check]

Lists every setting with its env var, flag, default and current value; --check only validates them.
--sinks lists the URL parameters of every sink (TARGET): type, default and help; with --check
it then validates the settings too (exit 2 on a problem).
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
SOAKD_WORKLOADS) closed loop over a grid of its settings, REPEATS times per
point, and reports each point, the best and a USL fit along WORKERS.
SOAKD_SWEEP_GRID='SCALE=1000,10000 COLUMNS=10,100' sweeps over any of the
workload's settings (named without SOAKD_<W>_, the last axis varying
fastest); without it, over WORKERS x BATCH_SIZE (PIPELINE for KV).
Every point is checked before the first runs.
The workload's settings are a run's (soakd config lists them).

Exit codes: 0 done, 1 the sweep failed, was stopped before every point ran,
or no point passed every threshold (SOAKD_<W>_THRESHOLDS) in each of its
runs, 2 invalid configuration.
`

func realMain(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	// The files of --env-file are read first, whatever the command: from
	// then on their variables are the environment's.
	args, environ, err := cli.EnvFiles(args, environ, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "soakd: invalid configuration:\n  %v\n", err)
		return cli.ExitConfig
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
		// Interrupted, generate says so and which files are incomplete
		// rather than dying with them half written.
		ctx, stop := signal.NotifyContext(ctx, stopSignals()...)
		defer stop()
		return generate.Main(ctx, args, environ, plugins.All().Sources, stdout, stderr)
	case "verify":
		ctx, stop := signal.NotifyContext(ctx, stopSignals()...)
		defer stop()
		return verify.Main(ctx, args, environ, plugins.All(), stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "soakd %s (%s %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return cli.ExitOK
	case "help":
		switch {
		case len(args) == 0, len(args) == 1 && slices.Contains([]string{"help", "version"}, args[0]):
			// The general usage says what help and version do.
			fmt.Fprint(stdout, usage+cli.EnvFileUsage)
			return cli.ExitOK
		case len(args) == 1 && slices.Contains([]string{"run", "capacity", "sweep", "config", "generate", "verify"}, args[0]):
			// soakd help sweep is soakd sweep --help, as in git and go.
			return realMain(ctx, []string{args[0], "--help"}, environ, stdout, stderr)
		}
		fmt.Fprintf(stderr, "soakd: no help for %q\n\n%s", strings.Join(args, " "), usage)
		return cli.ExitConfig
	}
	fmt.Fprintf(stderr, "soakd: unknown command %q\n\n%s", cmd, usage)
	return cli.ExitConfig
}

// command is the preamble of the commands that run workloads (run,
// capacity, sweep) or list their settings (config): every setting is a
// flag, --iot-rate 1000 setting SOAKD_IOT_RATE.
func command(name string) *cli.Command {
	c := &cli.Command{Name: name, Prog: "soakd", Usage: usage, Prefix: config.EnvPrefix, IsBool: config.GlobalBoolFlag,
		See: "soakd config", Known: func(env map[string]string) []settings.Setting {
			cfg, _ := config.Load(env, plugins.All().Sources)
			return cfg.Settings()
		}}
	switch name {
	case "capacity", "sweep":
		// Their own settings (SOAKD_CAPACITY_*, SOAKD_SWEEP_*) are listed
		// by --help, with defaults.
		c.Usage = map[string]string{"capacity": capacityUsage, "sweep": sweepUsage}[name]
		c.OwnPrefix = config.EnvPrefix + strings.ToUpper(name) + "_"
		for _, s := range settings.Of(&config.Config{}, config.EnvPrefix) {
			if strings.HasPrefix(s.Key, c.OwnPrefix) {
				c.Own = append(c.Own, s)
			}
		}
	case "config":
		c.Usage, c.Switches = configUsage, []string{"check", "sinks"}
	}
	return c
}

// runScope is what soakd run may be given: cfg's settings. The settings
// of verify and generate (SOAKD_GEN_*, unless gen is a workload) are
// known too: one environment often serves all of soakd's commands.
func runScope(f settings.CommandLine, cfg *config.Config, p *config.Plugins) cli.Scope {
	return cli.WorkloadScope(cfg, f.Env, p.Sources, nil, verify.Settings(), generate.Workload)
}

// loadConfig reads and validates the configuration, with the command's
// own check when not nil; every problem is returned at once. It returns
// the SOAKD_* variables that are no setting, which are among the
// problems unless SOAKD_ALLOW_UNKNOWN says to only warn (see runCmd).
func loadConfig(c *cli.Command, f settings.CommandLine, p *config.Plugins, check func(*config.Config) error) (*config.Config, []string, error) {
	cfg, parseErr := config.Load(f.Env, p.Sources)
	err := cfg.Check(p, parseErr)
	if check != nil {
		// As Check does: a capacity or sweep setting that did not parse
		// is not checked again as its zero value.
		err = errors.Join(err, config.Unparsed(check(cfg), parseErr))
	}
	unk, err := c.Check(f, runScope(f, cfg, p), err)
	return cfg, unk, err
}

// loadCmd is the start of the commands that run workloads: it parses
// the flags, answers --help, then loads and checks the configuration,
// with the command's own check when not nil. When ok is false the
// command is over and exits with code.
func loadCmd(cmdName string, args []string, environ map[string]string, stdout, stderr io.Writer, check func(*config.Config) error) (
	f settings.CommandLine, p *config.Plugins, cfg *config.Config, unknown []string, code int, ok bool) {
	c := command(cmdName)
	f, code, ok = c.Parse(args, environ, stdout, stderr)
	if !ok {
		return f, nil, nil, nil, code, false
	}
	p = plugins.All()
	cfg, unknown, err := loadConfig(c, f, p, check)
	if err != nil {
		return f, nil, nil, nil, c.Refuse(stderr, err), false
	}
	return f, p, cfg, unknown, cli.ExitOK, true
}

// runCmd runs the configured workloads (soakd run), or searches one's
// capacity while the others hold their rate (soakd capacity).
func runCmd(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer, search bool) int {
	var check func(*config.Config) error
	name := "run"
	if search {
		check = func(c *config.Config) error { return c.CheckCapacity(plugins.All()) }
		name = "capacity"
	}
	f, p, cfg, unk, code, ok := loadCmd(name, args, environ, stdout, stderr, check)
	if !ok {
		return code
	}
	tty := isTerminal(stderr)
	var console *progress.Console
	logOut := stderr
	if tty {
		// Log lines and the progress bar share the terminal through the
		// console, so they never end up on one line.
		console = progress.NewConsole(stderr)
		logOut = console
	}
	log, err := newLogger(cfg, logOut, tty)
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return cli.ExitConfig
	}
	defer func() { _ = log.Sync() }()
	if len(unk) > 0 { // SOAKD_ALLOW_UNKNOWN is set, or loadConfig had refused them
		log.Warn("ignoring unknown SOAKD_ variables (typo, or a workload not in SOAKD_WORKLOADS?)", zap.Strings("vars", unk))
	}
	if set := cfg.UnservedSettings(); len(set) > 0 {
		log.Warn("SOAKD_LISTEN=off serves no HTTP API, so these settings do nothing: unset them, or give SOAKD_LISTEN an address",
			zap.Strings("vars", set))
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals()...)
	defer stop()
	log.Info("soakd starting", zap.String("version", buildVersion()), zap.Strings("workloads", cfg.Workloads))
	hist := history.New()
	// A capacity search shows in the console as it goes, and in the report.
	var capLive atomic.Pointer[capacity.Result]
	panels := func() []web.Panel {
		if r := capLive.Load(); r != nil {
			return []web.Panel{web.CapacityPanel(r)}
		}
		return nil
	}
	ui := web.NewConsole(web.ConsoleOptions{History: hist, Version: buildVersion(), Control: cfg.EffectiveControlToken() != "", Panels: panels})
	// The HTTP API binds its address as the workloads open, serves
	// through the run and shuts down once it is over (Close covers a run
	// that could not start).
	reg := prometheus.NewRegistry()
	// One sampler of the achieved rates and latency windows for the
	// progress line and /status, ahead of both among the observers.
	lv := live.New()
	api := serve.New(serve.Options{Config: cfg, Logger: log, Version: buildVersion(), Registry: reg, UI: ui, Live: lv})
	defer api.Close()
	// The history is sampled before the progress line is drawn, each
	// second, and takes its last sample before the bar its last frame.
	// The judges read the targets' figures from their watch, for the
	// target. thresholds.
	tw := targetwatch.New(log, targetwatch.Options{Metrics: reg, Grace: cfg.ShutdownGrace})
	// The console and the report chart the target's memory and storage
	// beside soakd's own, from the same readings.
	hist.WatchTarget(tw)
	deps := daemon.Deps{Logger: log, Plugins: p, Version: buildVersion(),
		Observers: []daemon.Observer{judge.New(log, judge.Options{Target: tw}), readback.New(log), record.New(), tw, churn.New(),
			lv, hist, progress.New(cfg, log, console, lv), api}}
	if !search {
		// A capacity search measures how far the target goes with every
		// core soakd may use: no governor there.
		deps.Observers = append(deps.Observers, procs.New(log))
	}
	var sum *report.Summary
	var runErr error
	var capRes *capacity.Result
	if search {
		sum, capRes, runErr = capacity.Run(ctx, cfg, f.Env, deps, capacity.Options{Metrics: reg, Target: tw, OnUpdate: func(r capacity.Result) { capLive.Store(&r) }})
	} else {
		sum, runErr = daemon.Run(ctx, cfg, deps)
	}
	if dataOnStdout(cfg) {
		// TARGET=-: standard output is the data's alone; the summary and
		// reports go with the logs, to stderr.
		stdout = stderr
	}
	// A file that cannot be written fails the run, after the others are
	// written: the report of a run is not lost to its summary's path, nor
	// the summary to the report's, nor a capacity search's report (its
	// knee, after every step it ran) to either.
	writeFailed := false
	if sum != nil {
		summary.WriteText(stdout, sum)
		if cfg.SummaryJSON != "" {
			if err := summary.WriteJSONFile(cfg.SummaryJSON, sum); err != nil {
				log.Error("cannot write the summary", zap.String("setting", config.EnvPrefix+"SUMMARY_JSON"), zap.Error(err))
				writeFailed = true
			}
		}
		if cfg.Report != "" {
			d := web.ReportData{Summary: sum, History: hist, Environment: sysinfo.Collect(buildVersion()),
				Settings: web.SettingRows(cfg.Settings(), f.Env), Panels: panels()}
			if ctx.Err() != nil {
				d.StoppedBy = "stopped by a signal"
			}
			if err := web.WriteReport(cfg.Report, d); err != nil {
				log.Error("cannot write the report", zap.String("setting", config.EnvPrefix+"REPORT"), zap.Error(err))
				writeFailed = true
			} else {
				log.Info("report written", zap.String("file", cfg.Report))
			}
		}
		if runErr == nil {
			runErr = sum.Failed()
		}
	}
	if capRes != nil {
		if err := writeCapacityReport(capRes, cfg.Capacity.Out, stdout); err != nil {
			log.Error("cannot write the capacity report", zap.String("setting", config.EnvPrefix+"CAPACITY_OUT"), zap.Error(err))
			writeFailed = true
		}
	}
	if writeFailed {
		return cli.ExitFailed
	}
	if capRes != nil {
		switch {
		case runErr != nil:
		case !capRes.Found:
			runErr = errors.New("capacity: " + capRes.Outcome)
		case capRes.Stopped:
			// Only a lower bound: a CI reading exit 0 as a knee found
			// would take where the search was cut off for the target's.
			runErr = fmt.Errorf("capacity: %s: the knee is at least %s units/s", capRes.Outcome, pace.FormatRate(capRes.Knee))
		case !capRes.TargetCapacity():
			// The highest rate met is soakd's own limit: no knee of the
			// target was found, whatever a CI reading the exit code hopes.
			runErr = fmt.Errorf("capacity: no knee of the target: soakd's %s limited the search; %s", capRes.LimitedBy, capRes.Advice)
		}
	}
	var cfgErr *settings.Error
	if errors.As(runErr, &cfgErr) {
		// A setting the target contradicts, found once the run started
		// (e.g. records of another DATA_TYPE under the KEY_PREFIX).
		return command(name).Refuse(stderr, runErr)
	}
	if runErr != nil {
		log.Error("run failed", zap.Error(runErr))
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// dataOnStdout reports whether a workload writes its data to standard
// output (TARGET=- or file://-).
func dataOnStdout(cfg *config.Config) bool {
	for _, w := range cfg.Workload {
		if u := w.Sink.URL; u != nil && u.Scheme == "file" && (u.Opaque == "-" || u.Opaque == "" && u.Host+u.Path == "-") {
			return true
		}
	}
	return false
}

// writeCapacityReport prints the report as markdown and writes it to
// OUT.md, OUT.csv, OUT.json and its charts.
func writeCapacityReport(r *capacity.Result, out string, stdout io.Writer) error {
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

// sweepCmd runs soakd sweep: the workload closed loop over a grid of its
// settings (SOAKD_SWEEP_GRID, or WORKERS × BATCH_SIZE), with a report.
func sweepCmd(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	f, p, cfg, _, code, ok := loadCmd("sweep", args, environ, stdout, stderr, (*config.Config).CheckSweep)
	if !ok {
		return code
	}
	log, err := newLogger(cfg, stderr, isTerminal(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
		return cli.ExitConfig
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(ctx, stopSignals()...)
	defer stop()
	if dataOnStdout(cfg) {
		stdout = stderr // as in runCmd
	}
	// The target watch reads each point's target, for the report's
	// target columns and the judge's target.* thresholds.
	tw := targetwatch.New(log, targetwatch.Options{Grace: cfg.ShutdownGrace})
	res, err := sweep.Run(ctx, cfg, f.Env, daemon.Deps{Logger: log, Plugins: p, Version: buildVersion(),
		Observers: []daemon.Observer{judge.New(log, judge.Options{Target: tw}), readback.New(log), tw, churn.New()}}, sweep.Options{Target: tw})
	if res != nil && len(res.Points) > 0 {
		if werr := writeReport(stdout, cfg.Sweep.Out, res.WriteMarkdown, res.WriteCSV, res.WriteJSON, web.SweepCharts(res), "sweep-"); werr != nil {
			log.Error("cannot write the sweep report", zap.Error(werr))
			return cli.ExitFailed
		}
	}
	var cfgErr *settings.Error
	switch {
	case errors.As(err, &cfgErr):
		return command("sweep").Refuse(stderr, err)
	case err != nil:
		log.Error("sweep failed", zap.Error(err))
		return cli.ExitFailed
	case res.Outcome != "done":
		log.Error("sweep " + res.Outcome + ": the report holds the runs made")
		return cli.ExitFailed
	}
	// Points failing THRESHOLDS are what a sweep compares, as it does
	// their rates: the sweep did its job. One where none passed found no
	// setting that meets them, as a capacity search where no step met
	// the SLO: exit 1, and a one-point sweep exits as its run would.
	if met, judged := res.ThresholdsMet(); judged > 0 && met == 0 {
		log.Error(fmt.Sprintf("sweep: no point passed every threshold in each of its runs (%d judged): see the report", judged))
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// writeFile writes what write makes to path, or leaves path as it was
// when write fails: a report that cannot be made is not left empty or
// half written.
func writeFile(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o666)
}

func configCmd(args []string, environ map[string]string, stdout, stderr io.Writer) int {
	c := command("config")
	f, code, ok := c.Parse(args, environ, stdout, stderr)
	if !ok {
		return code
	}
	p := plugins.All()
	if f.Cmd["sinks"] {
		printSinkParams(stdout, p.Sinks)
		if !f.Cmd["check"] {
			return cli.ExitOK
		}
		// With --check the configuration is checked too, as --check
		// alone does: listing the sinks does not make it valid.
		fmt.Fprintln(stdout)
	}
	var check func(*config.Config) error
	if f.Cmd["check"] {
		check = func(cfg *config.Config) error { return checkCommands(cfg, f.Env, p) }
	}
	cfg, _, err := loadConfig(c, f, p, check)
	if f.Cmd["check"] {
		if err != nil {
			return c.Refuse(stderr, err)
		}
		fmt.Fprintln(stdout, "configuration ok")
		return cli.ExitOK
	}
	settings.WriteTable(stdout, cfg.Settings(), f.Env)
	if err != nil {
		fmt.Fprintln(stderr)
		return c.Refuse(stderr, err)
	}
	return cli.ExitOK
}

// checkCommands checks, for config --check, the settings of capacity
// and sweep when any of theirs is set (a recipe: --env-file
// examples/kwdb-tsbs.env), as soakd capacity and soakd sweep would before
// they start, grid points included; the defaults of a command not meant
// (CAPACITY_START above a run's MAX_RATE) are not held against a run.
func checkCommands(cfg *config.Config, env map[string]string, p *config.Plugins) error {
	set := func(prefix string) bool {
		for k := range env {
			if strings.HasPrefix(k, config.EnvPrefix+prefix) {
				return true
			}
		}
		return false
	}
	var errs []error
	if cfg.Validate(p) == nil {
		errs = append(errs, checkOpening(cfg, p))
	}
	if set("CAPACITY_") {
		errs = append(errs, cfg.CheckCapacity(p))
	}
	if set("SWEEP_") {
		err := cfg.CheckSweep()
		if err == nil && cfg.Validate(p) == nil {
			// Each point is the run's settings with its axes' values:
			// read only once they are valid, or each point would repeat
			// the run's own problems.
			_, err = cfg.SweepPoints(env, p)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkOpening makes the checks a run makes of a workload as it opens its
// target (opener.Sink: rows stamped finer than the times the target
// keeps, or ahead of the clock under CLOCK=wall), which --check passed
// and the run then refused: opening a sink does no I/O. Only workloads
// whose rows carry times are opened, and never a built-in target.
func checkOpening(cfg *config.Config, p *config.Plugins) error {
	var errs []error
	for _, w := range cfg.Workload {
		if w.Builtin {
			continue
		}
		e, src, err := opener.Source(p, w)
		if err != nil {
			continue // the configuration check says why
		}
		_, spaced := src.(sources.Spaced)
		_, wall := src.(sources.WallStamped)
		if !spaced && !wall {
			continue
		}
		batch, _ := w.BatchUnits(e.Kind)
		sink, err := opener.Sink(context.Background(), p, w, e.Kind, src, w.Workers, batch, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = sink.Close(context.Background())
	}
	return errors.Join(errs...)
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
func newLogger(cfg *config.Config, out io.Writer, tty bool) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("%sLOG_LEVEL: %w", config.EnvPrefix, err)
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
	return zap.New(auditCore{Core: zapcore.NewSamplerWithOptions(core, 1e9, 20, 100), all: core}), nil
}

// auditCore samples every message (a flood of one error is cut to 20 a
// second, then one in 100) but the audit trail of /control: every change
// is logged with its caller, however many come in a second.
type auditCore struct {
	zapcore.Core              // sampled
	all          zapcore.Core // not sampled
}

func (c auditCore) With(f []zapcore.Field) zapcore.Core {
	return auditCore{Core: c.Core.With(f), all: c.all.With(f)}
}

func (c auditCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == serve.ControlLogMessage {
		return c.all.Check(e, ce)
	}
	return c.Core.Check(e, ce)
}
