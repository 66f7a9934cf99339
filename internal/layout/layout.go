// Package layout states which way soakd's packages may import each other,
// and its test holds the code to it: commands → features → engine →
// opener → report → settings → sinks → sources, with small leaf packages
// (charts, internal helpers) usable from anywhere. README's Layout section
// draws the same picture.
package layout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Module is soakd's module path.
const Module = "github.com/soakd/soakd"

// Layers, lowest first. A package may import packages of its own layer
// and of the layers below, never above.
var Layers = []Layer{
	{Name: "leaf", Packages: []string{"charts", "dashboards", "deploy", "internal/logthrottle", "internal/procstat", "internal/sysinfo",
		"internal/backoff", "internal/clock", "internal/writectx", "internal/crosscheck", "internal/detserver", "internal/lateproxy", "internal/testserver", "internal/layout"}},
	{Name: "sources", Packages: []string{"sources"}},
	{Name: "sinks", Packages: []string{"sinks"}},
	// config is soakd's configuration (what the engine runs, what features
	// and commands read); pace is the rate grammar its settings are
	// written in.
	{Name: "settings", Packages: []string{"settings", "thresholds", "config", "pace"}},
	// report is what a run reports (the summary's and /status's schemas,
	// the verdicts, the latency figures): the engine fills it, features
	// read it.
	{Name: "report", Packages: []string{"report"}},
	// opener is how a workload meets its target (its source built, its
	// sink opened, the wait for it to come up): the engine opens each
	// workload through it, and the commands that open targets outside a
	// run (verify, sweep's reset) share it.
	{Name: "opener", Packages: []string{"opener"}},
	{Name: "engine", Packages: []string{"daemon"}},
	{Name: "features", Packages: []string{"capacity", "churn", "history", "live", "procs", "progress", "readback", "readmodel", "record", "serve", "summary", "sweep", "targetwatch", "thresholds/judge", "web"}},
	{Name: "commands", Packages: []string{"cmd", "bench", "internal/faults", "internal/enginetest"}},
}

// EngineAPI are the engine packages a feature may import: the engine's
// exported surface (Run, Observer, Handle, Phase). Anything else under
// daemon/ is the engine's own.
var EngineAPI = []string{"daemon"}

// Layer is a named set of package trees: "sinks" is sinks and every
// package under it.
type Layer struct {
	Name     string
	Packages []string
}

// LayerOf returns the index in Layers of the package at path (relative to
// Module), or -1 when no layer claims it. The longest matching tree wins.
func LayerOf(path string) int {
	best, bestLen := -1, -1
	for i, l := range Layers {
		for _, p := range l.Packages {
			if (path == p || strings.HasPrefix(path, p+"/")) && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// Check returns every import of imports (package → the module's packages
// it imports, both relative to Module) that breaks the layering: a
// package no layer claims, an import of a higher layer, or a feature or
// command importing an engine package outside EngineAPI.
func Check(imports map[string][]string) []string {
	var bad []string
	engine := slices.IndexFunc(Layers, func(l Layer) bool { return l.Name == "engine" })
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		from := LayerOf(pkg)
		if from < 0 {
			bad = append(bad, fmt.Sprintf("%s: no layer claims it (add it to layout.Layers)", pkg))
			continue
		}
		for _, imp := range imports[pkg] {
			to := LayerOf(imp)
			switch {
			case to < 0:
				bad = append(bad, fmt.Sprintf("%s imports %s, which no layer claims", pkg, imp))
			case to > from:
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): imports point down, %s",
					pkg, Layers[from].Name, imp, Layers[to].Name, direction()))
			case to == engine && from > engine && !slices.Contains(EngineAPI, imp):
				bad = append(bad, fmt.Sprintf("%s imports %s, an engine package outside its API (%s)",
					pkg, imp, strings.Join(EngineAPI, ", ")))
			}
		}
	}
	return bad
}

func direction() string {
	names := make([]string, len(Layers))
	for i, l := range Layers {
		names[len(Layers)-1-i] = l.Name
	}
	return strings.Join(names, " → ")
}
