package daemon

import (
	"slices"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// SourceEntry registers a data source under one or more names.
type SourceEntry struct {
	Names []string
	Kind  sources.Kind
	// Settings returns a pointer to a fresh struct of the source's own
	// settings (env tags without prefix), or nil when it has none.
	Settings func() any
	// Validate checks w (and w.Ext) without I/O; errors should be
	// *sources.SettingError so they name the variable.
	Validate func(w *Workload) error
	// New builds the source for w. It must be cheap and do no I/O.
	New func(w *Workload) (sources.Source, error)
	// BuiltinDefaults are source settings (names without the SOAKD_<W>_
	// prefix) that a workload writing to the built-in target gets unless it
	// sets them, e.g. a record count the in-process target holds in little
	// memory.
	BuiltinDefaults map[string]string
	// File, when set, says how soakd generate writes the source's data set
	// to a file; nil for a source that has no finite set of rows (kv).
	File *FileEntry
}

// FileEntry is what soakd generate needs to know about a source beyond
// its run settings. Generate reads those settings as a workload named gen
// (SOAKD_GEN_SCALE, --scale) and builds the source with New.
type FileEntry struct {
	// Defaults replace the run defaults of some settings (names without
	// the prefix, e.g. START) in a data file: a fixed start, say, so the
	// same flags give the same file on any day.
	Defaults map[string]string
	// Finite checks, without I/O, that w's settings make a finite data
	// set, whose source New returns as a sources.Sized; otherwise it
	// returns *sources.SettingError naming what to change (e.g. END).
	Finite func(w *Workload) error
}

// Sources is the list of known sources.
type Sources []SourceEntry

// Lookup returns the entry named name, or nil.
func (s Sources) Lookup(name string) *SourceEntry {
	for i := range s {
		if slices.Contains(s[i].Names, name) {
			return &s[i]
		}
	}
	return nil
}

// Names lists every source name, in registration order.
func (s Sources) Names() []string {
	var out []string
	for _, e := range s {
		out = append(out, e.Names...)
	}
	return out
}

// Plugins is the composition root's list of sources and sinks.
type Plugins struct {
	Sources Sources
	Sinks   *sinks.Registry
	// Builtin is the target used when a workload sets none, per kind. It
	// must be in-process: nothing is sent to a host the user did not name.
	Builtin map[sources.Kind]string
}
