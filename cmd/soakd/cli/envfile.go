package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/sirupsen/logrus"
)

// EnvFileUsage is what every command's help says of --env-file.
const EnvFileUsage = `
Every command also takes --env-file FILE: settings read from FILE in the format of
compose's env_file (VAR=VALUE lines, # comments, quotes, export, ${VAR} interpolation).
It may be repeated: a later file wins over an earlier one, and a variable set in the
environment wins over every file, so one setting of a file is changed without editing it.
`

// EnvFiles takes the --env-file flags out of args and reads each file,
// in order, as compose reads a service's env_file list: the variables
// accumulate, a later file's value replacing an earlier one's, and
// ${VAR} in a value is looked up first in environ, then in what the
// files have set so far. It returns the other arguments, and environ
// with every variable of the files that environ does not set itself: the
// environment wins over the files, as compose's environment: over its
// env_file:. A file that cannot be read or parsed is an error naming it
// (and the line at fault), whose text never quotes a value: the file
// may hold passwords. compose's warnings (a ${VAR} that is not set, read
// as empty) are written to warn, each naming its file.
func EnvFiles(args []string, environ map[string]string, warn io.Writer) (rest []string, env map[string]string, err error) {
	var files []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != "env-file" {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, nil, errors.New("flag --env-file needs a value")
			}
			i++
			value = args[i]
		}
		if value == "" {
			return nil, nil, errors.New("flag --env-file needs a file name")
		}
		files = append(files, value)
	}
	if len(files) == 0 {
		return args, environ, nil
	}
	// ${VAR} reads the environment before the files, as compose reads
	// the project's environment before the service's.
	lookup := func(k string) (string, bool) {
		v, ok := environ[k]
		return v, ok
	}
	vars := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, nil, fmt.Errorf("--env-file %s: %w", f, err)
		}
		before := maps.Clone(vars)
		warnings, err := composeWarnings(func() error {
			return dotenv.ParseWithFormat(bytes.NewReader(b), f, vars, lookup, dotenv.DotEnv)
		})
		if err != nil {
			line, msg := envFileProblem(b, before, lookup, err)
			return nil, nil, fmt.Errorf("--env-file %s, line %d: %s", f, line, msg)
		}
		for i, w := range warnings {
			if i == maxWarnings {
				fmt.Fprintf(warn, "soakd: --env-file %s: and %d more variables not set\n", f, len(warnings)-i)
				break
			}
			fmt.Fprintf(warn, "soakd: --env-file %s: %s\n", f, w)
		}
	}
	env = maps.Clone(environ)
	if env == nil {
		env = map[string]string{}
	}
	for k, v := range vars {
		if _, set := environ[k]; !set {
			env[k] = v
		}
	}
	return rest, env, nil
}

// maxWarnings is how many of a file's warnings are printed.
const maxWarnings = 10

// logrusMu serializes composeWarnings, which changes logrus' standard
// logger.
var logrusMu sync.Mutex

// composeWarning is compose-go's warning of a ${VAR} that is not set.
var composeWarning = regexp.MustCompile(`^The ".*" variable is not set\.`)

// composeWarnings runs parse and returns the warnings compose-go gave
// meanwhile of variables that are not set, each once, in order: it logs
// them with logrus' standard logger, which would print them in its own
// format, without the file, among soakd's lines. Any other entry logged
// meanwhile is written where logrus wrote before.
func composeWarnings(parse func() error) ([]string, error) {
	logrusMu.Lock()
	defer logrusMu.Unlock()
	l := logrus.StandardLogger()
	h := &warningHook{out: l.Out}
	hooks := l.ReplaceHooks(logrus.LevelHooks{})
	l.AddHook(h)
	l.SetOutput(io.Discard)
	defer func() {
		l.SetOutput(h.out)
		l.ReplaceHooks(hooks)
	}()
	err := parse()
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs), err
}

// warningHook keeps compose-go's warnings of variables that are not set,
// each once, and writes any other entry to out. logrus calls hooks outside
// its lock: mu guards both.
type warningHook struct {
	mu   sync.Mutex
	msgs []string
	out  io.Writer
}

func (*warningHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *warningHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !composeWarning.MatchString(e.Message) {
		b, err := e.Bytes()
		if err != nil {
			return err
		}
		_, err = h.out.Write(b)
		return err
	}
	if !slices.Contains(h.msgs, e.Message) {
		h.msgs = append(h.msgs, e.Message)
	}
	return nil
}

var (
	// The messages of compose-go's parser: "line N: ...".
	lineError = regexp.MustCompile(`^line (\d+): (.*)$`)
	// "unexpected character "%" in variable name "A%B=secret"": the
	// name's quote is the whole line, value included.
	badChar = regexp.MustCompile(`^(unexpected character "(?:[^"\\]|\\.)*") in variable name`)
)

// envFileProblem is the line and the description of err, the error of
// parsing src after the variables before: compose-go's own description
// without the text of the line it quotes, which may be a secret's value.
// The line is the first whose end makes the file fail the same way:
// compose-go's own count is that of the line it stopped reading, past
// the end of a quoted value left open, and an interpolation error has
// none.
func envFileProblem(src []byte, before map[string]string, lookup dotenv.LookupFn, err error) (int, string) {
	inner := unwrapped(err)
	line := 0
	lines := bytes.SplitAfter(src, []byte("\n"))
	for n := 1; n <= len(lines) && line == 0; n++ {
		e := dotenv.ParseWithFormat(bytes.NewReader(bytes.Join(lines[:n], nil)), "", maps.Clone(before), lookup, dotenv.DotEnv)
		if e != nil && withoutLine(unwrapped(e).Error()) == withoutLine(inner.Error()) {
			line = n
		}
	}
	var invalid *template.InvalidTemplateError
	var missing *template.MissingRequiredError
	msg := withoutLine(inner.Error())
	switch {
	case errors.As(inner, &invalid):
		msg = "invalid interpolation: ${NAME}, ${NAME:-default}, ... (a literal $ is written $$)"
	case errors.As(inner, &missing):
		// Its variable and reason are the file's own words, not a value.
	case strings.HasPrefix(msg, "unterminated quoted value"):
		msg = "unterminated quoted value"
	case badChar.MatchString(msg):
		msg = badChar.FindStringSubmatch(msg)[1] + " in a variable name"
	}
	if m := lineError.FindStringSubmatch(inner.Error()); m != nil && line == 0 {
		line, _ = strconv.Atoi(m[1])
	}
	return line, msg
}

// unwrapped is compose-go's error without its "failed to read FILE: ".
func unwrapped(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// withoutLine is a parser's message without its "line N: ".
func withoutLine(msg string) string {
	if m := lineError.FindStringSubmatch(msg); m != nil {
		return m[2]
	}
	return msg
}
