package sources

import (
	"errors"
	"slices"
	"testing"
)

type fakeSettings struct {
	Rows int `env:"ROWS" envDefault:"10"`
}

type fakeSource struct{ name string }

func (f fakeSource) Name() string                         { return f.name }
func (fakeSource) Kind() Kind                             { return Series }
func (fakeSource) Schemas() []*Schema                     { return nil }
func (fakeSource) Stream(part, parts int) (Stream, error) { return nil, errors.New("no stream") }

// A registered source gets its own settings type: each workload a fresh
// value, handed to Validate, New and Finite with the workload's common
// settings, and looked up by any of its names.
func TestRegistry(t *testing.T) {
	t.Parallel()
	var got Common
	r := NewRegistry(Register(Spec[fakeSettings]{
		Names: []string{"a", "b"}, Kind: Series,
		Validate: func(c *fakeSettings, w Common) error {
			if c.Rows < 1 {
				return Invalid("ROWS", "%d: want 1 or more", c.Rows)
			}
			return nil
		},
		New: func(c *fakeSettings, w Common) (Source, error) {
			got = w
			return fakeSource{w.Source}, nil
		},
		Finite:       func(c *fakeSettings) error { return nil },
		FileDefaults: map[string]string{"ROWS": "5"},
	}))
	r.Add(Register(Spec[struct{}]{Names: []string{"c"}, Kind: KV,
		New: func(*struct{}, Common) (Source, error) { return fakeSource{"c"}, nil }}))

	if names := r.Names(); !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("Names %v, want a b c", names)
	}
	if len(r.Entries()) != 2 {
		t.Errorf("%d entries, want 2", len(r.Entries()))
	}
	if r.Lookup("b") != r.Lookup("a") || r.Lookup("a") == nil || r.Lookup("x") != nil || r.Lookup("") != nil {
		t.Errorf("Lookup: a %p, b %p, x %p", r.Lookup("a"), r.Lookup("b"), r.Lookup("x"))
	}
	e := r.Lookup("b")
	if e.File == nil || e.File.Defaults["ROWS"] != "5" {
		t.Errorf("File %+v, want the file defaults", e.File)
	}
	if r.Lookup("c").File != nil {
		t.Error("a source without Finite has a File")
	}

	s1, s2 := e.NewSettings(), e.NewSettings()
	if s1.Fields() == s2.Fields() {
		t.Error("two workloads share one settings value")
	}
	f := s1.Fields().(*fakeSettings)
	var se *SettingError
	if err := s1.Validate(Common{}); !errors.As(err, &se) || se.Setting != "ROWS" {
		t.Errorf("Validate of zero rows: %v, want ROWS", err)
	}
	f.Rows = 3
	if err := s1.Validate(Common{}); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := s1.Finite(); err != nil {
		t.Errorf("Finite: %v", err)
	}
	w := Common{Workload: "w", Source: "b", Seed: 7, Shard: Shard{1, 2}, Builtin: true}
	src, err := s1.New(w)
	if err != nil || src.Name() != "b" || got != w {
		t.Errorf("New: %v, %v, common %+v, want %+v", src, err, got, w)
	}
	if err := r.Lookup("c").NewSettings().Validate(Common{}); err != nil {
		t.Errorf("Validate without a check: %v", err)
	}

	var none *Registry
	if none.Lookup("a") != nil || none.Names() != nil || none.Entries() != nil {
		t.Error("a nil registry knows a source")
	}
}

// Registering a name twice, or an entry Register did not make, is a bug
// in the one list of sources.
func TestRegistryRefusesBadEntries(t *testing.T) {
	t.Parallel()
	newFake := func(*fakeSettings, Common) (Source, error) { return fakeSource{}, nil }
	for name, add := range map[string]func(){
		"duplicate": func() {
			NewRegistry(Register(Spec[fakeSettings]{Names: []string{"a"}, New: newFake}),
				Register(Spec[fakeSettings]{Names: []string{"b", "a"}, New: newFake}))
		},
		"not registered": func() { NewRegistry(Entry{Names: []string{"a"}}) },
		"no New":         func() { Register(Spec[fakeSettings]{Names: []string{"a"}}) },
		"no name":        func() { Register(Spec[fakeSettings]{New: newFake}) },
		"defaults only": func() {
			Register(Spec[fakeSettings]{Names: []string{"a"}, New: newFake, FileDefaults: map[string]string{"ROWS": "1"}})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			add()
		}()
	}
}
