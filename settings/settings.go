// Package settings is soakd's settings framework: every setting is an
// environment variable SOAKD_* and a flag (SOAKD_IOT_RATE is --iot-rate),
// declared as a field of a struct tagged for caarlos0/env (env,
// envDefault, envPrefix) with its help (help) and how it may be shown
// (secret). The package walks such structs (Of), parses them (Parse) with
// the counts users write (ParseCount), applies a command line onto the
// environment (ParseFlags), names every problem by its variable (Error),
// refuses the variables that are no setting (UnknownVars,
// UnknownVarErrors) and lists settings for --help (WriteTable). What the
// settings are (soakd's configuration, a workload's) is the daemon's.
package settings

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// EnvPrefix starts every soakd environment variable.
const EnvPrefix = "SOAKD_"

// Setting describes one configuration variable.
type Setting struct {
	Key     string // environment variable, e.g. SOAKD_IOT_RATE
	Flag    string // flag name without dashes, e.g. iot-rate
	Default string
	Help    string
	Secret  bool // value never shown
	URL     bool // value shown with its password redacted
	URLs    bool // value holds URLs among other words, each shown redacted
	Field   string
	File    bool // the variable names a file whose content is the value
	Bool    bool // a flag that may stand alone (--pprof is --pprof=true)
}

// Of lists the settings of v, a pointer to a struct tagged for
// caarlos0/env (env, envDefault, help), under prefix, walking nested
// structs as caarlos0/env does (envPrefix tags are not used here): the
// way soakd config lists them.
func Of(v any, prefix string) []Setting {
	var out []Setting
	walk(reflectTypeOf(v), prefix, &out)
	return out
}

// Parse parses v, a pointer to a struct tagged as Of reads, from environ
// under prefix with the defaults applied. Every problem is returned at
// once, each an *Error naming its variable.
func Parse(v any, environ map[string]string, prefix string) error {
	if err := env.ParseWithOptions(v, envOptions(environ, prefix)); err != nil {
		return errors.Join(nameErrors(err, v, prefix, environ)...)
	}
	return nil
}

// Error is a problem with one setting, named by its variable.
type Error struct {
	Key string // e.g. SOAKD_IOT_RATE
	Err error
}

func (e *Error) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error of the variable key.
func Errorf(key, format string, args ...any) error {
	return &Error{Key: key, Err: fmt.Errorf(format, args...)}
}

// Problems lists the errors err joins (errors.Join, nested), one problem
// each, in order: the lines of an "invalid configuration" report.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	return []error{err}
}

// nameErrors rewrites caarlos0/env's errors, which name Go fields, so each
// names its environment variable. Nested structs can reuse a field name
// (Config.Duration, SweepConfig.Duration): of the variables a field name
// stands for, the one set in environ is the one that failed to parse.
func nameErrors(err error, v any, prefix string, environ map[string]string) []error {
	keys := map[string]string{} // Go field name -> env var
	for _, s := range Of(v, prefix) {
		if _, set := environ[keys[s.Field]]; keys[s.Field] == "" || !set {
			keys[s.Field] = s.Key
		}
	}
	var agg env.AggregateError
	list := []error{err}
	if errors.As(err, &agg) {
		list = agg.Errors
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		var pe env.ParseError
		var fe env.LoadFileContentError
		switch {
		case errors.As(e, &pe):
			key := keys[pe.Name]
			if key == "" {
				key = prefix + pe.Name
			}
			err := pe.Err
			if v, set := environ[key]; set {
				err = plainError(pe.Type, v, err)
			}
			// A value with several problems (QUERIES=bogus1,bogus2) is
			// one line each, every one naming the variable.
			for _, p := range Problems(err) {
				out = append(out, &Error{Key: key, Err: p})
			}
		case errors.As(e, &fe):
			out = append(out, &Error{Key: fe.Key, Err: fmt.Errorf("cannot read file %q: %w", fe.Filename, fe.Err)})
		default:
			out = append(out, e)
		}
	}
	return out
}

// plainError says what a value of type t looks like where the parser's
// own error (strconv's "parsing "x": invalid syntax", time's "missing unit
// in duration") names a Go function, not the setting's grammar.
func plainError(t reflect.Type, v string, err error) error {
	var num *strconv.NumError
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return fmt.Errorf("%q is not a duration (want a number with a unit: 500ms, 10s, 1m30s, 2h)", v)
	case t.Kind() == reflect.Bool && errors.As(err, &num):
		return fmt.Errorf("%q is not a boolean (want true or false, 1 or 0)", v)
	case (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32) && errors.As(err, &num):
		if errors.Is(num.Err, strconv.ErrRange) {
			return fmt.Errorf("%q is out of range", v)
		}
		return fmt.Errorf("%q is not a number (want e.g. 0.5, 10, 1e-3 or 2.5k)", v)
	case (reflect.Int <= t.Kind() && t.Kind() <= reflect.Uint64) && errors.As(err, &num):
		// An integer no count parser reads (counts are int, int64 and
		// uint64).
		return fmt.Errorf("%q is not a whole number in range (%s)", v, countHint)
	}
	return err
}

// flagName turns SOAKD_IOT_BATCH_SIZE into iot-batch-size.
func flagName(key string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(key, EnvPrefix)), "_", "-")
}

func reflectTypeOf(v any) reflect.Type {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// textUnmarshaler is the interface caarlos0/env uses for custom types;
// such structs are leaves, not nested settings.
var textUnmarshaler = reflect.TypeOf((*interface{ UnmarshalText([]byte) error })(nil)).Elem()

func walk(t reflect.Type, prefix string, out *[]Setting) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("env")
		if tag == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Struct && tag == "" && !reflect.PointerTo(ft).Implements(textUnmarshaler) {
			walk(ft, prefix+f.Tag.Get("envPrefix"), out)
			continue
		}
		if tag == "" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		secret := f.Tag.Get("secret")
		*out = append(*out, Setting{
			Key:     prefix + name,
			Flag:    flagName(prefix + name),
			Default: f.Tag.Get("envDefault"),
			Help:    f.Tag.Get("help"),
			Secret:  secret == "true",
			URL:     secret == "url",
			URLs:    secret == "urls",
			Field:   f.Name,
			File:    strings.Contains(","+opts+",", ",file,"),
			Bool:    ft.Kind() == reflect.Bool,
		})
	}
}
