package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/soakd/soakd/settings"
)

type opts struct {
	Out   string `env:"OUT" help:"soakd demo: where to write"`
	Quiet bool   `env:"QUIET" help:"soakd demo: say nothing"`
}

func demo() *Command {
	own := settings.Of(&opts{}, "SOAKD_DEMO_")
	return &Command{Name: "demo", Prog: "soakd", Usage: "Usage: soakd demo\n", Own: own, OwnPrefix: "SOAKD_DEMO_",
		Prefix: settings.EnvPrefix, IsBool: func(f string) bool { return f == "demo-quiet" }, See: "soakd config",
		Known: func(map[string]string) []settings.Setting { return own }}
}

// --help prints the usage and the command's own settings, the command's
// name left out of their help; a last flag with no value is unknown when
// it names no setting, short of a value when it does.
func TestParse(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if _, code, ok := demo().Parse([]string{"--help"}, nil, &out, &errb); ok || code != ExitOK {
		t.Fatalf("--help: exit %d, ok %v", code, ok)
	}
	for _, want := range []string{"Usage: soakd demo\n", "Own settings (SOAKD_DEMO_*):", "SOAKD_DEMO_OUT", "--demo-quiet", "  say nothing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "soakd demo:") {
		t.Errorf("--help repeats the command's name:\n%s", out.String())
	}
	for args, want := range map[string]string{
		"--bogus":    "soakd: unknown flag --bogus (see soakd config)\n",
		"--demo-out": "soakd: flag --demo-out needs a value\n",
	} {
		out.Reset()
		errb.Reset()
		if _, code, ok := demo().Parse([]string{args}, nil, &out, &errb); ok || code != ExitConfig || errb.String() != want {
			t.Errorf("%s: exit %d, ok %v, stderr %q; want 2 and %q", args, code, ok, errb.String(), want)
		}
	}
	cl, _, ok := demo().Parse([]string{"--demo-quiet", "--demo-out", "x"}, map[string]string{"HOME": "/"}, &out, &errb)
	if !ok || cl.Env["SOAKD_DEMO_QUIET"] != "true" || cl.Env["SOAKD_DEMO_OUT"] != "x" || cl.Env["HOME"] != "/" {
		t.Errorf("flags read as %v (ok %v)", cl.Env, ok)
	}
}

// Check reports unknown flags first, then the configuration's problems,
// then the unknown variables, each once: a variable set by an unknown
// flag is reported as the flag. SOAKD_ALLOW_UNKNOWN lets the variables
// pass, but they are still returned to be warned of.
func TestCheck(t *testing.T) {
	t.Parallel()
	c := demo()
	sc := Scope{Settings: c.Own, Vars: []string{"SOAKD_DEMO_OTU", "SOAKD_DEMO_BOGUS"}}
	cl := settings.CommandLine{Env: map[string]string{}, Keys: []string{"SOAKD_DEMO_BOGUS", "SOAKD_DEMO_OUT"}}
	unk, err := c.Check(cl, sc, settings.Errorf("SOAKD_DEMO_OUT", "bad"))
	var got []string
	for _, p := range settings.Problems(err) {
		got = append(got, p.Error())
	}
	want := []string{
		"unknown flag --demo-bogus (see soakd config)",
		"SOAKD_DEMO_OUT: bad",
		"SOAKD_DEMO_OTU: unknown variable (did you mean SOAKD_DEMO_OUT?); SOAKD_ALLOW_UNKNOWN=1 makes this a warning",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(unk, ",") != "SOAKD_DEMO_OTU" {
		t.Errorf("unknown variables %v", unk)
	}
	cl.Env[settings.AllowUnknownVar] = "1"
	cl.Keys = nil
	unk, err = c.Check(cl, sc, nil)
	if err != nil || len(unk) != 2 {
		t.Errorf("allowed: %v, %v", unk, err)
	}
	// With the settings unknowable, flags are not checked.
	sc.Unknowable = true
	cl.Keys = []string{"SOAKD_DEMO_BOGUS"}
	if _, err := c.Check(cl, sc, nil); err != nil {
		t.Errorf("unknowable: %v", err)
	}
	var errb bytes.Buffer
	if code := c.Refuse(&errb, errors.Join(errors.New("a"), errors.Join(errors.New("b")))); code != ExitConfig ||
		errb.String() != "soakd: invalid configuration:\n  a\n  b\n" {
		t.Errorf("Refuse: exit %d\n%s", code, errb.String())
	}
}
