// Package generate implements `soakd generate`: it writes the finite data
// set of a series source to a file or standard output, like
// tsbs_generate_data, in InfluxDB line protocol, CSV or PostgreSQL COPY
// text.
//
//	soakd generate --source devops --scale 100 \
//	    --start 2026-01-01T00:00:00Z --end 2026-01-02T00:00:00Z \
//	    --interval 10s --format influx --out cpu.influx
//
// The data set is read as the one workload, named gen, of a soakd run: the
// source comes from the same list (a sources.Registry, in cmd/soakd) and each
// of its settings X is the variable SOAKD_GEN_X and the flag --x (lower
// case, - for _), parsed and checked by the same code as a run's.
// Generate's own options (format, out, ...) are read the same way. A
// source's sources.File gives its file defaults, its settings say when
// they make a finite data set, and a source without one (kv) makes no
// file.
//
// The output is the same bytes on every run and machine for the same
// settings, whatever the number of cores: the devices of an iot source
// are generated in parallel streams and merged in a canonical order (round
// by round, devices ascending), in bounded chunks; any other source is
// written from one stream.
package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// Workload is the name generate reads its data set as, so setting X is
// the variable prefix+X (SOAKD_GEN_X, as config.Prefix(Workload) says).
const (
	Workload = "gen"
	prefix   = config.EnvPrefix + "GEN_"
)

// defaultSource is the source when SOURCE is not set: TSBS's cpu-only.
const defaultSource = "devops"

// dataSettings are the settings of a workload (beyond its source's own)
// that shape its data set; the others (TARGET, RATE, ...) are a run's.
var dataSettings = []string{"SOURCE", "SEED", "SHARD"}

// options are generate's own settings, read like the data set's:
// SOAKD_GEN_FORMAT is --format.
type options struct {
	Format    string `env:"FORMAT" envDefault:"influx" help:"influx (line protocol), csv or pgcopy (PostgreSQL COPY text)"`
	Precision string `env:"PRECISION" envDefault:"ns" help:"influx timestamp precision: ns, us, ms or s"`
	Out       string `env:"OUT" help:"output file; empty = standard output; csv/pgcopy of several measurements write one file each (out.csv: out.cpu.csv, ...)"`
	Workers   int    `env:"WORKERS" envDefault:"0" help:"goroutines generating in parallel, up to 100000; 0 = one per core; the output does not depend on it"`
	Progress  string `env:"PROGRESS" envDefault:"auto" help:"progress bar on stderr: auto (when stderr is a terminal), on or off"`
	Quiet     bool   `env:"QUIET" envDefault:"false" help:"no progress bar and no summary on stderr"`
}

// setup is the list of settings generate reads for one source.
type setup struct {
	srcs   *sources.Registry
	source string
	entry  *sources.Entry     // nil when source names none
	data   []settings.Setting // SOURCE, SEED, SHARD, then the source's own
	own    []settings.Setting // options
}

// newSetup lists the settings for source (the default when empty), with
// generate's defaults and flags: the prefix SOAKD_GEN_ makes no part of a
// flag (--scale, not --gen-scale).
func newSetup(srcs *sources.Registry, source string) *setup {
	if source == "" {
		source = defaultSource
	}
	st := &setup{srcs: srcs, source: source, entry: srcs.Lookup(source)}
	for _, s := range settings.Of(&config.Workload{}, prefix) {
		name := strings.TrimPrefix(s.Key, prefix)
		if !slices.Contains(dataSettings, name) {
			continue
		}
		switch name {
		case "SOURCE":
			s.Default = defaultSource
			s.Help = "data set: " + strings.Join(st.fileSources(), ", ")
		case "SHARD":
			s.Help = "i/N: write only the i-th of N disjoint slices of the devices; the N files together hold the whole data set"
		}
		st.data = append(st.data, s)
	}
	st.own = settings.Of(&options{}, prefix)
	if e := st.entry; e != nil {
		for _, s := range settings.Of(e.NewSettings().Fields(), prefix) {
			if slices.ContainsFunc(st.own, func(o settings.Setting) bool { return o.Key == s.Key }) {
				panic("BUG: source " + source + "'s setting " + s.Key + " is also an option of soakd generate")
			}
			if e.File != nil {
				if d := e.File.Defaults[strings.TrimPrefix(s.Key, prefix)]; d != "" {
					s.Default = d
				}
			}
			st.data = append(st.data, s)
		}
	}
	for _, list := range [][]settings.Setting{st.data, st.own} {
		for i := range list {
			list[i].Flag = flagOf(list[i].Key)
		}
	}
	return st
}

