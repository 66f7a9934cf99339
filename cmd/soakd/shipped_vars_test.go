package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/cmd/soakd/generate"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
)

// shippedVarsAllowed are the unknown variables the repository shows on
// purpose, by file.
var shippedVarsAllowed = map[string][]string{
	// README's demonstration of the refusal and its did-you-mean hints.
	"README.md": {"SOAKD_RAET", "SOAKD_IOT_RAET", "SOAKD_TRUCKS_SCALE"},
}

// Every SOAKD_* variable the repository ships (deploy's compose file and
// Kubernetes manifests, the Dockerfile, scripts, benchmarks, READMEs and
// docs, dashboards) passes the check soakd applies at start: a name soakd
// does not know is exit 2 for whoever copies it. Each file is checked
// with the workloads its SOAKD_WORKLOADS name (all of them, when it
// shows several runs), or the default ones when it names none (see
// checkShipped). Deliberate mistakes are listed in shippedVarsAllowed.
func TestShippedVariablesAreKnown(t *testing.T) {
	files := readShipped(t, "../..")
	for _, name := range []string{"README.md", "Dockerfile", "deploy/compose/compose.yaml",
		"deploy/kubernetes/sidecar/deployment.yaml", "deploy/kubernetes/sharded-job/job.yaml",
		"scripts/capacity-example.sh", "bench/kv-lib.sh"} {
		if _, ok := files[name]; !ok {
			t.Fatalf("%s is not among the files checked", name)
		}
	}
	set := 0
	for name, data := range files {
		env, err := scanShipped(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		set += len(env.vars)
		allowed := shippedVarsAllowed[name]
		flagged := map[string]bool{}
		for _, p := range checkShipped(env, files) {
			if p.key != "" && slices.Contains(allowed, p.key) {
				flagged[p.key] = true
				continue
			}
			t.Errorf("%s: %s", name, p.msg)
		}
		for _, k := range allowed {
			if !flagged[k] {
				t.Errorf("%s: %s is allowed as a deliberate mistake but is not refused (or no longer there): drop it from shippedVarsAllowed", name, k)
			}
		}
	}
	if set < 100 {
		t.Errorf("only %d variables found in %d files: is the scan broken?", set, len(files))
	}
}

// The scan finds variables in each kind of file and the check refuses
// what soakd refuses, with the workloads the file names.
func TestShippedVariablesCheckCatchesTypos(t *testing.T) {
	files := map[string][]byte{
		"compose.yaml": []byte(`services:
  soakd:
    environment:
      SOAKD_WORKLOADS: iot,trucks
      SOAKD_TRUCKS_SOURCE: iot
      SOAKD_TRUCKS_RATE: "5"
      SOAKD_IOT_RAET: "5000"
  other:
    environment: ["SOAKD_LSITEN=:1", "SOAKD_LISTEN=:2"]
`),
		"job.yaml": []byte(`spec:
  containers:
    - env:
        - name: SOAKD_WORKLOADS
          value: kv
        - name: SOAKD_KV_RECORDS
          value: "10"
        - name: SOAKD_IOT_RATE
          value: "10"
        - name: SOAKD_KV_PASSWORD_FILE
          valueFrom: {secretKeyRef: {name: x, key: y}}
`),
		"doc.md": []byte("Run `SOAKD_WORKLOADS=w SOAKD_W_SOURCE=devops SOAKD_W_SCALE=5 soakd`, or:\n\n" +
			"```yaml\nenv:\n  SOAKD_W_SCAEL: 5\n```\n\n" +
			"```sh\ndocker run -e SOAKD_CAPACITY_SLO_P99X soakd\nSOAKD_GEN_SOURCE=seq SOAKD_GEN_ROWS=5 SOAKD_GEN_SCAEL=1 soakd generate\n" +
			"SOAKD_ALLOW_UNKNOWN=1 SOAKD_DURATION=1m soakd\n```\n"),
		"lib.sh": []byte("env SOAKD_WORKLOADS=kv \"$@\" soakd\n"),
		"run.sh": []byte("# shellcheck source=lib.sh\n. lib.sh\nrun SOAKD_KV_RATE=5 SOAKD_KV_RAET=5\n" +
			"wl=q\n[ \"$1\" ] && wl=q,ingest\nenv SOAKD_WORKLOADS=$wl SOAKD_Q_SOURCE=devops-queries SOAKD_INGEST_SOURCE=devops SOAKD_INGEST_SCALE=2 SOAKD_INGEST_SCAEL=2 soakd\n" +
			"SOAKD_WORKLOADS=$nowhere soakd\n"),
		"Dockerfile": []byte("FROM scratch\nENV SOAKD_LISTEN :9480\nENV SOAKD_LOG_FORMAT=json SOAKD_LOG_FROMAT=json\n"),
		// compose's env_file names the workloads, as a sourced script does.
		"stack/compose.yaml": []byte("services:\n  soakd:\n    env_file: [../recipe.env]\n    environment:\n      SOAKD_R_SCALE: \"5\"\n      SOAKD_R_SCAEL: \"5\"\n"),
		"recipe.env":         []byte("SOAKD_WORKLOADS=r\nSOAKD_R_SOURCE=devops\n"),
	}
	want := map[string][]string{
		"compose.yaml": {"SOAKD_IOT_RAET: unknown variable (did you mean SOAKD_IOT_RATE?)", "SOAKD_LSITEN: unknown variable (did you mean SOAKD_LISTEN?)"},
		"job.yaml":     {"SOAKD_IOT_RATE: unknown variable (workload iot is not in SOAKD_WORKLOADS=kv)"},
		"doc.md": {"SOAKD_W_SCAEL: unknown variable (did you mean SOAKD_W_SCALE?)", "SOAKD_CAPACITY_SLO_P99X: unknown variable",
			"SOAKD_GEN_SCAEL: unknown variable"},
		"lib.sh":             nil,
		"run.sh":             {"SOAKD_KV_RAET: unknown variable", "SOAKD_INGEST_SCAEL: unknown variable", "SOAKD_WORKLOADS=$nowhere"},
		"Dockerfile":         {"SOAKD_LOG_FROMAT: unknown variable"},
		"stack/compose.yaml": {"SOAKD_R_SCAEL: unknown variable (did you mean SOAKD_R_SCALE?)"},
		"recipe.env":         nil,
	}
	for name, data := range files {
		env, err := scanShipped(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, p := range checkShipped(env, files) {
			got = append(got, p.msg)
		}
		all := strings.Join(got, "\n")
		for _, w := range want[name] {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no problem %q; got:\n%s", name, w, all)
			}
		}
		if len(got) != len(want[name]) {
			t.Errorf("%s: %d problems, want %d:\n%s", name, len(got), len(want[name]), all)
		}
	}
}

// readShipped reads the repository's text files but its Go code, test
// data and benchmark outputs, by slash path from root.
func readShipped(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "bench/out" || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(rel, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) < 0 && utf8.Valid(data) { // text
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// shippedEnv is what one file sets.
type shippedEnv struct {
	name    string
	text    string
	vars    map[string][]string // SOAKD_* variable: the values it is given ("" when none is written)
	line    map[string]int      // where each is first set
	sources []string            // files a shell script sources (shellcheck source=)
}

var (
	// SOAKD_X=value, in a shell command, an env list, a Dockerfile's ENV,
	// a JSON string or markdown text.
	assignRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(SOAKD_[A-Z0-9_]*[A-Z0-9])=('[^']*'|"[^"]*"|[^\s'"` + "`" + `);|]*)`)
	// docker run -e SOAKD_X (the value from the caller's environment).
	dockerEnvRE = regexp.MustCompile(`(?:^|\s)(?:-e|--env)(?:\s+|=)(SOAKD_[A-Z0-9_]*[A-Z0-9])\b`)
	// A Dockerfile's ENV SOAKD_X value.
	dockerfileEnvRE = regexp.MustCompile(`(?m)^\s*ENV\s+(SOAKD_[A-Z0-9_]*[A-Z0-9])\s+(\S.*)$`)
	shellSourceRE   = regexp.MustCompile(`#\s*shellcheck\s+source=(\S+)`)
	yamlBlockRE     = regexp.MustCompile("(?ms)^```[ \t]*ya?ml[ \t]*\n(.*?)^```")
	shellRefRE      = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$`)
)

// scanShipped lists the SOAKD_* variables file name sets: as NAME=value
// anywhere, as -e NAME, as a Dockerfile's ENV and, in YAML (a file, or
// a markdown yaml block), as a mapping key or an env list's name.
func scanShipped(name string, data []byte) (*shippedEnv, error) {
	text := string(data)
	env := &shippedEnv{name: name, text: text, vars: map[string][]string{}, line: map[string]int{}}
	lineAt := func(off int) int { return 1 + strings.Count(text[:off], "\n") }
	for _, m := range assignRE.FindAllStringSubmatchIndex(text, -1) {
		env.add(text[m[2]:m[3]], unquote(text[m[4]:m[5]]), lineAt(m[2]))
	}
	for _, m := range dockerEnvRE.FindAllStringSubmatchIndex(text, -1) {
		env.add(text[m[2]:m[3]], "", lineAt(m[2]))
	}
	if base := path.Base(name); base == "Dockerfile" || strings.HasPrefix(base, "Dockerfile.") {
		for _, m := range dockerfileEnvRE.FindAllStringSubmatchIndex(text, -1) {
			env.add(text[m[2]:m[3]], unquote(strings.TrimSpace(text[m[4]:m[5]])), lineAt(m[2]))
		}
	}
	for _, m := range shellSourceRE.FindAllStringSubmatch(text, -1) {
		env.sources = append(env.sources, m[1])
	}
	switch path.Ext(name) {
	case ".yaml", ".yml":
		if err := env.scanYAML(data, 0); err != nil {
			return nil, err
		}
	case ".md":
		for _, m := range yamlBlockRE.FindAllStringSubmatchIndex(text, -1) {
			if err := env.scanYAML(data[m[2]:m[3]], lineAt(m[2])-1); err != nil {
				return nil, fmt.Errorf("yaml block at line %d: %w", lineAt(m[2]), err)
			}
		}
	}
	return env, nil
}

func (e *shippedEnv) add(k, v string, line int) {
	if !slices.Contains(e.vars[k], v) {
		e.vars[k] = append(e.vars[k], v)
	}
	if _, ok := e.line[k]; !ok {
		e.line[k] = line
	}
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// scanYAML adds the SOAKD_* mapping keys of data's documents (compose's
// environment, a CI job's env, a ConfigMap) and the names of env lists
// (Kubernetes: name and value).
func (e *shippedEnv) scanYAML(data []byte, lineOffset int) error {
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if strings.HasPrefix(k.Value, config.EnvPrefix) && v.Kind == yaml.ScalarNode {
					e.add(k.Value, v.Value, lineOffset+k.Line)
				}
				if k.Value == "env_file" {
					// compose's env_file: sets the service's variables as a
					// sourced file sets a script's.
					e.addEnvFiles(v)
				}
				if k.Value == "name" && v.Kind == yaml.ScalarNode && strings.HasPrefix(v.Value, config.EnvPrefix) {
					value := ""
					for j := 0; j+1 < len(n.Content); j += 2 {
						if n.Content[j].Value == "value" {
							value = n.Content[j+1].Value
						}
					}
					e.add(v.Value, value, lineOffset+v.Line)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		walk(&doc)
	}
}

// addEnvFiles adds the files of a compose env_file (a path, a list of
// paths, or of mappings with a path) to e's sources, by their path from
// the repository's root.
func (e *shippedEnv) addEnvFiles(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		e.sources = append(e.sources, path.Join(path.Dir(e.name), n.Value))
	case yaml.SequenceNode:
		for _, c := range n.Content {
			e.addEnvFiles(c)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "path" {
				e.addEnvFiles(n.Content[i+1])
			}
		}
	}
}

// resolve returns what value stands for: itself, or for $name the
// literal values the file assigns name (wl=q, wl=q,ingest); nil when it
// cannot tell.
func (e *shippedEnv) resolve(value string) []string {
	if !strings.Contains(value, "$") {
		return []string{value}
	}
	m := shellRefRE.FindStringSubmatch(value)
	if m == nil {
		return nil
	}
	name := m[1] + m[2]
	var out []string
	re := regexp.MustCompile(`(?:^|[\s;(])` + name + `=('[^'$]*'|"[^"$]*"|[^\s'"$;)|&]+)`)
	for _, a := range re.FindAllStringSubmatch(e.text, -1) {
		if v := unquote(a[1]); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// shippedProblem is a variable soakd refuses (key set), or why a file's
// variables cannot be checked.
type shippedProblem struct {
	key, msg string
}

// checkShipped applies soakd's check of unknown variables (soakd run's,
// capacity's, sweep's, verify's, and generate's of SOAKD_GEN_*) to the
// variables env sets. The workloads are the union of those its
// SOAKD_WORKLOADS name, in it or in a file it sources (files), or the
// default ones when it names none (and, in a markdown document, whose
// snippets stand alone, always); a workload's settings are its source's,
// so a variable is refused only when it is no setting with any of the
// sources the file gives its workload (and, in a markdown document, its
// default source).
func checkShipped(env *shippedEnv, files map[string][]byte) []shippedProblem {
	p := plugins.All()
	var problems []shippedProblem
	where := func(k string) string { return fmt.Sprintf("line %d: ", env.line[k]) }
	// values resolves k's values in env; a value it cannot tell is a problem.
	values := func(k string) []string {
		var out []string
		for _, v := range env.vars[k] {
			r := env.resolve(v)
			if r == nil {
				problems = append(problems, shippedProblem{msg: fmt.Sprintf("%s%s=%s: cannot tell its value, so neither which variables are known", where(k), k, v)})
			}
			for _, v := range r {
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
		return out
	}

	var workloads []string
	addWorkloads := func(vals []string) {
		for _, v := range vals {
			for _, w := range strings.Split(v, ",") {
				if w = strings.TrimSpace(w); w != "" && !slices.Contains(workloads, w) {
					workloads = append(workloads, w)
				}
			}
		}
	}
	addWorkloads(values(config.EnvPrefix + "WORKLOADS"))
	for _, src := range env.sources {
		for _, cand := range []string{src, path.Join(path.Dir(env.name), path.Base(src))} {
			if data, ok := files[cand]; ok {
				if lib, err := scanShipped(cand, data); err == nil {
					libWorkloads := libValues(lib, config.EnvPrefix+"WORKLOADS")
					addWorkloads(libWorkloads)
					// A library that runs a workload of its own gives it
					// its source too (pg-lib.sh's SOAKD_W_SOURCE).
					for _, v := range libWorkloads {
						for _, w := range strings.Split(v, ",") {
							k := config.Prefix(strings.TrimSpace(w)) + "SOURCE"
							for _, src := range libValues(lib, k) {
								env.add(k, src, 0)
							}
						}
					}
				}
				break
			}
		}
	}
	// The default workloads when the file names none; a markdown
	// document's snippets that set no SOAKD_WORKLOADS run them too.
	if len(workloads) == 0 || path.Ext(env.name) == ".md" {
		def, _ := config.Load(map[string]string{}, p.Sources)
		addWorkloads(def.Workloads)
	}
	gen := slices.Contains(workloads, generate.Workload)

	// Each workload's sources, and generate's. A document's snippets may
	// leave SOURCE to its default ("": unset; generate's, or the source
	// named as the workload) where others set it.
	srcs := map[string][]string{}
	rounds := 1
	for _, w := range append(slices.Clone(workloads), generate.Workload) {
		k := config.Prefix(w) + "SOURCE"
		if _, set := env.vars[k]; set {
			srcs[k] = values(k)
			hasDefault := w == generate.Workload || p.Sources.Lookup(w) != nil
			if path.Ext(env.name) == ".md" && hasDefault && !slices.Contains(srcs[k], "") {
				srcs[k] = append(srcs[k], "")
			}
			rounds = max(rounds, len(srcs[k]))
		}
	}

	refused := map[string]int{}
	msgs := map[string]string{}
	noSource := map[string]bool{}
	refuse := func(errs []error) {
		for _, err := range errs {
			var ce *settings.Error
			if errors.As(err, &ce) {
				refused[ce.Key]++
				msgs[ce.Key] = err.Error()
			}
		}
	}
	for r := range rounds {
		vars := map[string]string{}
		for k, vs := range env.vars {
			vars[k] = vs[0]
		}
		// The escape hatch, where a file shows it, must not turn the check off.
		delete(vars, settings.AllowUnknownVar)
		vars[config.EnvPrefix+"WORKLOADS"] = strings.Join(workloads, ",")
		for k, vs := range srcs {
			if len(vs) == 0 {
				continue
			}
			if v := vs[min(r, len(vs)-1)]; v != "" {
				vars[k] = v
			} else {
				delete(vars, k)
			}
		}
		cfg, _ := config.Load(vars, p.Sources)
		for _, w := range cfg.Workload {
			if p.Sources.Lookup(w.Source) == nil && !noSource[w.Name] {
				noSource[w.Name] = true
				problems = append(problems, shippedProblem{msg: fmt.Sprintf("workload %s: source %q is none soakd knows, so neither are its settings", w.Name, w.Source)})
			}
		}
		cl := settings.CommandLine{Env: vars}
		_, err := command("run").Check(cl, runScope(cl, cfg, p), nil)
		refuse(settings.Problems(err))
		if !gen {
			unk, known := generate.UnknownVars(vars, p.Sources)
			refuse(settings.UnknownVarErrors(unk, known, nil))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(refused)) {
		if refused[k] == rounds {
			problems = append(problems, shippedProblem{key: k, msg: where(k) + msgs[k]})
		}
	}
	return problems
}

// libValues is the values lib gives k, those it cannot tell left out (lib
// is checked on its own).
func libValues(lib *shippedEnv, k string) []string {
	var out []string
	for _, v := range lib.vars[k] {
		out = append(out, lib.resolve(v)...)
	}
	return out
}
