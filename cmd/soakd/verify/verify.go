// Package verify implements `soakd verify`: after a run, it checks what
// each workload's target holds against what the run wrote and the target
// acknowledged, recomputing every row or record from the seed rather than
// from a copy of the data.
//
//	soakd run --summary-json run.json ...      # the run records what it wrote
//	soakd verify --summary-json run.json       # reads it back: exit 1 when acknowledged data was lost or corrupted
//
// The settings are a run's (the same variables and flags); with
// --summary-json the run's summary supplies the data set's settings (with
// START=now as it resolved) and which writes were acknowledged, and the
// environment and flags override them (TARGET, PASSWORD). Without a
// summary a series data set must be finite and every row of it is taken
// as acknowledged, and a KV key space is taken as loaded.
//
// Series targets (PostgreSQL and its dialects, InfluxDB through InfluxQL)
// are checked device by device: each device is replayed alone, each row
// placed in the write that carried it (acknowledged, failed, or never
// sent), and compared with the rows the target holds for that device.
// KV targets are checked record by record over the whole key space.
package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/opener"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// options are verify's own settings.
type options struct {
	JSON     string `env:"VERIFY_JSON" help:"soakd verify: write the report as JSON to this file"`
	Examples int    `env:"VERIFY_EXAMPLES" envDefault:"5" help:"soakd verify: how many mismatched values to show per workload"`
	Ranges   int    `env:"VERIFY_RANGES" envDefault:"100" help:"soakd verify: how many lost or duplicated ranges to print per workload (the JSON report has them all)"`
}

// Settings lists verify's own settings (SOAKD_VERIFY_*).
func Settings() []settings.Setting { return settings.Of(&options{}, config.EnvPrefix) }

const usage = `Usage: soakd verify [--summary-json RUN.json] [setting flags]

Checks what each workload's target holds against what a run wrote and the
target acknowledged: lost (acknowledged but absent), duplicated,
mismatched, and in doubt (failed writes, which may or may not have landed).
The settings are the run's; --summary-json reads the run's summary, whose
settings (START=now as it resolved) and record of acknowledged writes are
used, the environment and flags winning (TARGET, PASSWORD).

Exit codes: 0 every acknowledged unit is stored intact, 1 some was lost or
corrupted (or the target could not be read), 2 invalid configuration.
`

// command is verify's preamble: its settings are a run's and its own.
func command(p *config.Plugins) *cli.Command {
	return &cli.Command{Name: "verify", Prog: "soakd", Usage: usage, Own: Settings(), OwnPrefix: config.EnvPrefix + "VERIFY_",
		Prefix: config.EnvPrefix, IsBool: config.GlobalBoolFlag, See: "soakd config",
		Known: func(env map[string]string) []settings.Setting {
			if path := env[config.EnvPrefix+"SUMMARY_JSON"]; path != "" {
				if sum, err := readSummary(path); err == nil {
					env = withSummary(env, sum)
				}
			}
			cfg, _ := config.Load(env, p.Sources)
			return append(cfg.Settings(), Settings()...)
		}}
}

// Main runs soakd verify.
func Main(ctx context.Context, args []string, environ map[string]string, p *config.Plugins, stdout, stderr io.Writer) int {
	c := command(p)
	f, code, ok := c.Parse(args, environ, stdout, stderr)
	if !ok {
		return code
	}
	jobs, opts, err := load(c, f, p)
	if err != nil {
		return c.Refuse(stderr, err)
	}
	rep := &Report{}
	code = cli.ExitOK
	for i, j := range jobs {
		if j.entry.Kind == sources.Queries {
			fmt.Fprintf(stdout, "\n== verify workload %s: skipped: source %s runs queries, which write nothing to verify\n", j.w.Name, j.w.Source)
			continue
		}
		if j.skip != "" {
			fmt.Fprintf(stdout, "\n== verify workload %s: skipped: %s\n", j.w.Name, j.skip)
			continue
		}
		wr, err := j.run(ctx, p)
		if err != nil && ctx.Err() != nil {
			for _, j := range jobs[i:] {
				if j.entry.Kind == sources.Queries {
					continue
				}
				fmt.Fprintf(stderr, "soakd: workload %s: not verified: stopped by a signal\n", j.w.Name)
			}
			code = cli.ExitFailed
			break
		}
		if err != nil {
			fmt.Fprintf(stderr, "soakd: workload %s: cannot verify: %s\n", j.w.Name, j.scrub(err.Error()))
			code = cli.ExitFailed
			continue
		}
		wr.write(stdout, opts)
		rep.Workloads = append(rep.Workloads, *wr)
		if wr.Lost+wr.Duplicated+wr.Mismatched > 0 {
			code = cli.ExitFailed
		}
	}
	if opts.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(opts.JSON, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "soakd: cannot write the report: %v\n", err)
			return cli.ExitFailed
		}
	}
	return code
}

