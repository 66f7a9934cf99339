package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/sweep"
)

func envFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "soakd.env")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every command reads its settings from --env-file: each file below sets
// what the command would otherwise lack or have by default, and the
// command shows it used them.
func TestEveryCommandTakesEnvFile(t *testing.T) {
	dir := t.TempDir()
	t.Run("run", func(t *testing.T) {
		f := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_TARGET=null://\nSOAKD_SEQ_ROWS=1234\nSOAKD_SEQ_RATE=max\nSOAKD_LISTEN=off\n")
		sum := filepath.Join(dir, "run.json")
		code, _, errs := run(t, nil, "--env-file", f, "--summary-json", sum)
		if code != cli.ExitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if b, _ := os.ReadFile(sum); !strings.Contains(string(b), `"units": 1234`) && !strings.Contains(string(b), `"units":1234`) {
			t.Errorf("the run did not write the file's 1234 rows:\n%s", b)
		}
	})
	t.Run("capacity", func(t *testing.T) {
		f := envFile(t, "SOAKD_CAPACITY_SLO_ERRORS=200%\n")
		if code, _, errs := run(t, nil, "capacity", "--env-file", f); code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_CAPACITY_SLO_ERRORS") {
			t.Errorf("exit %d, want 2 naming the file's SOAKD_CAPACITY_SLO_ERRORS\n%s", code, errs)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		out := filepath.Join(dir, "sweep")
		f := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_TARGET=null://\nSOAKD_SWEEP_WORKERS=1,2\nSOAKD_SWEEP_BATCH=10\n"+
			"SOAKD_SWEEP_REPEATS=1\nSOAKD_SWEEP_DURATION=1s\nSOAKD_SWEEP_OUT="+out+"\n")
		if code, _, errs := run(t, nil, "sweep", "--env-file", f); code != cli.ExitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if res := readJSON[sweep.Result](t, out+".json"); len(res.Points) != 2 || res.Points[1].Workers != 2 || res.Points[1].Batch != 10 {
			t.Errorf("the sweep ran %+v, not the file's 1,2 workers x 10", res.Points)
		}
	})
	t.Run("verify", func(t *testing.T) {
		f := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_TARGET=null://\nSOAKD_SEQ_ROWS=10\n")
		code, out, errs := run(t, nil, "verify", "--env-file", f)
		if code != cli.ExitConfig || !strings.Contains(out+errs, "SOAKD_SEQ_TARGET: null:// is a built-in target") {
			t.Errorf("exit %d, want 2 naming the file's target\n%s%s", code, out, errs)
		}
	})
	t.Run("generate", func(t *testing.T) {
		out := filepath.Join(dir, "seq.csv")
		f := envFile(t, "SOAKD_GEN_SOURCE=seq\nSOAKD_GEN_ROWS=7\nSOAKD_GEN_FORMAT=csv\nSOAKD_GEN_OUT="+out+"\nSOAKD_GEN_QUIET=true\n")
		if code, _, errs := run(t, nil, "generate", "--env-file", f); code != cli.ExitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "\n") != 8 { // a header and 7 rows
			t.Errorf("generate wrote %q (%v), not the file's 7 rows", b, err)
		}
	})
	t.Run("config", func(t *testing.T) {
		f := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_RATE=4321\n")
		if code, out, errs := run(t, nil, "config", "--env-file", f); code != cli.ExitOK || !strings.Contains(out, "4321") {
			t.Errorf("exit %d, the file's rate not shown\n%s%s", code, out, errs)
		}
		if code, out, errs := run(t, nil, "config", "--check", "--env-file", f); code != cli.ExitOK || !strings.Contains(out, "configuration ok") {
			t.Errorf("--check: exit %d\n%s%s", code, out, errs)
		}
		bad := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_RATE=fast\nSOAKD_SEQ_RAET=1\n")
		if code, _, errs := run(t, nil, "config", "--env-file", bad, "--check"); code != cli.ExitConfig ||
			!strings.Contains(errs, "SOAKD_SEQ_RATE: ") || !strings.Contains(errs, "SOAKD_SEQ_RAET: unknown variable") {
			t.Errorf("--check of a bad file: exit %d, want 2 naming its variables\n%s", code, errs)
		}
	})
}

// The environment wins over the files, a later file over an earlier one,
// flags over all of them.
func TestEnvFilePrecedence(t *testing.T) {
	early := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_RATE=111\nSOAKD_SEQ_WORKERS=11\nSOAKD_SEQ_BATCH_SIZE=1\nSOAKD_SEQ_DEVICES=5\n")
	late := envFile(t, "SOAKD_SEQ_RATE=222\nSOAKD_SEQ_WORKERS=22\nSOAKD_SEQ_BATCH_SIZE=2\n")
	code, out, errs := run(t, map[string]string{"SOAKD_SEQ_WORKERS": "33", "SOAKD_SEQ_BATCH_SIZE": "3"},
		"config", "--env-file", early, "--env-file", late, "--seq-batch-size", "4")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for key, want := range map[string]string{"SOAKD_SEQ_DEVICES": "5", "SOAKD_SEQ_RATE": "222", "SOAKD_SEQ_WORKERS": "33", "SOAKD_SEQ_BATCH_SIZE": "4"} {
		if v := configValue(out, key); v != want {
			t.Errorf("%s is %q, want %q", key, v, want)
		}
	}
}

// configValue is the value soakd config lists for key.
func configValue(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[0] == key {
			return f[3]
		}
	}
	return ""
}

// A password read from a file is a secret like any other: soakd config
// shows it set, never its value, nor the one in a target URL; an error
// in the file does not quote it.
func TestEnvFileSecrets(t *testing.T) {
	f := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_PASSWORD=hunter2pw\nSOAKD_SEQ_TARGET=postgres://u:hunter3pw@db:5432/x\n")
	code, out, errs := run(t, nil, "config", "--env-file", f)
	if code != cli.ExitOK || !strings.Contains(out, "(set)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, "hunter2pw") || strings.Contains(out+errs, "hunter3pw") {
		t.Errorf("soakd config prints a password of the file:\n%s", out)
	}
	bad := envFile(t, "SOAKD_WORKLOADS=seq\nSOAKD_SEQ_PASSWORD=\"hunter2pw\n")
	code, out, errs = run(t, nil, "config", "--env-file", bad)
	if code != cli.ExitConfig || !strings.Contains(errs, bad+", line 2: unterminated quoted value") || strings.Contains(out+errs, "hunter2pw") {
		t.Errorf("exit %d, want 2 naming %s line 2, without the password:\n%s%s", code, bad, out, errs)
	}
}

// soakd --help, soakd help and each command's --help tell of --env-file.
func TestHelpListsEnvFile(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"sweep", "--help"}, {"capacity", "--help"}, {"config", "--help"},
		{"verify", "--help"}, {"generate", "--help"}} {
		if code, out, _ := run(t, nil, args...); code != cli.ExitOK || !strings.Contains(out, "--env-file FILE") {
			t.Errorf("%v: exit %d, does not tell of --env-file:\n%s", args, code, out)
		}
	}
}