// flagOf turns SOAKD_GEN_OUT_OF_ORDER into out-of-order.
func flagOf(key string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(key, prefix)), "_", "-")
}

// fileSources lists the sources that write a data file.
func (st *setup) fileSources() []string {
	var out []string
	for _, e := range st.srcs.Entries() {
		if e.File != nil && e.Kind == sources.Series {
			out = append(out, e.Names...)
		}
	}
	return out
}

func (st *setup) all() []settings.Setting { return append(slices.Clip(st.data), st.own...) }

// UnknownVars returns the SOAKD_GEN_* variables of environ that are no
// setting of generate with the source SOAKD_GEN_SOURCE names, and the
// settings they were checked against: the variables Main refuses (unless
// SOAKD_ALLOW_UNKNOWN) when no flag names the source.
func UnknownVars(environ map[string]string, srcs *sources.Registry) (unk []string, known []settings.Setting) {
	st := newSetup(srcs, sourceOf(nil, environ))
	return st.unknownVars(environ), st.all()
}

// unknownVars returns the SOAKD_GEN_* variables of environ that are no
// setting of st; the other SOAKD_* variables are a run's.
func (st *setup) unknownVars(environ map[string]string) []string {
	own := map[string]string{}
	for k, v := range environ {
		if strings.HasPrefix(k, prefix) {
			own[k] = v
		}
	}
	return settings.UnknownVars(own, st.all())
}

// sourceOf returns the source the command line or environ names (the last
// --source wins, as the flags are read); "" when none.
func sourceOf(args []string, environ map[string]string) string {
	src := environ[prefix+"SOURCE"]
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if name != "source" || !strings.HasPrefix(args[i], "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		src = value
	}
	return src
}

// command is generate's preamble, for the settings of st: --scale is
// SOAKD_GEN_SCALE, as soakd run applies --w-name onto SOAKD_W_NAME, a
// boolean setting's flag may stand alone (--quiet), and --help lists
// every setting with its value.
func (st *setup) command() *cli.Command {
	isBool := map[string]bool{}
	for _, s := range st.all() {
		isBool[s.Flag] = s.Bool
	}
	return &cli.Command{Name: "generate", Prog: "soakd generate", Prefix: prefix, See: "soakd generate --help",
		IsBool: func(f string) bool { return isBool[f] },
		Known:  func(map[string]string) []settings.Setting { return st.all() },
		Help:   func(w io.Writer, c settings.CommandLine) { st.usage(w, c.Env) }}
}

// job is a checked command: a source and where and how to write it.
type job struct {
	name      string
	src       sources.Source
	rows      int64 // in the data set (this shard)
	opts      options
	format    file.Format
	precision lineproto.Precision
	multi     bool     // one output per table
	files     []string // the outputs opened, by name ("-" = stdout)
}

func cfgErr(setting, format string, args ...any) error {
	return settings.Errorf(prefix+setting, format, args...)
}

