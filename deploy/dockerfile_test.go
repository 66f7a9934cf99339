package deploy

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	stage     int // index of the FROM it belongs to
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	stage, line := -1, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if line == "" && (s == "" || strings.HasPrefix(s, "#")) {
			continue
		}
		if strings.HasPrefix(s, "#") { // a comment inside a continued instruction
			continue
		}
		if cont, ok := strings.CutSuffix(s, `\`); ok {
			line += cont + " "
			continue
		}
		line += s
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
		line = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The image is multi-stage, ends on a small base as a non-root user,
// exposes soakd's port and leaves health checks to the orchestrator.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := readDockerfile(t)
	last := ins[len(ins)-1].stage
	var froms []string
	has := map[string][]string{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
		}
		if in.stage == last {
			has[in.cmd] = append(has[in.cmd], in.args)
		}
		if in.cmd == "HEALTHCHECK" {
			t.Errorf("HEALTHCHECK %s: probes belong to the orchestrator", in.args)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("one stage (%v): want a build stage and a small final image", froms)
	}
	final := strings.Fields(froms[len(froms)-1])[0]
	if final != "scratch" && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final image %s: want scratch or distroless/static (a static binary needs nothing else)", final)
	}
	if u := has["USER"]; len(u) != 1 || strings.HasPrefix(u[0], "0") || strings.HasPrefix(u[0], "root") {
		t.Errorf("final stage USER %v: want one non-root user", u)
	}
	if e := has["EXPOSE"]; len(e) != 1 || e[0] != "9480" {
		t.Errorf("EXPOSE %v, want 9480", e)
	}
	if c := has["COPY"]; len(c) != 1 || !strings.HasPrefix(c[0], "--from=build ") {
		t.Errorf("final stage COPY %v: want only the binary from the build stage", c)
	}
}

// goBuild returns the build stage's go build command: the variables it
// sets and go's arguments, with ARG defaults and vars expanded.
func goBuild(t *testing.T, vars map[string]string) (env, args []string) {
	t.Helper()
	found := 0
	for _, in := range readDockerfile(t) {
		if in.cmd == "ARG" {
			name, def, _ := strings.Cut(in.args, "=")
			if _, set := vars[name]; !set {
				vars[name] = def
			}
		}
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		found++
		words, err := shellWords(in.args, vars)
		if err != nil {
			t.Fatalf("RUN %s: %v", in.args, err)
		}
		for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
			words = words[1:]
		}
		for len(words) > 0 && strings.Contains(words[0], "=") {
			env, words = append(env, words[0]), words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			t.Fatalf("RUN %s: want [VAR=value...] go build ..., got %q", in.args, words)
		}
		args = words[1:]
	}
	if found != 1 {
		t.Fatalf("%d RUN instructions with go build, want 1", found)
	}
	return env, args
}

// shellWords splits s into words as sh would for a simple command:
// quotes, backslashes, and $VAR / ${VAR} from vars (an unknown one fails).
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	expand := func(i int) (int, error) {
		j, name := i+1, ""
		if j < len(s) && s[j] == '{' {
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				return 0, fmt.Errorf("unclosed ${")
			}
			name, j = s[j+1:j+end], j+end+1
			if n, def, ok := strings.Cut(name, ":-"); ok {
				// ${VAR:-$(go env X)}: VAR, or when it is empty or unset
				// the default, whose one command understood is go env.
				if v := vars[n]; v != "" {
					cur.WriteString(v)
					return j, nil
				}
				if x, ok := strings.CutPrefix(def, "$(go env "); ok && strings.HasSuffix(x, ")") {
					out, err := exec.Command("go", "env", strings.TrimSuffix(x, ")")).Output()
					if err != nil {
						return 0, fmt.Errorf("%s: %v", def, err)
					}
					cur.WriteString(strings.TrimSpace(string(out)))
					return j, nil
				}
				if strings.ContainsAny(def, "$`") {
					return 0, fmt.Errorf("${%s}: only $(go env X) is understood in a default", name)
				}
				cur.WriteString(def)
				return j, nil
			}
		} else {
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not set", name)
		}
		cur.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case quote == '\'' && c != '\'':
			cur.WriteByte(c)
			i++
		case c == quote:
			quote = 0
			i++
		case quote == 0 && (c == '\'' || c == '"'):
			quote, inWord = c, true
			i++
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			inWord = true
			i += 2
		case c == '$':
			j, err := expand(i)
			if err != nil {
				return nil, err
			}
			i, inWord = j, true
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case quote == 0 && strings.ContainsRune(";&|<>`", rune(c)):
			return nil, fmt.Errorf("%q: only a simple command is understood", c)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// The build stage's go build, run as it is written (output redirected to
// a temp dir), makes a static binary that reports the stamped version.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("a full -trimpath build of soakd, ~1 min cold")
	}
	t.Parallel()
	const version = "v0.0.0-dockerfile-test"
	env, args := goBuild(t, map[string]string{"VERSION": version, "TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH,
		"BUILDPLATFORM": runtime.GOOS + "/" + runtime.GOARCH})
	out := filepath.Join(t.TempDir(), "soakd")
	replaced := false
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1], replaced = out, true
		}
	}
	if !replaced {
		t.Fatalf("go %v: no -o", args)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v go %v: %v\n%s", env, args, err, b)
	}
	if !strings.Contains(strings.Join(env, " "), "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0", env)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a dynamic loader (PT_INTERP): not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v: not static", libs)
	}
	got, err := exec.Command(out, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(got), "soakd "+version+" ") {
		t.Errorf("soakd version: %q %v, want the stamped %s", got, err, version)
	}
}

// TARGETOS and TARGETARCH are BuildKit's (docker buildx build --platform
// linux/arm64 builds for arm64): declared without a default that would
// pin one platform, and when empty (no BuildKit) the builder's own.
func TestDockerfileTargetPlatform(t *testing.T) {
	t.Parallel()
	for _, in := range readDockerfile(t) {
		if in.cmd == "ARG" && (strings.HasPrefix(in.args, "TARGETOS=") || strings.HasPrefix(in.args, "TARGETARCH=")) {
			t.Errorf("ARG %s: a default pins the platform BuildKit would set", in.args)
		}
	}
	goEnv := func(vars map[string]string) string {
		vars["VERSION"], vars["BUILDPLATFORM"] = "v0", "linux/amd64"
		env, _ := goBuild(t, vars)
		var got []string
		for _, e := range env {
			if strings.HasPrefix(e, "GOOS=") || strings.HasPrefix(e, "GOARCH=") {
				got = append(got, e)
			}
		}
		return strings.Join(got, " ")
	}
	if got := goEnv(map[string]string{"TARGETOS": "linux", "TARGETARCH": "arm64"}); got != "GOOS=linux GOARCH=arm64" {
		t.Errorf("BuildKit's linux/arm64 builds with %q", got)
	}
	if got := goEnv(map[string]string{"TARGETOS": "freebsd", "TARGETARCH": "riscv64"}); got != "GOOS=freebsd GOARCH=riscv64" {
		t.Errorf("BuildKit's freebsd/riscv64 builds with %q", got)
	}
	if got, want := goEnv(map[string]string{}), "GOOS="+runtime.GOOS+" GOARCH="+runtime.GOARCH; got != want {
		t.Errorf("without BuildKit's values: %q, want the builder's own %q", got, want)
	}
}