// job is one workload to verify, with the run's record of it.
type job struct {
	w       *config.Workload
	entry   *sources.Entry
	phases  []report.WorkloadSummary // the run's entries for the workload (none without a summary)
	summary string                   // the summary file, or ""
	skip    string                   // why the workload has nothing to verify, or ""
}

// scrub hides the workload's secrets in s, as soakd run does in its
// logs, /status and summary.
func (j *job) scrub(s string) string { return j.w.Scrubber()(s) }

// load reads the run's summary (if any) and the configuration, summary
// settings first and the environment and flags over them, and refuses
// what c's scope does not know; every problem is returned at once.
func load(c *cli.Command, f settings.CommandLine, p *config.Plugins) ([]*job, options, error) {
	var opts options
	env := f.Env
	var sum *report.Summary
	if path := env[config.EnvPrefix+"SUMMARY_JSON"]; path != "" {
		var err error
		if sum, err = readSummary(path); err != nil {
			return nil, opts, &settings.Error{Key: config.EnvPrefix + "SUMMARY_JSON", Err: err}
		}
		env = withSummary(env, sum)
	}
	cfg, parseErr := config.Load(env, p.Sources)
	err := cfg.Check(p, parseErr)
	err = errors.Join(err, settings.Parse(&opts, f.Env, config.EnvPrefix))
	if opts.Examples < 0 {
		err = errors.Join(err, &settings.Error{Key: config.EnvPrefix + "VERIFY_EXAMPLES", Err: fmt.Errorf("%d: want 0 or more", opts.Examples)})
	}
	if opts.Ranges < 0 {
		err = errors.Join(err, &settings.Error{Key: config.EnvPrefix + "VERIFY_RANGES", Err: fmt.Errorf("%d: want 0 or more", opts.Ranges)})
	}
	// As soakd run: a SOAKD_* variable that is no setting is an error
	// unless SOAKD_ALLOW_UNKNOWN; generate's SOAKD_GEN_* may share the
	// environment.
	if _, err := c.Check(f, cli.WorkloadScope(cfg, f.Env, p.Sources, Settings(), nil, "gen"), err); err != nil {
		return nil, opts, err
	}
	var errs []error
	var jobs []*job
	for _, w := range cfg.Workload {
		if e := p.Sources.Lookup(w.Source); e != nil && e.Kind == sources.Queries {
			// A query workload writes nothing: Main says it is skipped.
			jobs = append(jobs, &job{w: w, entry: e})
			continue
		}
		if w.Builtin {
			errs = append(errs, &settings.Error{Key: config.Prefix(w.Name) + "TARGET",
				Err: errors.New("not set: a run without a TARGET wrote to a built-in target, which kept nothing to verify")})
			continue
		}
		if keepsNothing(p, w.Sink.URL) {
			// A run on the built-in targets wrote to a sink that discards
			// rows, or to an in-process server gone with the run: reading
			// it back would report every unit lost.
			errs = append(errs, &settings.Error{Key: config.Prefix(w.Name) + "TARGET",
				Err: fmt.Errorf("%s is a built-in target, which keeps nothing: there is nothing to read back", w.Sink.Redacted)})
			continue
		}
		j := &job{w: w, entry: p.Sources.Lookup(w.Source)}
		if sum == nil && j.entry.Kind == sources.Series {
			// Without the run's record every row of the data set is taken
			// as acknowledged: an endless one has no last row.
			if err := endless(w); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if sum != nil {
			j.summary = env[config.EnvPrefix+"SUMMARY_JSON"]
			for _, e := range sum.Workloads {
				if e.Name == w.Name && e.Verify != nil {
					j.phases = append(j.phases, e)
				}
			}
			if len(j.phases) == 0 && neverStarted(sum, w.Name) {
				// soakd reports a workload whose target never became
				// ready with zeros and no record: it wrote nothing.
				j.skip = "it never started (its target was never ready), so it wrote nothing"
			} else if len(j.phases) == 0 {
				errs = append(errs, &settings.Error{Key: config.EnvPrefix + "SUMMARY_JSON",
					Err: fmt.Errorf("the summary has no record of workload %s (a run of an older soakd, or another run)", w.Name)})
				continue
			}
		}
		jobs = append(jobs, j)
	}
	return jobs, opts, errors.Join(errs...)
}

// endless returns nil when w's settings make a finite data set, and
// otherwise an error naming each setting that makes it endless (END,
// ROWS, CLOCK), for a verify without the run's summary.
func endless(w *config.Workload) error {
	if w.SourceSettings == nil {
		return nil
	}
	return errors.Join(config.PrefixSettingErrors(sources.RenameSettings(w.SourceSettings.Finite(), func(setting string, cause error) error {
		return &sources.SettingError{Setting: setting,
			Err: fmt.Errorf("%w (without the run's summary, --summary-json, soakd verify reads back a finite data set only)", cause)}
	}), config.Prefix(w.Name))...)
}

// keepsNothing reports whether u names one of the built-in targets (the
// same scheme and host, whatever the parameters: null://?latency=...,
// redis://embedded), which keep nothing after the run.
func keepsNothing(p *config.Plugins, u *url.URL) bool {
	if u == nil {
		return false
	}
	for _, raw := range p.Builtin {
		b, err := url.Parse(raw)
		if err == nil && b.Scheme == u.Scheme && b.Host == u.Host {
			return true
		}
	}
	return false
}

func readSummary(path string) (*report.Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s report.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s is not a soakd summary: %w", path, err)
	}
	if len(s.Workloads) == 0 {
		return nil, fmt.Errorf("%s has no workloads", path)
	}
	return &s, nil
}

