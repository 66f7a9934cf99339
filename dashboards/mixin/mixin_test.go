package mixin

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed dashboards, rule file and Kubernetes objects are what the
// Go builds: edit the Go, then go generate ./dashboards.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	t.Parallel()
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./dashboards)", path, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./dashboards and commit the result", path)
		}
	}
}

// Files is deterministic: two builds give the same bytes (map order must
// not leak into the JSON or YAML).
func TestFilesAreDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := Files()
		if err != nil {
			t.Fatal(err)
		}
		for p := range a {
			if !bytes.Equal(a[p], b[p]) {
				t.Fatalf("%s differs between two builds", p)
			}
		}
	}
}
