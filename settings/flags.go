package settings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// CommandLine is a command line read as settings: every setting is a
// variable and a flag (SOAKD_IOT_RATE is --iot-rate), and flags win.
type CommandLine struct {
	Env  map[string]string // the environment with the flags applied
	Keys []string          // the variables set by flags, in order
	Cmd  map[string]bool   // the command's own switches that were given (e.g. check)
	Help bool              // -h or --help
}

// ParseFlags applies --name=value and --name value flags onto a copy of
// environ as prefix+NAME=value (prefix SOAKD_ turns --iot-rate into
// SOAKD_IOT_RATE). A flag for which isBool is true may stand alone
// (--pprof is --pprof=true); switches are the command's own boolean flags,
// which are no settings.
func ParseFlags(args []string, environ map[string]string, prefix string, isBool func(flag string) bool, switches ...string) (CommandLine, error) {
	c := CommandLine{Env: maps.Clone(environ), Cmd: map[string]bool{}}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return c, fmt.Errorf("unexpected argument %q (settings are flags: --name value or --name=value)", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !hasValue && (name == "h" || name == "help"):
			c.Help = true
			return c, nil
		case name == "":
			return c, fmt.Errorf("bad flag %q", a)
		case slices.Contains(switches, name):
			// --check, or --check=true/false as Go's flag package takes.
			on := true
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return c, fmt.Errorf("--%s=%s: want true or false", name, value)
				}
				on = b
			}
			c.Cmd[name] = on
			continue
		}
		if !hasValue {
			switch {
			case isBool != nil && isBool(name):
				value = "true"
			case i+1 < len(args):
				i++
				value = args[i]
			default:
				return c, &MissingValueError{Flag: name, Key: prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
			}
		}
		key := prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		c.Env[key] = value
		c.Keys = append(c.Keys, key)
	}
	return c, nil
}

// MissingValueError is a last flag with no value: --rate at the end of
// the line. The caller, which knows the settings, may find the flag is
// unknown instead (soakd --bogus), which is the better message.
type MissingValueError struct {
	Flag string // e.g. iot-rate
	Key  string // the variable it sets, e.g. SOAKD_IOT_RATE
}

func (e *MissingValueError) Error() string { return "flag --" + e.Flag + " needs a value" }