// neverStarted says whether the summary's every entry for workload name
// scheduled nothing: a workload that never started.
func neverStarted(s *report.Summary, name string) bool {
	seen := false
	for _, e := range s.Workloads {
		if e.Name == name {
			if e.Scheduled > 0 || e.Units > 0 {
				return false
			}
			seen = true
		}
	}
	return seen
}

// withSummary returns env with the summary's workloads, targets and data
// settings added where env does not set them. A workload without a
// record of what it wrote (a summary of an older soakd) is among them,
// for load to name.
func withSummary(env map[string]string, s *report.Summary) map[string]string {
	out := map[string]string{}
	var names []string
	for _, w := range s.Workloads {
		if !slices.Contains(names, w.Name) {
			names = append(names, w.Name)
		}
		p := config.Prefix(w.Name)
		if w.Source != "" {
			out[p+"SOURCE"] = w.Source
		}
		if w.Verify != nil {
			for k, v := range w.Verify.Settings {
				out[p+k] = v
			}
		}
		if w.Target != "" {
			out[p+"TARGET"] = unredact(w.Target)
		}
	}
	if len(names) > 0 {
		out[config.EnvPrefix+"WORKLOADS"] = strings.Join(names, ",")
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// unredact drops the placeholders a summary shows for secrets, so the
// target takes SOAKD_<W>_PASSWORD and _TOKEN instead.
func unredact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	// Unchanged, the target stays as written: url.String would turn
	// null://?x into null:?x.
	changed := false
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw == "xxxxx" {
			u.User = url.User(u.User.Username())
			changed = true
		}
	}
	q := u.Query()
	for k, v := range q {
		if sinks.SecretParam(k) && len(v) == 1 && v[0] == "xxxxx" {
			q.Del(k)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// run verifies one workload.
func (j *job) run(ctx context.Context, p *config.Plugins) (*WorkloadReport, error) {
	w := j.w
	o, err := opener.Open(ctx, p, w, 1, 1, nil)
	if err != nil {
		return nil, err
	}
	src, sink := o.Source, o.Sink
	defer func() { _ = sink.Close(context.WithoutCancel(ctx)) }()
	if pg, ok := sink.(sinks.Pinger); ok {
		if err := pg.Ping(ctx); err != nil {
			return nil, err
		}
	}
	rep := &WorkloadReport{Name: w.Name, Source: w.Source, Target: w.Sink.Redacted, Kind: j.entry.Kind.String(), Summary: j.summary}
	if j.entry.Kind == sources.KV {
		err = j.verifyKV(ctx, src, sink, rep)
	} else {
		err = j.verifySeries(ctx, src, sink, rep)
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}
