package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// soakd's own packages import each other only downwards: no feature or
// command reaches into the engine past its API, the engine imports no
// feature, no sink imports the engine, no source a sink.
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", Module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := rel(f[0])
		imports[pkg] = nil
		for _, imp := range f[1:] {
			if r := rel(imp); r != imp {
				imports[pkg] = append(imports[pkg], r)
			}
		}
	}
	if len(imports) < 20 || imports["daemon"] == nil {
		t.Fatalf("go list found %d packages: not the module", len(imports))
	}
	for _, b := range Check(imports) {
		t.Error(b)
	}
}

func rel(path string) string {
	if r, ok := strings.CutPrefix(path, Module+"/"); ok {
		return r
	}
	return path
}

// Each way of breaking the layering is caught.
func TestCheckCatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		says    string
	}{
		{"engine imports a feature", map[string][]string{"daemon": {"capacity"}}, "imports point down"},
		{"sink imports the engine", map[string][]string{"sinks/redis": {"daemon"}}, "imports point down"},
		{"source imports a sink", map[string][]string{"sources/kv": {"sinks"}}, "imports point down"},
		{"feature imports engine internals", map[string][]string{"capacity": {"daemon/internal/sched"}}, "outside its API"},
		{"unclaimed package", map[string][]string{"newthing": {"daemon"}}, "no layer claims it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := Check(tc.imports)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.says) {
				t.Errorf("Check = %q, want one complaint saying %q", bad, tc.says)
			}
		})
	}
	ok := map[string][]string{"cmd/soakd": {"capacity", "daemon", "sinks/redis"}, "capacity": {"daemon", "pace", "charts"},
		"daemon": {"sinks", "sources", "pace"}, "sinks/redis": {"sinks", "sources"}, "web": {"capacity"}}
	if bad := Check(ok); len(bad) != 0 {
		t.Errorf("a layered graph is refused: %q", bad)
	}
}
