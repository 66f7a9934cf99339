package sources

import "slices"

// Common is what a source reads of its workload beyond its own settings:
// the workload settings every source shares, handed over by the engine so
// that sources never depend on it.
type Common struct {
	// Workload is the workload's name (W in SOAKD_<W>_*).
	Workload string
	// Source is the source's name as configured: one entry may serve
	// several (devops, iot, massive, ...).
	Source string
	// Seed is SEED: the same seed gives the same data.
	Seed uint64
	// Shard is SHARD, this process's slice of the data set.
	Shard Shard
	// Builtin is true when TARGET is not set: the workload writes to the
	// built-in target, inside this process.
	Builtin bool
}

// Settings is one workload's settings of its source: made fresh for each
// workload by the source's Entry, parsed by the engine from the
// workload's variables, then used to check and build the source. The
// engine holds it without knowing the source's settings type.
type Settings interface {
	// Fields is a pointer to the source's settings struct (env, envDefault
	// and help tags, names without the SOAKD_<W>_ prefix): the engine
	// parses it from the environment, lists it (soakd config, --help) and
	// records its values in the summary.
	Fields() any
	// Validate checks the settings without I/O; errors should be
	// *SettingError so they name the variable.
	Validate(w Common) error
	// New builds the source. It must be cheap and do no I/O.
	New(w Common) (Source, error)
	// Finite checks, without I/O, that the settings make a finite data
	// set, whose source New returns as a Sized; otherwise it returns a
	// *SettingError naming what to change (e.g. END). It is nil for a
	// source whose Entry has no File.
	Finite() error
}

// Entry registers a source under one or more names. Entries are made by
// Register, which ties them to the source's own settings type.
type Entry struct {
	Names []string
	Kind  Kind
	// BuiltinDefaults are source settings (names without the SOAKD_<W>_
	// prefix) that a workload writing to the built-in target gets unless
	// it sets them, e.g. a record count the in-process target holds in
	// little memory.
	BuiltinDefaults map[string]string
	// File, when set, says how soakd generate writes the source's data set
	// to a file; nil for a source that has no finite set of rows (kv).
	File *File

	settings func() Settings
}

// File is what soakd generate needs to know about a source beyond its
// run settings. Generate reads those settings as a workload named gen
// (SOAKD_GEN_SCALE, --scale), checks them with Settings.Finite and builds
// the source with Settings.New.
type File struct {
	// Defaults replace the run defaults of some settings (names without
	// the prefix, e.g. START) in a data file: a fixed start, say, so the
	// same flags give the same file on any day.
	Defaults map[string]string
}

// NewSettings returns fresh settings of the source, unparsed (zero
// values: the engine applies the defaults as it parses them).
func (e *Entry) NewSettings() Settings { return e.settings() }

// Spec describes a source whose settings are the struct C (env-tagged,
// as the daemon's own): Register turns it into an Entry.
type Spec[C any] struct {
	Names []string
	Kind  Kind
	// New builds the source from its settings c and the workload's common
	// ones. It must be cheap and do no I/O.
	New func(c *C, w Common) (Source, error)
	// Validate checks c without I/O (optional); errors should be
	// *SettingError so they name the variable.
	Validate func(c *C, w Common) error
	// BuiltinDefaults: see Entry.BuiltinDefaults.
	BuiltinDefaults map[string]string
	// Finite, when set, makes the source one soakd generate writes to a
	// file: it checks without I/O that c makes a finite data set (see
	// Settings.Finite). FileDefaults are then the data file's defaults
	// (see File.Defaults).
	Finite       func(c *C) error
	FileDefaults map[string]string
}

// Register returns the Entry of the source s describes. It panics on an
// incomplete spec: that is a programming error in the one list of
// sources.
func Register[C any](s Spec[C]) Entry {
	if s.New == nil || len(s.Names) == 0 {
		panic("BUG: sources.Register: spec without New or Names")
	}
	if s.Finite == nil && s.FileDefaults != nil {
		panic("BUG: sources.Register: FileDefaults without Finite for " + s.Names[0])
	}
	e := Entry{
		Names:           s.Names,
		Kind:            s.Kind,
		BuiltinDefaults: s.BuiltinDefaults,
		settings:        func() Settings { return &typed[C]{c: new(C), spec: &s} },
	}
	if s.Finite != nil {
		e.File = &File{Defaults: s.FileDefaults}
	}
	return e
}

// typed is the Settings of a source registered with Spec[C].
type typed[C any] struct {
	c    *C
	spec *Spec[C]
}

func (t *typed[C]) Fields() any { return t.c }

func (t *typed[C]) Validate(w Common) error {
	if t.spec.Validate == nil {
		return nil
	}
	return t.spec.Validate(t.c, w)
}

func (t *typed[C]) New(w Common) (Source, error) { return t.spec.New(t.c, w) }

func (t *typed[C]) Finite() error {
	if t.spec.Finite == nil {
		return nil
	}
	return t.spec.Finite(t.c)
}

// Registry maps names to sources. It is filled once at startup and read
// concurrently afterwards.
type Registry struct {
	entries []*Entry
	byName  map[string]*Entry
}

// NewRegistry returns a registry holding entries (see Add).
func NewRegistry(entries ...Entry) *Registry {
	r := &Registry{byName: map[string]*Entry{}}
	for _, e := range entries {
		r.Add(e)
	}
	return r
}

// Add registers e (made by Register). It panics on a duplicate name or an
// entry Register did not make: that is a programming error in the one
// list of sources.
func (r *Registry) Add(e Entry) {
	if e.settings == nil || len(e.Names) == 0 {
		panic("BUG: sources.Registry.Add: entry not made by sources.Register")
	}
	for _, n := range e.Names {
		if _, dup := r.byName[n]; dup {
			panic("BUG: sources.Registry.Add: duplicate source " + n)
		}
		r.byName[n] = &e
	}
	r.entries = append(r.entries, &e)
}

// Lookup returns the entry named name, or nil.
func (r *Registry) Lookup(name string) *Entry {
	if r == nil {
		return nil
	}
	return r.byName[name]
}

// Names lists every source name, in registration order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, e := range r.entries {
		out = append(out, e.Names...)
	}
	return out
}

// Entries lists the entries, in registration order.
func (r *Registry) Entries() []*Entry {
	if r == nil {
		return nil
	}
	return slices.Clip(r.entries)
}
