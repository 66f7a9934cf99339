package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func writeEnvFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The environment wins over every file, a later file over an earlier
// one; the other arguments are left in order, whichever way the flag is
// written; compose's syntax (export, quotes, comments, interpolation
// from the environment first, then from the files) reads as compose
// reads it.
func TestEnvFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := writeEnvFile(t, dir, "first.env", `# the first file
export SOAKD_A=first
SOAKD_B=first
SOAKD_C=first   # a comment after a value
SOAKD_D="two words\tand a tab"
SOAKD_E='single ${SOAKD_A} quotes'

HOST=db.example
`)
	second := writeEnvFile(t, dir, "second.env", `SOAKD_B=second
SOAKD_C=second
SOAKD_F=postgres://${HOST}:5432/x
SOAKD_G=${SOAKD_C}-${UNSET:-dflt}
SOAKD_H=${SOAKD_ENV}
`)
	environ := map[string]string{"SOAKD_C": "env", "SOAKD_ENV": "from-env", "HOME": "/root"}
	var warned bytes.Buffer
	rest, env, err := EnvFiles([]string{"--env-file", first, "--x-rate", "5", "-env-file=" + second, "--check"}, environ, &warned)
	if err != nil {
		t.Fatal(err)
	}
	if warned.Len() > 0 {
		t.Errorf("warnings for files whose every variable is set or has a default: %s", warned.String())
	}
	if want := []string{"--x-rate", "5", "--check"}; !slices.Equal(rest, want) {
		t.Errorf("args left %q, want %q", rest, want)
	}
	for k, want := range map[string]string{
		"SOAKD_A": "first",  // export
		"SOAKD_B": "second", // the later file wins
		"SOAKD_C": "env",    // the environment wins over both
		"SOAKD_D": "two words\tand a tab",
		"SOAKD_E": "single ${SOAKD_A} quotes",
		"SOAKD_F": "postgres://db.example:5432/x", // a variable of the first file
		"SOAKD_G": "env-dflt",                     // the environment's value, as compose interpolates
		"SOAKD_H": "from-env",
		"HOME":    "/root",
	} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if environ["SOAKD_A"] != "" {
		t.Error("the caller's environment was changed")
	}
	// No --env-file: the arguments and environment as they were.
	if rest, env, err := EnvFiles([]string{"--a", "1"}, environ, io.Discard); err != nil || !slices.Equal(rest, []string{"--a", "1"}) || env["SOAKD_A"] != "" {
		t.Errorf("without --env-file: %q %v %v", rest, env, err)
	}
}

// A file that cannot be read or parsed is named, with the line at fault,
// and the error never quotes the line: its value may be a password.
func TestEnvFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"open-quote.env", "A=1\nSOAKD_X_PASSWORD=\"hunter2\nB=2\n", "line 2: unterminated quoted value"},
		{"bad-name.env", "# c\n\nSOAKD_X%=hunter2\n", `line 3: unexpected character "%" in a variable name`},
		{"space.env", "A=1\nSOAKD X=hunter2\n", "line 2: key cannot contain a space"},
		{"template.env", "A=\"x\ny\"\nSOAKD_X_PASSWORD=hunter2${\n", "line 3: invalid interpolation"},
		{"required.env", "A=1\nB=${SOAKD_NONE:?needs a value}\n", "line 2: required variable SOAKD_NONE is missing a value: needs a value"},
	} {
		path := writeEnvFile(t, dir, tc.name, tc.text)
		_, _, err := EnvFiles([]string{"--env-file", path}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--env-file "+path+", "+tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %v, want %q, without the value", tc.name, err, tc.want)
		}
	}
	for args, want := range map[string]string{
		"--env-file " + filepath.Join(dir, "none.env"): "--env-file " + filepath.Join(dir, "none.env") + ": no such file or directory",
		"--env-file " + dir:                            "--env-file " + dir + ": is a directory",
		"--x 1 --env-file":                             "flag --env-file needs a value",
		"--env-file=":                                  "flag --env-file needs a file name",
	} {
		if _, _, err := EnvFiles(strings.Fields(args), nil, io.Discard); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", args, err, want)
		}
	}
}

// A ${VAR} that is not set is read as empty, as compose reads it, with
// compose's warning naming the file, once per variable, among soakd's own
// lines: it was logrus' line, in its own format and without the file.
func TestEnvFileUnsetVariableWarns(t *testing.T) {
	t.Parallel()
	path := writeEnvFile(t, t.TempDir(), "unset.env", "SOAKD_KV_RATE=${SOAKD_TEST_NO_SUCH_RATE}\nSOAKD_X=${SOAKD_TEST_NO_SUCH_RATE}\nSOAKD_Y=${SOAKD_TEST_SET}\n")
	var warned bytes.Buffer
	_, env, err := EnvFiles([]string{"--env-file", path}, map[string]string{"SOAKD_TEST_SET": "1"}, &warned)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := env["SOAKD_KV_RATE"]; !ok || v != "" || env["SOAKD_Y"] != "1" {
		t.Errorf("SOAKD_KV_RATE=%q (set %t), SOAKD_Y=%q; want empty, and 1", v, ok, env["SOAKD_Y"])
	}
	want := "soakd: --env-file " + path + `: The "SOAKD_TEST_NO_SUCH_RATE" variable is not set. Defaulting to a blank string.` + "\n"
	if warned.String() != want {
		t.Errorf("warnings %q, want %q", warned.String(), want)
	}
}

// A file's warnings are its own: at most maxWarnings lines and a count of
// the rest, and another logrus user's lines logged meanwhile go where
// logrus writes, not among them. Not parallel: it sets logrus' output.
func TestEnvFileWarningsAreTheFilesOwn(t *testing.T) {
	var mu sync.Mutex
	var other bytes.Buffer
	l := logrus.StandardLogger()
	old := l.Out
	l.SetOutput(lockedWriter{&mu, &other})
	defer l.SetOutput(old)

	var lines []string
	for i := range maxWarnings + 2 {
		lines = append(lines, fmt.Sprintf("SOAKD_V%d=${SOAKD_TEST_UNSET_%d}", i, i))
	}
	path := writeEnvFile(t, t.TempDir(), "many.env", strings.Join(lines, "\n")+"\n")
	started, stop, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			logrus.Warn("another logrus user")
			if i == 0 {
				close(started)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	<-started
	var warned bytes.Buffer
	for range 20 {
		warned.Reset()
		if _, _, err := EnvFiles([]string{"--env-file", path}, nil, &warned); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	got := strings.Split(strings.TrimSuffix(warned.String(), "\n"), "\n")
	if len(got) != maxWarnings+1 || !strings.Contains(got[0], `The "SOAKD_TEST_UNSET_0" variable is not set`) ||
		got[maxWarnings] != "soakd: --env-file "+path+": and 2 more variables not set" || strings.Contains(warned.String(), "another logrus user") {
		t.Errorf("warnings:\n%s", warned.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(other.String(), "another logrus user"); n == 0 || strings.Contains(other.String(), "SOAKD_TEST_UNSET") {
		t.Errorf("logrus' own output has %d lines of the other user, and: %s", n, other.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
