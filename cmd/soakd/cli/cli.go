// Package cli is how every soakd command starts: its command line read as
// settings (--iot-rate is SOAKD_IOT_RATE), --help with the command's own
// settings, and the check of its configuration, which refuses a flag or a
// SOAKD_* variable that is no setting the same way in every command; and
// soakd's exit codes. Before any of it, EnvFiles reads the files of
// --env-file into the environment.
//
// A command describes itself as a Command, then
//
//	cl, code, ok := cmd.Parse(args, environ, stdout, stderr) // flags, --help
//	... load the configuration from cl.Env ...
//	unknown, err := cmd.Check(cl, scope, err)                // unknown flags and variables
//	if err != nil { return cmd.Refuse(stderr, err) }          // every problem at once, exit 2
package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sources"
)

// Exit codes of every soakd command.
const (
	ExitOK     = 0 // done: the run ended and passed, the data verified, the file written
	ExitFailed = 1 // the run, a threshold, the verification or the writing failed
	ExitConfig = 2 // invalid configuration: nothing was started
)

// Command is what a command's preamble needs to know of it.
type Command struct {
	// Name is the command (run, capacity, generate, ...); Prog starts its
	// messages: "soakd", or "soakd generate".
	Name, Prog string
	// Usage is what --help prints, followed by Own, the command's own
	// settings (those under OwnPrefix), as a table; Help, when not nil,
	// prints the help instead.
	Usage     string
	Own       []settings.Setting
	OwnPrefix string
	Help      func(w io.Writer, cl settings.CommandLine)
	// Prefix starts the variable a flag sets: --iot-rate sets
	// SOAKD_IOT_RATE with Prefix SOAKD_.
	Prefix string
	// Switches are the command's own flags, which are no settings
	// (config --check).
	Switches []string
	// IsBool reports whether a flag may stand alone (--pprof is
	// --pprof=true); nil: none may.
	IsBool func(flag string) bool
	// Known lists the settings of a command line whose environment (flags
	// applied) is env: a last flag with no value that names none of them
	// is unknown rather than short of a value.
	Known func(env map[string]string) []settings.Setting
	// See is where the settings are listed, for an unknown flag's message:
	// "soakd config".
	See string
}

// Parse reads the command line: flags onto environ, or --help. When ok
// is false the command is over (its help was printed, or its flags were
// wrong) and exits with code.
func (c *Command) Parse(args []string, environ map[string]string, stdout, stderr io.Writer) (cl settings.CommandLine, code int, ok bool) {
	cl, err := settings.ParseFlags(args, environ, c.Prefix, c.IsBool, c.Switches...)
	if missing := (*settings.MissingValueError)(nil); errors.As(err, &missing) && c.Known != nil &&
		!slices.ContainsFunc(c.Known(cl.Env), func(s settings.Setting) bool { return s.Key == missing.Key }) {
		// soakd --bogus: that the flag is unknown is the news, not that it
		// lacks a value.
		err = c.unknownFlag(missing.Flag)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Prog, err)
		return cl, ExitConfig, false
	}
	if cl.Help {
		c.help(stdout, cl)
		return cl, ExitOK, false
	}
	return cl, ExitOK, true
}

func (c *Command) help(w io.Writer, cl settings.CommandLine) {
	// --env-file is read before any command parses its flags (see
	// EnvFiles): every help says so in the same words.
	defer fmt.Fprint(w, EnvFileUsage)
	if c.Help != nil {
		c.Help(w, cl)
		return
	}
	fmt.Fprint(w, c.Usage)
	if len(c.Own) == 0 {
		return
	}
	own := slices.Clone(c.Own)
	for i := range own {
		// The help of a command's own setting names the command for soakd
		// config's list; under the command's usage that goes without saying.
		own[i].Help = strings.TrimPrefix(own[i].Help, "soakd "+c.Name+": ")
	}
	fmt.Fprintf(w, "\nOwn settings (%s*):\n", c.OwnPrefix)
	settings.WriteTable(w, own, nil)
}

func (c *Command) unknownFlag(flag string) error {
	return fmt.Errorf("unknown flag --%s (see %s)", flag, c.See)
}

// Scope is what a command's loaded configuration may set: the flags and
// variables outside it are refused.
type Scope struct {
	// Settings are every setting the command reads: a flag that names
	// none is unknown, and an unknown variable's likely typo is one.
	Settings []settings.Setting
	// Vars are the SOAKD_* variables of the environment that are no
	// setting (see settings.UnknownVars), less those the command leaves
	// to others: another command's settings, or those of a workload whose
	// source is unknown.
	Vars []string
	// Workloads are the workloads the command runs: an unknown variable
	// may be one's setting without the workload, or a setting of a
	// workload not listed.
	Workloads []string
	// Unknowable is true when a problem already reported (an unknown
	// source) leaves the settings unknown: flags are not checked then.
	Unknowable bool
}

// Check adds to err, the problems of loading the configuration, those of
// the flags and variables outside sc: each flag that names no setting,
// then each variable unless SOAKD_ALLOW_UNKNOWN. It returns the unknown
// variables, which an allowed command warns of.
func (c *Command) Check(cl settings.CommandLine, sc Scope, err error) (unknown []string, _ error) {
	var errs []error
	if !sc.Unknowable {
		known := map[string]bool{}
		for _, s := range sc.Settings {
			known[s.Key] = true
		}
		for _, k := range cl.Keys {
			if !known[k] {
				errs = append(errs, c.unknownFlag(strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, c.Prefix), "_", "-"))))
			}
		}
	}
	errs = append(errs, settings.Problems(err)...)
	for _, k := range sc.Vars {
		// An unknown flag is reported as such, not as its variable.
		if !slices.Contains(cl.Keys, k) {
			unknown = append(unknown, k)
		}
	}
	if !settings.AllowUnknown(cl.Env) {
		errs = append(errs, config.UnknownVarErrors(unknown, sc.Settings, sc.Workloads)...)
	}
	return unknown, errors.Join(errs...)
}

// Refuse reports an invalid configuration, every problem on its line,
// and returns ExitConfig.
func (c *Command) Refuse(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: invalid configuration:\n", c.Prog)
	for _, p := range settings.Problems(err) {
		fmt.Fprintf(stderr, "  %s\n", p)
	}
	return ExitConfig
}

// WorkloadScope is the scope of a command that runs cfg's workloads (run,
// capacity, sweep, config, verify), read from env: their settings and
// own, the command's. The variables of shared (the other commands'
// settings: one environment often serves them all) are no error, nor
// those of a workload in others that cfg does not run (generate's gen),
// nor those of a workload whose source is unknown, which is reported as
// its own error.
func WorkloadScope(cfg *config.Config, env map[string]string, srcs *sources.Registry, own, shared []settings.Setting, others ...string) Scope {
	var names []string
	for _, w := range cfg.Workload {
		names = append(names, w.Name)
	}
	sc := Scope{Settings: append(cfg.Settings(), own...), Workloads: names}
	for _, k := range cfg.UnknownVars(env, srcs, append(slices.Clip(own), shared...)...) {
		if !slices.ContainsFunc(others, func(o string) bool { return !slices.Contains(names, o) && strings.HasPrefix(k, config.Prefix(o)) }) {
			sc.Vars = append(sc.Vars, k)
		}
	}
	return sc
}
