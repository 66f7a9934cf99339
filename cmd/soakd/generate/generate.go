// Package generate implements `soakd generate`: it writes a finite iot
// data set to a file or standard output, like tsbs_generate_data, in
// InfluxDB line protocol, CSV or PostgreSQL COPY text.
//
//	soakd generate --source devops --scale 100 \
//	    --start 2026-01-01T00:00:00Z --end 2026-01-02T00:00:00Z \
//	    --interval 10s --format influx --out cpu.influx
//
// The output is the same bytes on every run and machine for the same
// flags, whatever the number of cores: devices are generated in parallel
// streams and merged in a canonical order (round by round, devices
// ascending), in bounded chunks.
package generate

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

// options are the parsed flags.
type options struct {
	source    string
	cfg       iot.Config
	seed      uint64
	shard     sources.Shard
	format    file.Format
	precision lineproto.Precision
	out       string
	workers   int
	quiet     bool
	progress  string
}

const usageHead = `Usage: soakd generate [flags]

Writes a finite data set like tsbs_generate_data: every device's readings
from --start to --end, one per --interval, in the chosen format. The same
flags always give the same bytes.

Flags:
`

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{cfg: iot.DefaultConfig()}
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	c := &o.cfg
	_ = c.Start.UnmarshalText([]byte("2016-01-01T00:00:00Z")) // TSBS's defaults
	_ = c.End.UnmarshalText([]byte("2016-01-02T00:00:00Z"))
	fs.StringVar(&o.source, "source", "devops", "data set: "+strings.Join(iot.Names(), ", "))
	fs.IntVar(&c.Scale, "scale", c.Scale, "number of devices (hosts, trucks, sensors)")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "time between two readings of a device")
	fs.TextVar(&c.Start, "start", c.Start, "first timestamp (RFC3339)")
	fs.TextVar(&c.End, "end", c.End, "end of the data set, exclusive (RFC3339 or +DURATION after --start)")
	fs.IntVar(&c.Columns, "columns", c.Columns, "massive: columns per row (1..1000)")
	fs.TextVar(&c.ColumnType, "column-type", c.ColumnType, "massive: int or float")
	fs.TextVar(&c.OutOfOrder, "out-of-order", c.OutOfOrder, "FRACTION:MAXLATE of late readings, e.g. 0.05:30s (none; default: the source's)")
	fs.TextVar(&c.Offline, "offline", c.Offline, "FRACTION:DURATION of offline devices that backfill in bursts, e.g. 0.01:10m")
	fs.TextVar(&c.Missing, "missing", c.Missing, "fraction of null fields, e.g. 0.01 (never a whole row)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same data")
	shard := fs.String("shard", "0/1", "i/N: write only the i-th of N disjoint device slices (devices d with d mod N = i)")
	format := fs.String("format", "influx", "influx (line protocol), csv or pgcopy (PostgreSQL COPY text)")
	precision := fs.String("precision", "ns", "influx timestamp precision: ns, us, ms or s")
	fs.StringVar(&o.out, "out", "", "output file (default standard output); csv/pgcopy of several measurements write one file each, e.g. out.cpu.csv")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "goroutines generating in parallel (does not change the output)")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), on or off")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar and no summary on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0)))
	}
	var err error
	if o.format, err = file.ParseFormat(*format); err != nil {
		errs = append(errs, fmt.Errorf("--format: %w", err))
	}
	if o.shard, err = sources.ParseShard(*shard); err != nil {
		errs = append(errs, fmt.Errorf("--shard: %w", err))
	}
	if o.precision, err = lineproto.ParsePrecision(*precision); err != nil {
		errs = append(errs, fmt.Errorf("--precision: %w", err))
	}
	if !c.End.Set {
		errs = append(errs, errors.New("--end: generate writes a finite data set: give an end time"))
	}
	if o.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers %d: want at least 1", o.workers))
	}
	switch o.progress {
	case "auto", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("--progress %q: want auto, on or off", o.progress))
	}
	return o, errors.Join(errs...)
}

// flagName turns a setting name into its flag: OUT_OF_ORDER -> --out-of-order.
func flagName(setting string) string {
	return "--" + strings.ReplaceAll(strings.ToLower(setting), "_", "-")
}

// settingErrors rewrites *sources.SettingError into flag terms.
func settingErrors(err error) error {
	return sources.RenameSettings(err, func(setting string, cause error) error {
		if setting == "" {
			return cause
		}
		return fmt.Errorf("%s: %w", flagName(setting), cause)
	})
}

// Main runs `soakd generate args...` and returns the exit code: 0 done, 1
// failed, 2 bad flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", err)
		return 2
	}
	src, err := iot.Build(o.source, o.cfg, o.seed, o.shard)
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", settingErrors(err))
		return 2
	}
	multi := o.format.Split(src.Schemas())
	if multi && o.out == "" {
		fmt.Fprintf(stderr, "soakd generate: --format %s writes one file per measurement and %s has %d: give --out FILE (e.g. --out data%s)\n",
			o.format, o.source, len(src.Schemas()), o.format.Ext())
		return 2
	}
	outs, closeAll, err := openOutputs(o, src, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", err)
		return 1
	}
	var bar *progressbar.ProgressBar
	if !o.quiet && (o.progress == "on" || o.progress == "auto" && isTerminal(stderr)) {
		bar = progressbar.NewOptions64(src.Rows(),
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("generating "+o.source),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	began := time.Now()
	g := &generator{src: src, format: o.format, precision: o.precision, workers: o.workers, multi: multi}
	st, err := g.run(ctx, outs, bar)
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		fmt.Fprintf(stderr, "soakd generate: %v\n", err)
		return 1
	}
	if st.rows != src.Rows() {
		fmt.Fprintf(stderr, "soakd generate: BUG: wrote %d rows, the data set has %d\n", st.rows, src.Rows())
		return 1
	}
	if !o.quiet {
		secs := time.Since(began).Seconds()
		dest := o.out
		if dest == "" {
			dest = "stdout"
		}
		fmt.Fprintf(stderr, "generated %d rows, %d values, %d bytes in %.3fs (%.0f rows/s, %.0f values/s) to %s\n",
			st.rows, st.values, st.bytes, secs, float64(st.rows)/secs, float64(st.values)/secs, dest)
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openOutputs opens the output(s) (see file.OpenOutputs); --out "" is
// standard output.
func openOutputs(o *options, src *iot.Source, stdout io.Writer) ([]*bufio.Writer, func() error, error) {
	path := o.out
	if path == "" {
		path = "-"
	}
	outs, err := file.OpenOutputs(path, o.format, src.Schemas(), false, stdout)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create --out file: %w", err)
	}
	ws := make([]*bufio.Writer, len(outs))
	for i, out := range outs {
		ws[i] = out.W
	}
	return ws, func() error { return file.CloseOutputs(outs) }, nil
}