// load reads and checks every setting and builds the source; every
// problem is returned at once, each naming its variable.
func (st *setup) load(c settings.CommandLine) (*job, error) {
	var errs []error
	e := st.entry

	// The data set is the one workload of a run's configuration, read and
	// checked by the same code.
	env := map[string]string{config.EnvPrefix + "WORKLOADS": Workload}
	for _, s := range st.data {
		if v := c.Env[s.Key]; v != "" {
			env[s.Key] = v
		} else if s.Default != "" {
			env[s.Key] = s.Default
		}
	}
	cfg, err := config.Load(env, st.srcs)
	errs = append(errs, settings.Problems(err)...)
	failed := map[string]bool{}
	for _, err := range errs {
		var ce *settings.Error
		if errors.As(err, &ce) {
			failed[ce.Key] = true
		}
	}
	// Setting problems are reported once: not again when a setting that
	// failed to parse fails a check with its zero value.
	check := func(err error) {
		for _, err := range settings.Problems(sources.RenameSettings(err, func(setting string, cause error) error {
			if setting == "" {
				setting = "SOURCE"
			}
			return &settings.Error{Key: prefix + setting, Err: cause}
		})) {
			var ce *settings.Error
			if errors.As(err, &ce) && failed[ce.Key] {
				continue
			}
			errs = append(errs, err)
			if ce != nil {
				failed[ce.Key] = true
			}
		}
	}
	w := cfg.Workload[0]
	switch {
	case e == nil:
		errs = append(errs, cfgErr("SOURCE", "unknown source %q (known: %s)", st.source, strings.Join(st.fileSources(), ", ")))
	case e.Kind == sources.KV:
		errs = append(errs, cfgErr("SOURCE", "%s makes key-value operations, not rows: soakd generate writes %s", st.source, strings.Join(st.fileSources(), ", ")))
	case e.File == nil || e.Kind != sources.Series:
		errs = append(errs, cfgErr("SOURCE", "%s has no finite set of rows to write: soakd generate writes %s", st.source, strings.Join(st.fileSources(), ", ")))
	default:
		check(w.SourceSettings.Finite())
		if failed[prefix+"CLOCK"] && c.Env[prefix+"START"] == "" {
			// START is the data file's default, not the user's: CLOCK=wall,
			// refused already, would also refuse it, blaming a setting
			// nobody set.
			failed[prefix+"START"] = true
		}
		check(w.SourceSettings.Validate(w.Common()))
	}

	j := &job{name: st.source}
	oenv := map[string]string{}
	for _, s := range st.own {
		if v, ok := c.Env[s.Key]; ok {
			oenv[s.Key] = v
		}
	}
	errs = append(errs, settings.Problems(settings.Parse(&j.opts, oenv, prefix))...)
	o := &j.opts
	if j.format, err = file.ParseFormat(o.Format); err != nil {
		errs = append(errs, cfgErr("FORMAT", "%w", err))
	}
	if j.precision, err = lineproto.ParsePrecision(o.Precision); err != nil {
		errs = append(errs, cfgErr("PRECISION", "%w", err))
	}
	if o.Workers < 0 || o.Workers > config.MaxWorkers {
		errs = append(errs, cfgErr("WORKERS", "%d is out of range: want 0 (one per core) to %d", o.Workers, config.MaxWorkers))
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if !slices.Contains([]string{"auto", "on", "off"}, o.Progress) {
		errs = append(errs, cfgErr("PROGRESS", "%q: want auto, on or off", o.Progress))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	if j.src, err = w.NewSource(); err != nil {
		check(err)
		return nil, errors.Join(errs...)
	}
	if sp, ok := j.src.(sources.Spaced); ok {
		// As at opening a workload's sink (opener.checkResolution): a
		// loader would keep one of a device's readings at each time.
		if iv, res := sp.Interval(), j.format.Resolution(j.precision); iv < res {
			return nil, cfgErr("INTERVAL", "%s is finer than the times format %s keeps at precision %s (%s): a device's readings would share a time and a loader would keep one of them; set %sINTERVAL to %s or more, or a finer %sPRECISION",
				iv, j.format, j.precision, res, prefix, res, prefix)
		}
	}
	sized, ok := j.src.(sources.Sized)
	if !ok {
		return nil, fmt.Errorf("BUG: source %s passed its finite check but has no known number of rows", st.source)
	}
	j.rows = sized.Total()
	j.multi = j.format.Split(j.src.Schemas())
	if j.multi && (o.Out == "" || o.Out == "-") {
		return nil, cfgErr("OUT", "format %s writes one file per measurement and %s has %d: give a file (e.g. --out data%s)",
			j.format, st.source, len(j.src.Schemas()), j.format.Ext())
	}
	if o.Out != "" && o.Out != "-" && isDir(o.Out) {
		// A directory alone: csv and pgcopy of several measurements named
		// hidden files in it (DIR/.cpu, DIR/.mem, ...), one table failed.
		eg := filepath.Join(o.Out, "data"+j.format.Ext())
		if j.multi {
			return nil, cfgErr("OUT", "%s is a directory: give a file name in it too, e.g. --out %s, which writes one file per measurement: %s, ...",
				o.Out, eg, file.TableFile(eg, j.src.Schemas()[0].Measurement))
		}
		return nil, cfgErr("OUT", "%s is a directory: give a file name in it too, e.g. --out %s", o.Out, eg)
	}
	return j, nil
}

const usageHead = `Usage: soakd generate [flags]

Writes a finite data set to a file, like tsbs_generate_data: every row of
the source's data set, in the chosen format. The same settings always give
the same bytes.

Every setting is a flag and an environment variable: --scale is
SOAKD_GEN_SCALE; flags win. The data set is read as a workload named gen of
soakd run: its settings are its source's, checked as there, with the
defaults of a data file. The settings with --source %s:

`

const usageTail = `
soakd generate --source NAME --help lists the settings of another source.
Exit codes: 0 done, 1 failed (cannot write, or interrupted: the files
written are incomplete), 2 invalid settings.
`

// usage writes the help: every setting, as soakd config lists a run's.
func (st *setup) usage(w io.Writer, env map[string]string) {
	fmt.Fprintf(w, usageHead, st.source)
	settings.WriteTable(w, st.all(), env)
	fmt.Fprint(w, usageTail)
}

// Main runs `soakd generate args...` with the settings in environ and
// the sources srcs, and returns the exit code: 0 done, 1 failed, 2
// invalid settings.
func Main(ctx context.Context, args []string, environ map[string]string, srcs *sources.Registry, stdout, stderr io.Writer) int {
	st := newSetup(srcs, sourceOf(args, environ))
	cmd := st.command()
	c, code, ok := cmd.Parse(args, environ, stdout, stderr)
	if !ok {
		return code
	}
	j, err := st.load(c)
	// Generate reads SOAKD_GEN_* only; the environment may hold a run's
	// settings too. Of its own, one that is no setting is an error (a
	// typo would silently generate with a default) unless
	// SOAKD_ALLOW_UNKNOWN says to warn. A source that writes no file has
	// settings of no data set: its problem says it all.
	unk, err := cmd.Check(c, cli.Scope{Settings: st.all(), Vars: st.unknownVars(environ),
		Unknowable: st.entry == nil || st.entry.File == nil}, err)
	if err != nil {
		return cmd.Refuse(stderr, err)
	}
	if len(unk) > 0 {
		fmt.Fprintf(stderr, "soakd generate: ignoring variables that are no setting of generate with source %s: %s\n", j.name, strings.Join(unk, ", "))
	}
	return j.run(ctx, stdout, stderr)
}

func (j *job) run(ctx context.Context, stdout, stderr io.Writer) int {
	o := &j.opts
	outs, closeAll, err := j.openOutputs(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", err)
		return cli.ExitFailed
	}
	// What opening wrote ahead of the rows (a CSV header per table) is
	// still in the outputs' buffers: part of the bytes written.
	var header int64
	for _, out := range outs {
		header += int64(out.W.Buffered())
	}
	var bar *progressbar.ProgressBar
	if !o.Quiet && (o.Progress == "on" || o.Progress == "auto" && isTerminal(stderr)) {
		bar = progressbar.NewOptions64(j.rows,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("generating "+j.name),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	began := time.Now()
	var s stats
	if src := iot.Unwrap(j.src); src != nil {
		g := &generator{src: src, format: j.format, precision: j.precision, workers: o.Workers, multi: j.multi}
		s, err = g.run(ctx, outs, bar)
	} else {
		s, err = j.copyStream(ctx, outs, bar)
	}
	s.bytes += header
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", err)
		if o.Out != "" {
			// What was written stays, short of the data set: say so
			// rather than leave a truncated file that looks whole.
			fmt.Fprintf(stderr, "soakd generate: incomplete, not the whole data set: %s\n", strings.Join(j.files, ", "))
		}
		return cli.ExitFailed
	}
	if s.rows != j.rows {
		fmt.Fprintf(stderr, "soakd generate: BUG: wrote %d rows, the data set has %d\n", s.rows, j.rows)
		return cli.ExitFailed
	}
	if !o.Quiet {
		secs := time.Since(began).Seconds()
		// Every file by name: csv and pgcopy of several tables write one
		// per table (out.cpu.csv, ...), not OUT itself.
		dest := strings.Join(j.files, ", ")
		if o.Out == "" {
			dest = "stdout"
		}
		fmt.Fprintf(stderr, "generated %d rows, %d values, %d bytes in %.3fs (%.0f rows/s, %.0f values/s) to %s\n",
			s.rows, s.values, s.bytes, secs, float64(s.rows)/secs, float64(s.values)/secs, dest)
	}
	return cli.ExitOK
}

// isDir reports whether path names a directory: one that exists, or a
// path ending in / (or . or ..).
func isDir(path string) bool {
	if strings.HasSuffix(path, "/") || slices.Contains([]string{".", ".."}, filepath.Base(path)) {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openOutputs opens the output(s) (see file.OpenOutputs); OUT "" is
// standard output.
func (j *job) openOutputs(stdout io.Writer) ([]*file.Output, func() error, error) {
	path := j.opts.Out
	if path == "" {
		path = "-"
	}
	outs, err := file.OpenOutputs(path, j.format, j.src.Schemas(), false, stdout)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create the output: %w", err)
	}
	j.files = nil
	for _, out := range outs {
		j.files = append(j.files, out.Name)
	}
	return outs, func() error { return file.CloseOutputs(outs) }, nil
}
